"""What the plugin itself costs to drive and watch a load, against a standalone run of it.

    python3 -m benchmarks.plugin_cost [--files 10000] [--size-kb 128] [--threads N]
        [--entries 20000] [--shards 16] [--shard-mb 64] [--alternations 3] [--loads a,b] [--go PATH]

On bindfs over a private tmpfs (the fastest FUSE path: the most requests per second), each
load runs the plugin's way and a standalone compiled way, alternating (plugin first, then
standalone first, ...), after a drop of the page cache, dentries and inodes:

| load | the plugin's way | standalone |
|---|---|---|
| small-file write, read | the small-file engine (compiled worker) | the seed's Go program |
| metadata: ls -l, walk, stat | the metadata engine (Python's scandir/walk/stat) | GNU find, stat |
| checkpoint save | the checkpoint engine | fio: the same shards, 8 MiB calls, fsync on close |
| fio 4 KiB random reads | fio, the daemon meter and the FUSE trace | fio alone |

The plugin's run has the daemon meter (exact peak RSS, CPU) and, where the kernel has the
tracepoints, the FUSE trace on, as a measured window does. CPU is this process's and its
children's user+system time over the load (the engines' threads, the worker, the meter and
the trace's watcher; fio's processes) and, apart, reading the trace after it; the
standalone's is its processes'. Prints per load the median MB/s or ops/s of each way, CPU ms
per GB moved or per 1,000 operations, and per 1,000 FUSE requests (counted by the trace in
the plugin's run), and the plugin / standalone ratios of throughput and of CPU. Needs root,
bindfs, fio, GNU findutils and the Go program (as benchmarks.smallfile_engine).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.smallfile_engine import drop_caches, go, go_program, mounted
from pytest_fsperf.engine import checkpoint, meta, native
from pytest_fsperf.engine.files import file_names, list_files, run_files, sized
from pytest_fsperf.infra.mountinfo import find_mount, read_mounts
from pytest_fsperf.measure import fusetrace, meters
from pytest_fsperf.mounts.daemon import describe


@dataclass
class Took:
    seconds: float
    cpu: float  # s of user+system
    units: float  # bytes moved, or operations
    requests: int = 0  # FUSE requests traced (plugin's way only)
    after: float = 0.0  # s of CPU reading the trace after the window (plugin's way only)


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def standalone(work: Callable[[], float]) -> Took:
    """A load run by child processes: their CPU."""
    c0, t0 = _cpu(resource.RUSAGE_CHILDREN), time.monotonic()
    units = work()
    return Took(time.monotonic() - t0, _cpu(resource.RUSAGE_CHILDREN) - c0, units)


class Plugin:
    """The plugin's way: the daemon meter and the FUSE trace around the load, as a window has."""

    def __init__(self, point: str, daemon_pid: int) -> None:
        self.daemon = describe(daemon_pid, "bindfs").daemon
        m = find_mount(point, read_mounts())
        self.why = fusetrace.unavailable()
        self.conn = fusetrace.connection_id(m.major, m.minor) if m and not self.why else None

    def __call__(self, work: Callable[[], float]) -> Took:
        assert self.daemon is not None
        both = (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        with contextlib.ExitStack() as stack:
            trace = (stack.enter_context(fusetrace.traced(self.conn))
                     if self.conn is not None else None)
            c0 = sum(_cpu(w) for w in both)
            meter = meters.DaemonMeter(self.daemon)
            meter.start()
            if trace:
                trace.start()
            t0 = time.monotonic()
            units = work()
            t1 = time.monotonic()
            meter.stop("benchmark")
            c1 = sum(_cpu(w) for w in both)
            if trace:
                trace.stop()  # takes in what the kernel's buffers hold: after the window
            requests = trace.summary(t0, t1).total if trace else 0
            after = sum(_cpu(w) for w in both) - c1
            return Took(t1 - t0, c1 - c0, units, requests, after)


def run(binary: str, a: argparse.Namespace) -> None:
    base = tempfile.mkdtemp(prefix="fsperf-bench-")
    need = a.files * a.size_kb * 1024 + 2 * a.shards * a.shard_mb * 2**20 + 2**30  # both ways' shards
    point, undo = mounted("bindfs", base, int(need * 1.3 / 1e6))
    try:
        pid = next(p for p in _bindfs_pids() if point in _cmdline(p))
        plugin = Plugin(point, pid)
        if plugin.conn is None:
            print(f"no FUSE trace: {plugin.why}; requests not counted", flush=True)
        for name, ours, theirs, unit in loads(point, binary, a):
            if a.loads and not any(w in name for w in a.loads.split(",")):
                continue
            _compare(name, ours, theirs, unit, plugin, a.alternations)
    finally:
        for cmd in undo:
            subprocess.run(cmd, check=False)
        shutil.rmtree(base, ignore_errors=True)


def _bindfs_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and _comm(int(p)) == "bindfs"]


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def _cmdline(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().replace(b"\0", b" ").decode()


Load = tuple[str, Callable[[], float], Callable[[], float], str]


def loads(point: str, binary: str, a: argparse.Namespace) -> list[Load]:
    small, tree, ckpt = (os.path.join(point, d) for d in ("small", "tree", "ckpt"))
    for d in (small, ckpt):
        os.mkdir(d)
    size = a.size_kb * 1024
    meta.make_tree(tree, a.entries)
    paths = meta.tree_paths(tree, a.entries)
    listed = os.path.join(os.path.dirname(point), "paths")
    with open(listed, "wb") as f:
        f.write(b"\0".join(os.fsencode(p) for p in paths))
    big = os.path.join(point, "big")
    subprocess.run(["fio", "--name=lay", f"--filename={big}", "--rw=write", "--bs=1M",
                    "--size=1G", "--output-format=terse"], check=True, stdout=subprocess.DEVNULL)
    shard = a.shard_mb * 2**20

    def files(write: bool) -> float:
        chosen = [(p, size) for p in file_names(small, a.files)] if write else sized(list_files(small))
        return float(run_files(chosen, write=write, threads=a.threads).io_bytes)

    def rw_bench(write: bool) -> float:
        go(binary, small, write, a.files, a.size_kb, a.threads)
        return float(a.files * size)

    def quiet(cmd: list[str], units: float = 0.0, stdin: str | None = None) -> float:
        with open(stdin or os.devnull, "rb") as f:
            subprocess.run(cmd, check=True, stdin=f, stdout=subprocess.DEVNULL)
        return units

    def fio_ckpt() -> float:
        per = max(1, a.shards // a.threads)
        quiet(["fio", "--name=ckpt", f"--directory={ckpt}", "--rw=write", f"--bs={min(8, a.shard_mb)}M",
               f"--filesize={shard}", f"--nrfiles={per}", f"--numjobs={min(a.threads, a.shards)}",
               "--fsync_on_close=1", "--openfiles=1", "--create_on_open=1", "--fallocate=none",
               "--file_service_type=sequential", "--group_reporting", "--output-format=terse"])
        return float(per * min(a.threads, a.shards) * shard)

    rand = ["fio", "--name=rand", f"--filename={big}", "--rw=randread", "--bs=4k", "--direct=1",
            "--size=1G", "--ioengine=psync", f"--numjobs={min(a.threads, 16)}", "--time_based",
            "--runtime=5", "--group_reporting", "--output-format=json"]

    def fio_rand() -> float:
        out = subprocess.run(rand, check=True, capture_output=True, text=True).stdout
        job = json.loads(out[out.index("{"):])["jobs"][0]
        return float(job["read"]["io_bytes"])

    return [
        ("small-file write", lambda: files(True), lambda: rw_bench(True), "GB"),
        ("small-file read", lambda: files(False), lambda: rw_bench(False), "GB"),
        ("ls -l (list_stat)", lambda: float(meta.run_meta("list_stat", tree).count),
         lambda: quiet(["find", tree, "-mindepth", "1", "-maxdepth", "1", "-printf", "%s\n"],
                       a.entries), "ops"),
        ("walk", lambda: float(meta.run_meta("walk", tree).count),
         lambda: quiet(["find", tree], a.entries + 1), "ops"),
        ("stat of N paths", lambda: float(meta.run_meta("stat", tree, paths).count),
         lambda: quiet(["xargs", "-0", "stat", "--format=%s"], a.entries, listed), "ops"),
        ("checkpoint save", lambda: float(checkpoint.save(ckpt, a.shards, shard, a.threads).io_bytes),
         fio_ckpt, "GB"),
        ("fio 4k randread", fio_rand, fio_rand, "GB"),
    ]


def _compare(name: str, ours: Callable[[], float], theirs: Callable[[], float], unit: str,
             plugin: Plugin, alternations: int) -> None:
    mine: list[Took] = []
    other: list[Took] = []
    for i in range(alternations):
        for side in ((0, 1) if i % 2 == 0 else (1, 0)):
            drop_caches()
            if side == 0:
                mine.append(plugin(ours))
            else:
                other.append(standalone(theirs))
    scale = 1e9 if unit == "GB" else 1.0

    def rate(t: Took) -> float:
        return t.units / scale / t.seconds

    def per(t: Took) -> float:  # CPU ms per GB, or per 1,000 operations
        return 1e3 * t.cpu / (t.units / (1e9 if unit == "GB" else 1e3))

    speed = statistics.median(rate(m) / rate(o) for m, o in zip(mine, other, strict=True))
    cost = statistics.median(per(m) / per(o) for m, o in zip(mine, other, strict=True))
    requests = statistics.median(m.requests for m in mine)
    per_req = (f"{1e3 * statistics.median(m.cpu for m in mine) / requests * 1e3:6.1f} "
               f"+{1e3 * statistics.median(m.after for m in mine) / requests * 1e3:5.1f} ms/1k req"
               if requests else "  no trace")
    what = "GB/s" if unit == "GB" else "op/s"
    kpo = "GB" if unit == "GB" else "1k ops"
    print(f"{name:18} plugin {statistics.median(map(rate, mine)):9.3f} {what} "
          f"{statistics.median(map(per, mine)):8.1f} CPU ms/{kpo} {per_req} | standalone "
          f"{statistics.median(map(rate, other)):9.3f} {what} "
          f"{statistics.median(map(per, other)):8.1f} CPU ms/{kpo} | plugin/standalone: "
          f"speed {speed:.2f}, CPU per unit {cost:.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--size-kb", type=int, default=128)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--entries", type=int, default=20000)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--shard-mb", type=int, default=64)
    ap.add_argument("--alternations", type=int, default=3)
    ap.add_argument("--loads", help="only the loads whose names contain one of these (comma-separated)")
    ap.add_argument("--go")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout still unmounts
    a = ap.parse_args()
    binary = go_program(a.go)
    print("CPU ms per GB or per 1,000 operations; per 1,000 FUSE requests: in the window + "
          "reading the trace after it", flush=True)
    path, why = native.worker()
    print(f"engine: {'the compiled worker' if path else 'Python threads: ' + why}; "
          f"{os.cpu_count()} CPUs; {a.threads} threads; bindfs over a tmpfs", flush=True)
    run(binary, a)


if __name__ == "__main__":
    main()
