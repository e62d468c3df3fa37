"""sysbench fileio, as document 002 runs it: 128 files, 16 KiB blocks, 2 threads, no fsync.

`prepare` lays the files out (unmeasured); `run` is measured. Latency percentiles come
from sysbench's own histogram (--histogram=on); the mean from its latency sum / events.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable

from pytest_fsperf.errors import MeasurementError, WorkloadHung
from pytest_fsperf.infra import leftovers, trust
from pytest_fsperf.infra.procs import Proc, kill_tree
from pytest_fsperf.result.parts import LatencyStats, OpStats

MODES = ("seqwr", "seqrd", "rndrw", "rndrd", "rndwr", "seqrewr")
_HIST = re.compile(r"^\s*([\d.]+)\s+\|\**\s+(\d+)\s*$")


def binary() -> str | None:
    """sysbench as root may run it (its real path checked), or None."""
    return trust.which("sysbench")[0]


def version() -> str:
    b = binary()
    if b is None:
        return ""
    out = subprocess.run([b, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip()


def args(mode: str, files: int, block: int, total: int, threads: int, seconds: float) -> list[str]:
    return [binary() or "sysbench", "fileio", f"--file-num={files}", f"--file-block-size={block}",
            f"--file-total-size={total}", f"--file-test-mode={mode}", "--file-fsync-freq=0",
            f"--threads={threads}", f"--time={max(1, round(seconds))}", "--histogram=on"]


def _stop(proc: subprocess.Popen[str], started: Proc | None) -> None:
    if started is not None:
        kill_tree(started)
    else:  # gone before its start time was read: our unreaped child, nothing else has its PID
        proc.kill()


def _run(argv: list[str], cwd: str, timeout: float | None,
         on_hang: Callable[[], str] | None) -> str:
    with subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          stdin=subprocess.DEVNULL, start_new_session=True) as proc:
        started = Proc.of(proc.pid)
        entry = leftovers.note_process(started)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            told = on_hang() if on_hang else ": the filesystem stopped answering"
            _stop(proc, started)
            raise WorkloadHung(f"sysbench did not finish within {timeout:g} s{told}") from None
        except BaseException:
            _stop(proc, started)
            raise
        leftovers.done(entry)
    if proc.returncode != 0:
        last = " | ".join((stderr or stdout).strip().splitlines()[-3:])
        raise MeasurementError(f"sysbench failed (exit {proc.returncode}): {last}")
    return stdout


def prepare(cwd: str, base: list[str], timeout: float | None = None,
            on_hang: Callable[[], str] | None = None) -> None:
    _run([*base, "prepare"], cwd, timeout, on_hang)


def _figure(text: str, label: str) -> float:
    m = re.search(rf"^\s*{re.escape(label)}\s+([\d.]+)", text, re.MULTILINE)
    if m is None:
        raise MeasurementError(f"sysbench output has no {label!r}")
    return float(m.group(1))


def parse(text: str, mode: str, threads: int) -> OpStats:
    seconds = _figure(text, "total time:")
    events = int(_figure(text, "total number of events:"))
    mib = _figure(text, "read, MiB/s:") + _figure(text, "written, MiB/s:")
    matches = [_HIST.match(line) for line in text.splitlines()]
    hist = [(float(m.group(1)) * 1e6, int(m.group(2))) for m in matches if m]
    total = sum(n for _v, n in hist)

    def pick(q: float) -> float:
        seen = 0
        for value, n in hist:
            seen += n
            if seen >= q * total:
                return value
        return hist[-1][0] if hist else 0.0

    mean = _figure(text, "sum:") * 1e6 / events if events else 0.0
    phases = {"op": LatencyStats(mean_ns=mean, p50_ns=pick(0.5), p99_ns=pick(0.99),
                                 max_ns=_figure(text, "max:") * 1e6)}
    return OpStats(operation=f"sysbench {mode}", count=events, io_bytes=round(mib * 2**20 * seconds),
                   seconds=seconds, per_second=events / seconds if seconds else 0.0,
                   bw_bytes=mib * 2**20, threads=threads, phases=phases)


def run(cwd: str, base: list[str], mode: str, threads: int, timeout: float | None = None,
        on_hang: Callable[[], str] | None = None) -> OpStats:
    return parse(_run([*base, "run"], cwd, timeout, on_hang), mode, threads)
