"""The small-file engine against the seed's own compiled program (document 001's `rw-bench`).

    python3 -m benchmarks.smallfile_engine [--count 20000] [--size-kb 128] [--threads 2,128]
        [--alternations 3] [--places tmpfs,bindfs] [--go PATH]

On a private tmpfs of its own and through bindfs over it, for writes then reads, at each
thread count: the engine (as the plugin runs it: the compiled worker where it can be built)
and the Go program alternate (engine first, then Go first, ...); each prints MB/s = bytes /
1e6 / seconds, as the seed does. Prints each side's median with its range and the median of
the per-alternation ratios engine / Go; before each bindfs read the page cache is dropped (as
root), so both read cold through FUSE; tmpfs reads are from memory for both, after one
untimed read by each (the first read of pages just written is slower, whoever reads first). The engine's
figure is the one the plugin reports: its clock starts once its threads wait at a barrier and
does not count starting the worker or handing it the list; the Go program's starts before its
goroutines exist and after its directory walk. Needs root (mounts) and the Go program: --go,
or $FSPERF_RW_BENCH, or `rw-bench` on PATH, or ../shared/tools/device/rw-bench.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_fsperf.engine import native
from pytest_fsperf.engine.files import file_names, list_files, run_files, sized

HERE = Path(__file__).resolve().parent


def go_program(given: str | None) -> str:
    for candidate in (given, os.environ.get("FSPERF_RW_BENCH"), shutil.which("rw-bench"),
                      str(HERE.parent.parent / "shared" / "tools" / "device" / "rw-bench")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    sys.exit("no rw-bench (the seed's Go program): give --go PATH")


def drop_caches() -> None:
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def engine(directory: str, write: bool, count: int, size: int, threads: int) -> float:
    files = ([(p, size) for p in file_names(directory, count)] if write
             else sized(list_files(directory)))
    stats = run_files(files, write=write, threads=threads)
    return stats.io_bytes / 1e6 / stats.seconds


def go(binary: str, directory: str, write: bool, count: int, size_kb: int, threads: int) -> float:
    args = [binary, "-dir", directory, "-threads", str(threads)]
    if write:
        args += ["-write", "-file-count", str(count), "-file-size-KB", str(size_kb)]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    found = re.search(r"throughput: ([\d.]+) MBytes/s", out)
    if not found:
        sys.exit(f"rw-bench said: {out.strip()[-300:]}")
    return float(found.group(1))


def mounted(kind: str, base: str, size_mb: int) -> tuple[str, list[list[str]]]:
    """A tmpfs of its own, or bindfs over one; the directory to use and how to undo it."""
    tmpfs = os.path.join(base, "tmpfs")
    os.mkdir(tmpfs)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0700", "tmpfs", tmpfs],
                   check=True)
    undo = [["umount", tmpfs]]
    if kind == "tmpfs":
        return tmpfs, undo
    point = os.path.join(base, "bindfs")
    os.mkdir(point)
    subprocess.run(["bindfs", tmpfs, point], check=True)
    return point, [["fusermount3", "-u", point], *undo]


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):8.0f} ({min(values):.0f}-{max(values):.0f})"


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout still unmounts
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--size-kb", type=int, default=128)
    ap.add_argument("--threads", default=f"2,{os.cpu_count() or 1},128")
    ap.add_argument("--alternations", type=int, default=3)
    ap.add_argument("--places", default="tmpfs,bindfs")
    ap.add_argument("--go")
    a = ap.parse_args()
    binary = go_program(a.go)
    path, why = native.worker()
    print(f"engine: {'the compiled worker' if path else 'Python threads: ' + why}; "
          f"Go: {binary}; {a.count} x {a.size_kb} KiB; {os.cpu_count()} CPUs", flush=True)
    threads = sorted({int(t) for t in a.threads.split(",")})
    size = a.size_kb * 1024
    print(f"{'place':7} {'op':5} {'threads':>7}  {'engine MB/s (range)':>22}  "
          f"{'Go MB/s (range)':>22}  engine/Go (range)")
    for place in a.places.split(","):
        base = tempfile.mkdtemp(prefix="fsperf-bench-")
        directory, undo = mounted(place, base, int(a.count * size * 1.3 / 1e6) + 64)
        try:
            for t in threads:
                for write in (True, False):
                    mine, theirs, ratios = [], [], []
                    if not write and place == "tmpfs":  # each page read once before either is timed
                        engine(directory, write, a.count, size, t)
                        go(binary, directory, write, a.count, a.size_kb, t)
                    for i in range(a.alternations):
                        sides = []
                        for side in (("engine", "go") if i % 2 == 0 else ("go", "engine")):
                            if not write and place != "tmpfs":
                                drop_caches()
                            t0 = time.monotonic()
                            value = (engine(directory, write, a.count, size, t) if side == "engine"
                                     else go(binary, directory, write, a.count, a.size_kb, t))
                            sides.append((side, value, time.monotonic() - t0))
                        e = next(v for s, v, _w in sides if s == "engine")
                        g = next(v for s, v, _w in sides if s == "go")
                        mine.append(e)
                        theirs.append(g)
                        ratios.append(e / g)
                    print(f"{place:7} {'write' if write else 'read':5} {t:7}  {spread(mine):>22}  "
                          f"{spread(theirs):>22}  {statistics.median(ratios):.2f} "
                          f"({min(ratios):.2f}-{max(ratios):.2f})", flush=True)
        finally:
            for cmd in undo:
                subprocess.run(cmd, check=False)
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
