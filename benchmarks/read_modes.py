"""What separates the fast runs from the slow ones when a cold read through bindfs over this
machine's disk runs in two modes (issue 24): per run, the bandwidth fio printed beside the
daemon's CPU, the kernel's memory counters (/proc/vmstat), the disk's own counters
(/sys/block/DEV/stat: requests, their mean size and time), the VM's steal time and where the
disk's interrupts landed. Each run after a fresh bindfs mount and a page-cache drop, as a
gate's cold start does. Needs root, bindfs and fio.

    python3 -m benchmarks.read_modes [RUNS] [MiB] [DAEMON_CPUS FIO_CPUS]
    # default 16 runs of 1024 MiB, unpinned; e.g. 16 1024 1 0: pinned as a gate pins them
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

VMSTAT = ("pgfault", "pgmajfault", "pgalloc_normal", "pgfree", "pgscan_kswapd", "pgsteal_kswapd",
          "compact_stall", "workingset_refault_file", "pgactivate", "pgdeactivate",
          "thp_fault_alloc", "pgpgin", "allocstall_normal", "kswapd_low_wmark_hit_quickly")


def vmstat() -> dict[str, int]:
    with open("/proc/vmstat") as f:
        return {k: int(v) for k, v in (line.split() for line in f)}


def disk_of(path: str) -> str:
    dev = os.stat(path).st_dev
    name = os.path.basename(os.path.realpath(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"))
    parent = os.path.realpath(f"/sys/class/block/{name}/..")
    return name if not os.path.exists(os.path.join(parent, "stat")) else os.path.basename(parent)


def blockstat(dev: str) -> list[int]:
    with open(f"/sys/block/{dev}/stat") as f:
        return [int(x) for x in f.read().split()]


def irqs(dev_irq_name: str) -> list[int]:
    with open("/proc/interrupts") as f:
        for line in f:
            if dev_irq_name in line:
                parts = line.split()
                return [int(x) for x in parts[1:1 + (os.cpu_count() or 1)]]
    return []


def cpu_speed(cpus: str | None) -> float:
    """MB/s of sha256 over 8 MiB on the daemon's CPUs (this thread moved there for it): how
    fast the vCPU itself ran around the run."""
    before = os.sched_getaffinity(0)
    if cpus:
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})
    try:
        data = bytes(8 << 20)
        t = time.perf_counter()
        hashlib.sha256(data).digest()
        return 8 * 1.048576 / (time.perf_counter() - t)
    finally:
        os.sched_setaffinity(0, before)


def run_once(backing: str, mnt: str, size_mib: int, dev: str, irq: str,
             pin: tuple[str, str] | None) -> dict[str, float]:
    subprocess.run(["umount", mnt], check=False, stderr=subprocess.DEVNULL)
    subprocess.run(["bindfs", backing, mnt], check=True)
    daemon = next(p for p in psutil.process_iter(["name", "cmdline"])
                  if p.info["name"] == "bindfs" and mnt in (p.info["cmdline"] or []))
    if pin:  # as a gate places them: every thread of the daemon, and fio
        subprocess.run(["taskset", "-a", "-p", "-c", pin[0], str(daemon.pid)], check=True,
                       capture_output=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
    time.sleep(0.2)
    speed0 = cpu_speed(pin[0] if pin else None)
    v0, b0, i0, c0 = vmstat(), blockstat(dev), irqs(irq), psutil.cpu_times()
    d0 = sum(daemon.cpu_times()[:2])
    out = subprocess.run([*(["taskset", "-c", pin[1]] if pin else []), "fio", "--name=r",
                          f"--filename={mnt}/data", "--rw=read", "--bs=1M",
                          f"--size={size_mib}M", "--direct=1", "--ioengine=psync",
                          "--output-format=json"], check=True, capture_output=True, text=True)
    d1 = sum(daemon.cpu_times()[:2])
    v1, b1, i1, c1 = vmstat(), blockstat(dev), irqs(irq), psutil.cpu_times()
    speed1 = cpu_speed(pin[0] if pin else None)
    bw = json.loads(out.stdout)["jobs"][0]["read"]["bw_bytes"]
    ios, sectors, ticks = b1[0] - b0[0], b1[2] - b0[2], b1[3] - b0[3]
    row: dict[str, float] = {
        "MB/s": bw / 1e6, "cpu-s/GB": (d1 - d0) / (size_mib / 1024),
        "sha MB/s before": speed0, "sha MB/s after": speed1,
        "disk ios": ios, "KiB/io": sectors * 512 / 1024 / max(ios, 1),
        "ms/io": ticks / max(ios, 1), "steal s": c1.steal - c0.steal,
        **{f"irq cpu{n}": b - a for n, (a, b) in enumerate(zip(i0, i1, strict=True))},
    }
    row.update({k: v1.get(k, 0) - v0.get(k, 0) for k in VMSTAT})
    return row


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
    pin = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else None
    with tempfile.TemporaryDirectory(prefix="fsperf-modes-", dir="/var/tmp") as top:
        backing, mnt = os.path.join(top, "backing"), os.path.join(top, "mnt")
        os.mkdir(backing)
        os.mkdir(mnt)
        subprocess.run(["fio", "--name=w", f"--filename={backing}/data", "--rw=write",
                        "--bs=1M", f"--size={size}M", "--end_fsync=1"], check=True,
                       capture_output=True)
        dev = disk_of(backing)
        irq = "virtio1-req"  # this VM's block device queue; empty where named otherwise
        rows = []
        try:
            for _ in range(runs):
                rows.append(run_once(backing, mnt, size, dev, irq, pin))
                print(" ".join(f"{k}={v:.4g}" for k, v in rows[-1].items()), flush=True)
        finally:
            subprocess.run(["umount", mnt], check=False)
    mid = statistics.median(r["MB/s"] for r in rows)
    fast = [r for r in rows if r["MB/s"] > mid]
    slow = [r for r in rows if r["MB/s"] <= mid]
    print(f"\nmedian {mid:.0f} MB/s; medians of the faster half against the slower half:")
    for k in rows[0]:
        f, s = statistics.median(r[k] for r in fast), statistics.median(r[k] for r in slow)
        print(f"  {k:28s} fast {f:12.4g}  slow {s:12.4g}")


if __name__ == "__main__":
    main()
