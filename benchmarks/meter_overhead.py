"""What the daemon meters cost: CPU of the watcher thread, in % of one core; and what the
FUSE request trace costs the workload it traces.

Target: under 1% of a core. Runs a DaemonMeter against a live process for a while, with
exact peak memory (VmHWM reset) and with the sampled fallback, and the timeline sampler
(CPU, RSS, threads, fds once a second, psutil), and prints the figures.

    python benchmarks/meter_overhead.py [seconds]

--fuse-trace (root, bindfs, fio): a bindfs mount over tmpfs (the fastest FUSE path here, so
the most requests per second), two workloads timed with and without the trace, interleaved
(off/on, on/off, ...), the daemon on CPU 1 and the load on CPU 0: a metadata-heavy one (a
cold `ls -l` of 20000 files: LOOKUP per entry) and a bandwidth one (fio, 1 GiB direct reads
of 128 KiB: READ per block). Prints each workload's median time off and on, the median of
the pairs' on/off ratios, and the cost per traced request; then what reading the trace
after the window costs (outside the window, but wall time of the session). Target: the
trace costs under 2% of either workload's throughput.

    python benchmarks/meter_overhead.py --fuse-trace [pairs]
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import psutil

from pytest_fsperf import stats
from pytest_fsperf.infra.mountinfo import find_mount, read_mounts
from pytest_fsperf.measure import fusetrace, meters, timeline
from pytest_fsperf.mounts.daemon import describe


def measure(seconds: float, sampled: bool, spanned: bool = False) -> float:
    target = subprocess.Popen(["sleep", str(seconds + 5)])
    try:
        daemon = describe(target.pid, "benchmark").daemon
        assert daemon is not None
        original = meters.reset_peak_rss
        if sampled:
            meters.reset_peak_rss = lambda pid, proc="/proc": False
        try:
            meter = meters.DaemonMeter(daemon, spanned=spanned)
            cpu0, t0 = sum(os.times()[:2]), time.monotonic()
            meter.start()
            time.sleep(seconds)  # the main thread idles: what is spent, the watcher spent
            stats = meter.stop("benchmark")
            cpu, wall = sum(os.times()[:2]) - cpu0, time.monotonic() - t0
        finally:
            meters.reset_peak_rss = original
        assert stats.peak_rss_method == ("sampled" if sampled else "VmHWM")
        return 100.0 * cpu / wall
    finally:
        target.kill()
        target.wait()


def measure_timeline(seconds: float) -> float:
    target = subprocess.Popen(["sleep", str(seconds + 5)])
    try:
        sampler = timeline.Sampler(lambda: 0, [target.pid])
        cpu0, t0 = sum(os.times()[:2]), time.monotonic()
        sampler.start()
        time.sleep(seconds)
        sampler.stop()
        return 100.0 * (sum(os.times()[:2]) - cpu0) / (time.monotonic() - t0)
    finally:
        target.kill()
        target.wait()


def _drop(level: str = "3") -> None:
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w", encoding="ascii") as f:
        f.write(level)


def _bindfs(base: str, *options: str) -> tuple[str, subprocess.Popen[bytes]]:
    src, mnt = os.path.join(base, "src"), os.path.join(base, "mnt")
    os.mkdir(src)
    os.mkdir(mnt)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2g,mode=0700", "fsperf-bench", src],
                   check=True)
    proc = subprocess.Popen(["bindfs", "-f", *options, src, mnt])
    for _ in range(200):
        if os.path.ismount(mnt):
            return mnt, proc
        time.sleep(0.05)
    raise RuntimeError("bindfs did not mount")


def _stats(mnt: str) -> Callable[[], int]:
    """stat() of one file over and over on a mount without attribute caching: the smallest
    request there is, so the trace's cost per request is the largest share of it."""
    path = os.path.join(mnt, "one")
    with open(path, "wb"):
        pass

    def run() -> int:
        for _ in range(5000):
            os.stat(path)
        return 5000
    return run


def _listing(mnt: str) -> Callable[[], int]:
    tree = os.path.join(mnt, "tree")
    os.mkdir(tree)
    for i in range(20000):
        os.close(os.open(os.path.join(tree, f"f{i:05d}"), os.O_CREAT | os.O_WRONLY, 0o644))

    def run() -> int:
        n = 0
        with os.scandir(tree) as it:
            for entry in it:
                entry.stat(follow_symlinks=False)
                n += 1
        return n
    return run


