"""The small-file engine's compiled worker (native/files.c): built once per source with the
machine's C compiler into a private cache directory, run as a child process. Python threads
share one interpreter lock and spend about three times the compiled program's CPU per file;
the worker spends what the seed's Go program does, so the figure is the filesystem's.

Where no compiler is found (or root may not run it), the Python engine runs instead and the
result says so (OpStats.generator)."""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from importlib import resources

from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.infra import leftovers

NAME = "fsperf-files"
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "pytest-fsperf", "native")
HEAD = struct.Struct("<qqq")  # seconds_ns, bytes, files
PER_FILE = struct.Struct("<qqqq")  # open, first byte, whole transfer, close: ns


def source() -> bytes:
    return resources.files("pytest_fsperf.engine").joinpath("native/files.c").read_bytes()


@functools.lru_cache(maxsize=1)
def worker() -> tuple[str | None, str]:
    """The worker's path, built if need be, or None and why not (once per process)."""
    if os.environ.get("FSPERF_NATIVE", "1") == "0":
        return None, "the compiled worker is off (FSPERF_NATIVE=0)"
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None, "no C compiler (cc) to build the compiled worker"
    why = leftovers.untrusted(compiler)
    if why:
        return None, f"the C compiler is not run as root: {why}"
    text = source()
    path = os.path.join(CACHE, f"{NAME}-{hashlib.sha256(text).hexdigest()[:16]}")
    try:
        os.makedirs(CACHE, 0o700, exist_ok=True)
        why = leftovers.untrusted(CACHE)
        if why:
            return None, f"the worker's cache is not private: {why}"
        if not os.path.exists(path):
            _build(compiler, text, path)
        why = leftovers.untrusted(path)
        if why:
            return None, f"the worker is not run: {why}"
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"the compiled worker could not be built: {exc}"
    return path, ""


def _build(compiler: str, text: bytes, path: str) -> None:
    """Compile into a temporary name beside `path`, then rename: a reader sees all or nothing."""
    with tempfile.TemporaryDirectory(dir=CACHE) as work:
        src, out = os.path.join(work, "files.c"), os.path.join(work, NAME)
        with open(src, "wb") as f:
            f.write(text)
        done = subprocess.run([compiler, "-O2", "-pthread", "-o", out, src], capture_output=True,
                              text=True, timeout=120, check=False, cwd=work)
        if done.returncode != 0:
            raise OSError(f"{compiler} failed: {done.stderr.strip()[-300:]}")
        os.chmod(out, 0o700)
        os.replace(out, path)


def run(files: Sequence[tuple[str, int]], write: bool, threads: int, first: int,
        started: Callable[[int], None] = lambda pid: None,
        ) -> tuple[float, int, list[tuple[int, int, int, int]]]:
    """Each (path, size) read or written whole by the worker: seconds, bytes, and per file
    the ns of its open, first byte, whole transfer and close. `started` is told its pid."""
    path, why = worker()
    if path is None:
        raise MeasurementError(why)
    listed = b"".join(b"%d\0%s\0" % (size, os.fsencode(p)) for p, size in files)
    proc = subprocess.Popen([path, "write" if write else "read", str(threads), str(first)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            close_fds=True, cwd="/")
    started(proc.pid)
    try:
        out, err = proc.communicate(listed)
    finally:
        if proc.poll() is None:  # interrupted: never leave it running
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        said = err.decode(errors="replace").strip().splitlines()
        raise MeasurementError(f"small-file {'write' if write else 'read'} failed: "
                               f"{said[-1] if said else f'exit status {proc.returncode}'}")
    if len(out) != HEAD.size + len(files) * PER_FILE.size:
        raise MeasurementError(f"the small-file worker's report is {len(out)} bytes, not the "
                               f"{HEAD.size + len(files) * PER_FILE.size} of {len(files)} files")
    seconds_ns, moved, _count = HEAD.unpack_from(out)
    times = list(PER_FILE.iter_unpack(out[HEAD.size:]))
    return seconds_ns / 1e9, moved, times
