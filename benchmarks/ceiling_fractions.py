"""Each workload of a suite as a fraction of its ceilings, on each backend over the embedded MinIO.

For every backend, `fsperf bench --backend B --scale S -- --fsperf-ceilings=on
--fsperf-backend-store=minio` runs the suite (the plugin mounts B over a MinIO of its own);
each judged workload gets the ceilings of its shape (the store read or written straight by
obstore; the same fio job through bindfs over tmpfs, and on tmpfs). Prints one row per
backend and workload: its bandwidth and its share of each ceiling, then what measuring the
ceilings cost.

    python3 -m benchmarks.ceiling_fractions [--backends s3fs,rclone,juicefs] [--scale 0.01]
        [--suite ossfs2] [-k EXPR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_fsperf import units

PATHS = ("store", "bindfs over tmpfs", "tmpfs")


def run(backend: str, scale: float, suite: str, keyword: str | None, out: Path) -> int:
    args = [sys.executable, "-m", "pytest_fsperf", "bench", "--backend", backend,
            "--scale", f"{scale:g}", "--suite", suite, "--json", str(out)]
    if keyword:
        args += ["-k", keyword]
    args += ["--", "--fsperf-ceilings=on", "--fsperf-backend-store=minio", "-q"]
    return subprocess.run(args, stdout=subprocess.DEVNULL, check=False).returncode


def share(bw: float, c: dict[str, object] | None) -> str:
    if c is None:
        return "-"
    if c["unavailable"]:
        return "- (fio jobs only)" if str(c["unavailable"]).startswith("measured for fio") \
            else f"- ({str(c['unavailable'])[:40]})"
    ceiling = float(c["bw_bytes"])  # type: ignore[arg-type]
    return f"{100 * bw / ceiling:.0f}% of {units.format_rate(ceiling)}" if ceiling else "-"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backends", default="s3fs,rclone,juicefs")
    ap.add_argument("--scale", type=float, default=0.01)
    ap.add_argument("--suite", default="ossfs2")
    ap.add_argument("-k", dest="keyword")
    a = ap.parse_args()
    costs: dict[str, str] = {}
    print("| backend | workload | bandwidth | " + " | ".join(PATHS) + " |")
    print("|---|---|---|" + "---|" * len(PATHS))
    with tempfile.TemporaryDirectory(prefix="fsperf-fractions-") as tmp:
        for backend in a.backends.split(","):
            out = Path(tmp) / f"{backend}.json"
            rc = run(backend, a.scale, a.suite, a.keyword, out)
            if not out.exists():
                print(f"| {backend} | (no result: fsperf bench exited {rc}) | | | | |", flush=True)
                continue
            for r in json.loads(out.read_text())["results"]:
                if not r.get("ceilings"):
                    continue
                by_path = {c["path"]: c for c in r["ceilings"]}
                bw = float(r["total"]["bw_bytes"] or 0.0)
                cells = [share(bw, by_path.get(p)) for p in PATHS]
                print(f"| {backend} | {r['name']} | {units.format_rate(bw)} | "
                      + " | ".join(cells) + " |", flush=True)
                for c in r["ceilings"]:
                    if not c["unavailable"]:
                        costs.setdefault(f"{c['path']}: {c['how']}", f"{c['seconds']:.0f} s")
    print("\nceilings measured (each once per session and shape; its cost, wall):")
    for how, cost in costs.items():
        print(f"  {how} ({cost})")


if __name__ == "__main__":
    main()
