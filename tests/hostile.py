"""What the safety tests share: the unprivileged user, its directories, and a held lock."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.infra.lock import machine_lock

NOBODY = 65534


SYSTEM_PYTHON = "/usr/bin/python3"  # our interpreter may live under /root, out of nobody's reach


SECRETS = {"endpoint": "http://127.0.0.1:9", "bucket": "b", "access_key": "AKIAEXAMPLEKEY",
           "secret_key": "s3cr3t-value", "meta_url": "redis://127.0.0.1/1",
           "meta_password": "meta-pw-value", "region": "us-east-1", "account": "acct",
           "account_key": "YWNjb3VudC1rZXktdmFsdWU="}


def as_nobody(code: str) -> str:
    """Run Python code as user nobody; returns what it printed."""
    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    out = subprocess.run([SYSTEM_PYTHON, "-c", code], capture_output=True, text=True,
                         user=NOBODY, group=NOBODY, extra_groups=[], timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


def plant(folder, files=("notes.txt", "sub/data.bin")) -> dict[str, bytes]:
    """Files of someone else's in a directory; returns their contents to compare later."""
    made = {}
    for name in files:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(64) + name.encode())
        made[name] = path.read_bytes()
    return made


def unchanged(folder, made: dict[str, bytes]) -> bool:
    return all((folder / n).is_file() and (folder / n).read_bytes() == b for n, b in made.items())


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def ends_within(seconds: float, pytester, *args: str):
    """Run pytest in a subprocess; it must end (not hang in the kernel) within `seconds`."""
    t0 = time.monotonic()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=2 * seconds)
    assert time.monotonic() - t0 < seconds
    return result


def refused_in_one_line(pytester, folder: str, name: str, doc: str, flag: str, says: str) -> None:
    """A file of the wrong shape where the plugin reads saved data: a usage error naming the
    flag and the file, no traceback."""
    where = pytester.path / ".fsperf" / folder
    where.mkdir(parents=True)
    (where / f"{name}.json").write_text(doc)
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider", f"{flag}={name}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{flag}={name} (command line): {says}"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def hold_lock(path: Path, user: int | None) -> subprocess.Popen[str]:
    code = (f"import fcntl, os, sys, time\nfd = os.open({str(path)!r}, os.O_RDONLY)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(60)\n")
    kw = {"user": user, "group": user, "extra_groups": []} if user is not None else {}
    holder = subprocess.Popen([SYSTEM_PYTHON, "-c", code], stdout=subprocess.PIPE, text=True,
                              cwd="/", **kw)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


def fails_at_once(path: Path, match: str) -> None:
    """Taking the lock at `path` fails within 5 s (not after its 600 s timeout), saying `match`."""
    began = time.monotonic()
    with pytest.raises(MeasurementError, match=match), machine_lock(str(path), timeout=600):
        pass
    assert time.monotonic() - began < 5


NOBODYS_HTTP = r'''
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        print("AUTH" if self.headers.get("Authorization") else "ASKED", self.command, self.path,
              flush=True)
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    do_GET = do_PUT = do_POST = do_HEAD = answer
    def log_message(self, *a):
        pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
'''


@contextlib.contextmanager
def nobodys_http() -> Iterator[tuple[int, list[str]]]:
    """An HTTP server of nobody's on a loopback port, answering 200 to anything: (its port, the
    requests it got, filled when the block ends: "AUTH ..." for a signed one)."""
    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    proc = subprocess.Popen([SYSTEM_PYTHON, "-c", NOBODYS_HTTP], stdout=subprocess.PIPE,
                            text=True, cwd="/", user=NOBODY, group=NOBODY, extra_groups=[])
    got: list[str] = []
    try:
        assert proc.stdout is not None
        yield int(proc.stdout.readline()), got
    finally:
        proc.kill()  # the test's own server, by its handle
        out, _ = proc.communicate()
        got += out.splitlines()
