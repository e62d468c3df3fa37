"""What the daemon meters cost: CPU of the watcher thread, in % of one core.

Target: under 1% of a core. Runs a DaemonMeter against a live process for a while, with
exact peak memory (VmHWM reset) and with the sampled fallback, and the timeline sampler
(CPU, RSS, threads, fds once a second, psutil), and prints the figures.

    python benchmarks/meter_overhead.py [seconds]
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from pytest_fsperf.measure import meters, timeline
from pytest_fsperf.mounts.daemon import describe


def measure(seconds: float, sampled: bool) -> float:
    target = subprocess.Popen(["sleep", str(seconds + 5)])
    try:
        daemon = describe(target.pid, "benchmark").daemon
        assert daemon is not None
        original = meters.reset_peak_rss
        if sampled:
            meters.reset_peak_rss = lambda pid, proc="/proc": False
        try:
            meter = meters.DaemonMeter(daemon)
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


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    for sampled in (False, True):
        figures = sorted(measure(seconds, sampled) for _ in range(3))
        mode = "sampled RSS" if sampled else "exact VmHWM"
        print(f"meter overhead, {mode}: median {figures[1]:.3f}% of one core "
              f"(runs: {', '.join(f'{f:.3f}%' for f in figures)}; {seconds:.0f} s each; "
              f"interval {meters.WATCH_INTERVAL} s; target < 1%)")
    figures = sorted(measure_timeline(seconds) for _ in range(3))
    print(f"timeline sampler: median {figures[1]:.3f}% of one core (runs: "
          f"{', '.join(f'{f:.3f}%' for f in figures)}; interval {timeline.INTERVAL:g} s; target < 1%)")


if __name__ == "__main__":
    main()