def _reading(mnt: str) -> Callable[[], int]:
    path = os.path.join(mnt, "big")
    with open(path, "wb") as f:
        for _ in range(1024):
            f.write(os.urandom(1 << 20))
    cmd = ["fio", "--name=r", f"--filename={path}", "--rw=read", "--bs=128k", "--direct=1",
           "--size=1G", "--ioengine=psync", "--output-format=terse"]

    def run() -> int:
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return 1 << 30
    return run


def _timed(work: Callable[[], int], connection: int | None) -> tuple[float, int, float]:
    """(seconds of the work, requests traced, seconds reading the trace after it), each
    after a drop of dentries, inodes and pages (not timed): every entry is looked up again."""
    _drop("3")
    if connection is None:
        t0 = time.monotonic()
        work()
        return time.monotonic() - t0, 0, 0.0
    with fusetrace.traced(connection) as trace:
        trace.start()
        t0 = time.monotonic()
        work()
        t1 = time.monotonic()
        trace.stop()
        found = trace.summary(t0, t1)
        return t1 - t0, found.total, time.monotonic() - t1


def fuse_trace(pairs: int) -> None:
    why = fusetrace.unavailable()
    if why or not shutil.which("bindfs") or not shutil.which("fio"):
        sys.exit(f"--fuse-trace needs root, the FUSE tracepoints, bindfs and fio ({why or 'missing'})")
    for options, workloads in (
            (("-o", "attr_timeout=0,entry_timeout=0"), (("stat() x 5000, no attribute cache",
                                                          _stats),)),
            ((), (("cold ls -l of 20000 files", _listing),
                  ("fio 1 GiB direct reads of 128 KiB", _reading)))):
        base = tempfile.mkdtemp(prefix="fsperf-bench-")
        mnt, proc = _bindfs(base, *options)
        try:
            m = find_mount(mnt, read_mounts())
            conn = fusetrace.connection_id(m.major, m.minor)
            os.sched_setaffinity(0, {0})
            for t in psutil.Process(proc.pid).threads():
                os.sched_setaffinity(t.id, {min(1, (os.cpu_count() or 1) - 1)})
            for title, make in workloads:
                _compare(title, make(mnt), conn, pairs)
        finally:
            subprocess.run(["umount", mnt], check=False)
            proc.wait(timeout=10)
            subprocess.run(["umount", os.path.join(base, "src")], check=False)
            shutil.rmtree(base)


def _compare(title: str, work: Callable[[], int], conn: int, pairs: int) -> None:
    work()  # once unmeasured: the tree and file are in place, fio's start-up warm
    off, on, ratios, requests, reading = [], [], [], [], []
    for i in range(pairs):
        order = (None, conn) if i % 2 == 0 else (conn, None)
        got = {c: _timed(work, c) for c in order}
        off.append(got[None][0])
        on.append(got[conn][0])
        requests.append(got[conn][1])
        reading.append(got[conn][2])
        ratios.append(got[conn][0] / got[None][0])
    ratios.sort()
    lo, hi = stats.median_ci(ratios)
    cost_us = 1e6 * (statistics.median(on) - statistics.median(off)) / statistics.median(requests)
    print(f"{title}: off {statistics.median(off):.3f} s, on {statistics.median(on):.3f} s "
          f"(medians of {pairs}); on/off per pair: median {statistics.median(ratios):.3f} "
          f"(95% interval {lo:.3f}-{hi:.3f}); {statistics.median(requests):.0f} requests "
          f"traced, {cost_us:+.2f} us each; reading the trace after the window: "
          f"{statistics.median(reading):.3f} s")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--fuse-trace":
        fuse_trace(int(sys.argv[2]) if len(sys.argv) > 2 else 10)
        return
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    for sampled, spanned in ((False, False), (True, False), (False, True)):
        figures = sorted(measure(seconds, sampled, spanned) for _ in range(3))
        mode = ("exact VmHWM, CPU sampled every 50 ms for fio's I/O window (ticks, and ns "
                "per thread)" if spanned else "sampled RSS" if sampled else "exact VmHWM")
        print(f"meter overhead, {mode}: median {figures[1]:.3f}% of one core "
              f"(runs: {', '.join(f'{f:.3f}%' for f in figures)}; {seconds:.0f} s each; "
              f"interval {meters.WATCH_INTERVAL} s; target < 1%)")
    figures = sorted(measure_timeline(seconds) for _ in range(3))
    print(f"timeline sampler: median {figures[1]:.3f}% of one core (runs: "
          f"{', '.join(f'{f:.3f}%' for f in figures)}; interval {timeline.INTERVAL:g} s; target < 1%)")


if __name__ == "__main__":
    main()
