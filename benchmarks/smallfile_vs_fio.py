"""Is the small-file engine the bottleneck? Read the same files with it and with fio's
small-file mode, on the same mount, cold each time, and print MB/s and the ratio.

    python3 benchmarks/smallfile_vs_fio.py [DIR_ON_MOUNT] [--files N] [--threads T] [--rounds R]

The engine is fast enough when engine / fio >= 0.9 (medians over the rounds).
Run as root so the page cache can be dropped between rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

from pytest_fsperf.engine.files import list_files, run_files, sized
from pytest_fsperf.measure.cache import make_cold


def fio_job(directory: str, rw: str, files: int, threads: int, out: str) -> list[str]:
    return ["fio", "--name=sf", f"--directory={directory}", f"--rw={rw}", "--bs=128k",
            f"--numjobs={threads}", f"--nrfiles={files // threads}", "--filesize=128k",
            "--openfiles=1", "--file_service_type=sequential", "--thread", "--group_reporting",
            "--output-format=json", f"--output={out}"]


def fio_read_mbps(directory: str, files: int, threads: int) -> float:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        t0 = time.monotonic()
        subprocess.run(fio_job(directory, "read", files, threads, out.name), check=True,
                       stdout=subprocess.DEVNULL)
        wall = time.monotonic() - t0
        with open(out.name, encoding="utf-8") as f:
            job = json.load(f)["jobs"][0]["read"]
    print(f"  fio: bw_bytes {job['bw_bytes'] / 1e6:.1f} MB/s; "
          f"io / wall {job['io_bytes'] / 1e6 / wall:.1f} MB/s")
    return float(job["bw_bytes"]) / 1e6  # the stricter figure: fio's runtime excludes its startup


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?", default=None)
    ap.add_argument("--files", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    base = args.dir or tempfile.mkdtemp(prefix="fsperf-bench-")
    work = tempfile.mkdtemp(prefix="smallfile-", dir=base)
    try:
        files = args.files - args.files % args.threads
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            subprocess.run(fio_job(work, "write", files, args.threads, out.name), check=True,
                           stdout=subprocess.DEVNULL)
        paths = sized(list_files(work))
        print(f"{len(paths)} files of 128 KiB, {args.threads} threads, in {work}")
        engine, fio = [], []
        for n in range(args.rounds):
            make_cold(work, fuse=True)
            fio.append(fio_read_mbps(work, files, args.threads))
            make_cold(work, fuse=True)
            stats = run_files(paths, write=False, threads=args.threads)
            engine.append(stats.bw_bytes / 1e6)
            print(f"round {n + 1}: fio {fio[-1]:.1f} MB/s, engine {engine[-1]:.1f} MB/s")
        ratio = statistics.median(engine) / statistics.median(fio)
        print(f"median: fio {statistics.median(fio):.1f} MB/s, engine {statistics.median(engine):.1f} "
              f"MB/s, engine / fio = {ratio:.2f} (target >= 0.9)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
        os.sync()


if __name__ == "__main__":
    main()
