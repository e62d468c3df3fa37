"""The live progress line: on a terminal only, erased when the workload ends."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import subprocess
import sys
import termios

import pytest

from pytest_fsperf.measure.progress import tree_io
from tests.conftest import need

TEST = """
def test_long(fsperf):
    fsperf.fio(name="long", rw="write", bs="1M", size="64M", direct=1, time_based=1, runtime="5s")
"""


def run_on_a_terminal(cwd, *args: str) -> str:
    leader, follower = pty.openpty()
    def controlling_terminal() -> None:  # as a shell gives it: a session with this pty
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                            cwd=cwd, stdin=follower, stdout=follower, stderr=follower, close_fds=True,
                            preexec_fn=controlling_terminal)
    os.close(follower)
    out = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=60)
    os.close(leader)
    return out.decode(errors="replace")


def screen(out: str) -> list[str]:
    """What a terminal shows after `out`: text, CR, LF, erase line, cursor up and forward;
    colour codes are dropped."""
    rows: list[list[str]] = [[]]
    row = col = 0
    for token in re.findall(r"\x1b\[[0-9;]*[A-Za-z]|\r|\n|[^\x1b\r\n]", out):
        if token == "\r":
            col = 0
        elif token == "\n":
            row, col = row + 1, 0
            while len(rows) <= row:
                rows.append([])
        elif token.startswith("\x1b["):
            n = int(token[2:-1] or 1) if token[-1] in "AC" else 0
            if token.endswith("2K"):
                rows[row] = []
            elif token[-1] == "A":
                row = max(0, row - n)
            elif token[-1] == "C":
                col += n
        else:
            line = rows[row]
            line.extend(" " * (col - len(line)))
            if col < len(line):
                line[col] = token
            else:
                line.append(token)
            col += 1
    return ["".join(r).rstrip() for r in rows]


@pytest.mark.parametrize("verbosity", [[], ["-q"], ["-v"]])
def test_live_line_on_a_terminal_is_erased(pytester, verbosity):
    need("fio")
    pytester.makepyfile(TEST)
    out = run_on_a_terminal(pytester.path, *verbosity)
    assert "  fsperf long: " in out and " MB/s" in out
    assert re.search(r"fsperf long: \d+ s, [1-9][\d,]* MB, ", out)  # fio's bytes are counted
    shown = screen(out)
    assert not any("fsperf long:" in line for line in shown), shown
    name = "test_live_line_on_a_terminal_is_erased.py"
    if verbosity == ["-v"]:
        assert any(re.match(rf"{name}::test_long PASSED\s+\[100%\]$", ln) for ln in shown), shown
    elif verbosity == ["-q"]:
        assert any(re.match(r"\.\s+\[100%\]$", ln) for ln in shown), shown
    else:
        assert any(re.match(rf"{name} \.\s+\[100%\]$", ln) for ln in shown), shown
    assert any(re.search(r"1 passed in", ln) for ln in shown)


def test_no_live_line_when_not_a_terminal(pytester):
    need("fio")
    pytester.makepyfile(TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=1)
    assert "fsperf long:" not in result.stdout.str() + result.stderr.str()


@pytest.mark.fio
def test_tree_io_counts_children_in_other_sessions():
    code = ("import os, sys, time\nif os.fork() == 0:\n    os.setsid()\n"
            "    os.write(1, b'x' * 3000000)\n    time.sleep(3)\n    os._exit(0)\ntime.sleep(3)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL)
    import time

    time.sleep(1.0)
    try:
        assert tree_io(proc.pid) >= 3000000
    finally:
        proc.wait()


@pytest.mark.fio
def test_a_reaped_child_is_not_counted_twice():
    """The kernel adds a reaped child's bytes to its parent: fio's main process jumps by the
    whole run when it reaps its job process. TreeIo counts the job's bytes once."""
    import time

    from pytest_fsperf.measure.progress import TreeIo

    code = ("import os, time\npid = os.fork()\nif pid == 0:\n"
            "    f = open('/dev/zero', 'rb')\n    [f.read(1 << 20) for _ in range(50)]\n"
            "    time.sleep(1)\n    os._exit(0)\ntime.sleep(2)\nos.waitpid(pid, 0)\ntime.sleep(1.5)\n")
    proc = subprocess.Popen([sys.executable, "-c", code])
    counter = TreeIo(lambda: proc.pid, refresh=0.0)
    try:
        time.sleep(0.7)
        during = counter()
        time.sleep(2.3)  # reaped by now
        after = counter()
    finally:
        proc.wait()
    assert 50 << 20 <= during < 52 << 20
    assert after < 52 << 20, after  # not 100 MiB
