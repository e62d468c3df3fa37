"""The small-file engine's compiled worker (native/files.c): built once per source with the
machine's C compiler into a private cache directory, run as a child process. Python threads
share one interpreter lock and spend about three times the compiled program's CPU per file;
the worker spends what the seed's Go program does, so the figure is the filesystem's.

Where no compiler is found (or root may not run it), the Python engine runs instead and the
result says so (OpStats.generator). The compiler is the system's (/usr/bin), run with the
system's PATH only; the worker is found by its real path, checked once, and run from an fd
whose owner, mode and content hash are checked at each run."""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import struct
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources

from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.infra import buildcache, trust

NAME = "fsperf-files"
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "pytest-fsperf", "native")
HEAD = struct.Struct("<qqq")  # seconds_ns, bytes, files
# open, first byte, whole transfer, close: ns; the errno of what failed and which (1 open,
# 2 the reads or writes, 3 close)
PER_FILE = struct.Struct("<qqqqii")
STAGES = {1: "open", 2: "", 3: "close"}  # 2: "read" or "write"


def source() -> bytes:
    return resources.files("pytest_fsperf.engine").joinpath("native/files.c").read_bytes()


COMPILERS = ("/usr/bin/cc", "/usr/bin/gcc")  # fixed system paths, never PATH's
# what the compiler and the tools it starts (as, ld) see: system directories only; no
# GCC_EXEC_PREFIX, COMPILER_PATH, CPATH or LIBRARY_PATH of the caller's
BUILD_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}


@dataclass(frozen=True)
class Worker:
    path: str  # the real path checked (no symlink on the way, no directory others can change)
    sha256: str  # its content when built: checked again, through the fd it runs from


@functools.lru_cache(maxsize=1)
def worker() -> tuple[Worker | None, str]:
    """The worker, built if need be, or None and why not (once per process)."""
    if os.environ.get("FSPERF_NATIVE", "1") == "0":
        return None, "the compiled worker is off (FSPERF_NATIVE=0)"
    compiler = next((c for c in COMPILERS if os.access(c, os.X_OK)), None)
    if compiler is None:
        return None, f"no C compiler ({' or '.join(COMPILERS)}) to build the compiled worker"
    compiler, why = trust.resolved(compiler)  # the real compiler, checked, is what runs
    if why:
        return None, f"the C compiler is not run as root: {why}"
    text = source()
    try:
        path, why = buildcache.built(
            CACHE, f"{NAME}-{hashlib.sha256(text).hexdigest()[:16]}",
            lambda cache, path: _build(compiler, text, cache, path), "the worker")
        if path is None:
            return None, why
        with open(path, "rb") as f:
            return Worker(path, hashlib.sha256(f.read()).hexdigest()), ""
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"the compiled worker could not be built: {exc}"


def _build(compiler: str, text: bytes, cache: str, path: str) -> None:
    """Compile into a temporary name beside `path`, then rename: a reader sees all or nothing."""
    with tempfile.TemporaryDirectory(dir=cache) as work:
        src, out = os.path.join(work, "files.c"), os.path.join(work, NAME)
        with open(src, "wb") as f:
            f.write(text)
        done = subprocess.run([compiler, "-O2", "-pthread", "-o", out, src], capture_output=True,
                              text=True, timeout=120, check=False, cwd=work, env=BUILD_ENV)
        if done.returncode != 0:
            raise OSError(f"{compiler} failed: {done.stderr.strip()[-300:]}")
        os.chmod(out, 0o700)
        os.replace(out, path)


def opened(w: Worker) -> int:
    """An fd of the worker's file, checked as it will run: a regular file of ours, mode 0700
    or stricter, and the bytes it had when built (the path is not looked up again)."""
    fd = os.open(w.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise MeasurementError(f"the compiled worker {w.path} changed owner or mode: not run")
        h = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        if h.hexdigest() != w.sha256:
            raise MeasurementError(f"the compiled worker {w.path} changed since it was built: not run")
        return fd
    except BaseException:
        os.close(fd)
        raise


def run(files: Sequence[tuple[str, int]], pattern: bytes | None, threads: int, first: int,
        started: Callable[[int], None] = lambda pid: None,
        ) -> tuple[float, int, list[tuple[int, int, int, int]], list[tuple[str, int, str]]]:
    """Each (path, size) read, or written from `pattern` (1 MiB), whole by the worker:
    seconds, bytes, per file done whole the ns of its open, first byte, whole transfer and
    close, and per file that failed (operation, errno, what was said), the first said whole.
    `started` is told its pid."""
    found, why = worker()
    if found is None:
        raise MeasurementError(why)
    write = pattern is not None
    listed = (pattern or b"") + b"".join(b"%d\0%s\0" % (size, os.fsencode(p)) for p, size in files)
    fd = opened(found)
    try:  # run from the fd checked, not from the path again
        proc = subprocess.Popen([NAME, "write" if write else "read", str(threads), str(first)],
                                executable=f"/proc/self/fd/{fd}", pass_fds=(fd,),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, close_fds=True, cwd="/",
                                env=BUILD_ENV)  # nothing of the caller's for its loader
    finally:
        os.close(fd)
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
    times: list[tuple[int, int, int, int]] = []
    failed: list[tuple[str, int, str]] = []
    said = err.decode(errors="replace").strip().splitlines()
    for (path, _size), (t0, t1, t2, t3, number, stage) in zip(
            files, PER_FILE.iter_unpack(out[HEAD.size:]), strict=True):
        if not number:
            times.append((t0, t1, t2, t3))
            continue
        operation = STAGES.get(stage) or ("write" if write else "read")
        text = said[-1] if not failed and said else f"{path}: {os.strerror(number)}"
        failed.append((operation, number, text))
    return seconds_ns / 1e9, moved, times, failed
