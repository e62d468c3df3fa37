"""The documents' comparison, reproduced: the ossfs2 suite on every live backend, one table.

Document 001 measured ossfs 2.0, ossfs 1.91 and goofys on the same workloads. For each backend,
`fsperf bench --backend B --suite ossfs2 --scale S -- --fsperf-ceilings=on` runs the suite (the
plugin mounts B over its own store: MinIO, the OSS gateway before it, Azurite, fake-gcs-server).
Prints per workload and backend: bandwidth (a write's: until the store had it, where the store
is counted, with fio's own beside it), daemon CPU and peak memory, requests per MiB, the
share of the store's and FUSE's ceilings; then ossfs2's ratios over ossfs 1.x and goofys here
beside the documents' (baselines ossfs-2.0.4, ossfs-1.91.8, goofys-0.24.0: one machine, 64 Gbps).

    python3 -m benchmarks.peers_compare [--backends ossfs2,ossfs,goofys,...] [--scale 0.002]
        [--store in-region]     # the stores under a profile's conditions (store-conditions.md)
        [--rtt 10ms]            # or under a round trip alone (--fsperf-store-rtt)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from pytest_fsperf import units
from pytest_fsperf.baselines import load

BACKENDS = "ossfs2,ossfs,goofys,mountpoint-s3,blobfuse2,gcsfuse"
PUBLISHED = {"ossfs2": "ossfs-2.0.4", "ossfs": "ossfs-1.91.8", "goofys": "goofys-0.24.0"}


def bench(backend: str, scale: float, out: Path, store: str, rtt: str | None) -> int:
    args = [sys.executable, "-m", "pytest_fsperf", "bench", "--backend", backend, "--scale",
            f"{scale:g}", "--suite", "ossfs2", "--json", str(out), "--", "--fsperf-ceilings=on", "-q",
            f"--fsperf-store-profile={store}"] + ([f"--fsperf-store-rtt={rtt}"] if rtt else [])
    return subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          check=False).returncode


def rate(r: dict[str, Any]) -> float:
    """The workload's bandwidth; a write's where the store was counted: what the store took
    (bytes written over the time until the store had them), not the daemon's buffer."""
    stored = (r.get("requests") or {}).get("stored_after")
    written = (r.get("write") or {}).get("io_bytes") or 0
    if stored and written:
        return float(written) / float(stored)
    return float(r["total"]["bw_bytes"] or 0.0)


def cells(r: dict[str, Any]) -> list[str]:
    d = r["daemon"] or {}
    cpu = d.get("cpu_percent")
    rss = d.get("peak_rss_bytes")
    req = r.get("requests")
    moved = (r["total"]["io_bytes"] or 0) / 2**20
    per_mib = f"{req['total'] / moved:.2f}" if req and moved else "-"
    shares = []
    for c in r.get("ceilings") or ():
        if c["path"] in ("store", "bindfs over tmpfs") and not c["unavailable"] and c["bw_bytes"]:
            shares.append(f"{100 * rate(r) / float(c['bw_bytes']):.0f}% of {c['path'].split()[0]}")
    shown = units.format_rate(rate(r))
    if rate(r) != float(r["total"]["bw_bytes"] or 0.0):
        shown += f" to the store ({units.format_rate(float(r['total']['bw_bytes'] or 0.0))} by fio)"
    return [shown, f"{cpu:.0f}%" if cpu is not None else "-",
            units.format_mb(rss) if rss else "-", per_mib, ", ".join(shares) or "-"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backends", default=BACKENDS)
    ap.add_argument("--scale", type=float, default=0.002)
    ap.add_argument("--out", help="keep each backend's JSON in this directory")
    ap.add_argument("--store", default="bare", help="the stores' conditions: a profile (in-region ...)")
    ap.add_argument("--rtt", help="a round trip to the stores (10ms), over the profile's")
    a = ap.parse_args()
    found: dict[str, dict[str, dict[str, Any]]] = {}
    print(f"ossfs2 suite at scale {a.scale:g}, each backend mounted by the plugin over its local "
          f"store; store conditions: {a.store}" + (f", rtt {a.rtt}" if a.rtt else ""))
    print("| workload | backend | bandwidth | daemon CPU | daemon peak mem | requests/MiB "
          "| of the ceilings |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="fsperf-peers-") as tmp:
        for backend in a.backends.split(","):
            out = Path(a.out or tmp) / f"{backend}.json"
            rc = 0 if out.exists() else bench(backend, a.scale, out, a.store, a.rtt)  # (--out: reprints)
            if not out.exists():
                print(f"| - | {backend} | (no result: fsperf bench exited {rc}) | | | | |", flush=True)
                continue
            rows = {r["scenario"] or r["name"]: r for r in json.loads(out.read_text())["results"]
                    if r["judged"] and not r["name"].endswith("]")}
            found[backend] = rows
            for name, r in rows.items():
                print(f"| {name} | {backend} | " + " | ".join(cells(r)) + " |", flush=True)
    print("\nossfs2 over the others: here (bandwidth) and in document 001")
    print("| workload | over | here | published |")
    print("|---|---|---|---|")
    ours = found.get("ossfs2", {})
    published = {b: {k: float(v["bw"]["value"]) for k, v in load(n, None, "peers_compare")
                     .data["entries"].items() if "bw" in v} for b, n in PUBLISHED.items()}
    for other in ("ossfs", "goofys"):
        for name, r in ours.items():
            theirs = found.get(other, {}).get(name)
            here = f"{rate(r) / rate(theirs):.2f}x" if theirs and rate(theirs) else "-"
            p2, po = published["ossfs2"].get(name), published[other].get(name)
            said = f"{p2 / po:.2f}x" if p2 and po else "-"
            print(f"| {name} | {other} | {here} | {said} |")


if __name__ == "__main__":
    main()
