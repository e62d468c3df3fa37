"""A round trip as a network gives it, against the conditions' model of one (issue 73).

    python3 -m benchmarks.rtt_reference [--backends ossfs2,ossfs,goofys] [--rtt 2,10]
                                        [--size 256M] [--rounds 3]

For each backend and round trip, one file written, then read cold at 1 MiB by one stream,
`--rounds` times, through the plugin's own mount over its own store (plain HTTP: the same
hop in both), two ways in the same network namespace:

  model    --fsperf-store-rtt=X: the conditions' proxy (or the OSS gateway) paces each
           connection by its model of TCP;
  packets  no store conditions; every packet the store sends to the daemons held X by
           fsperf-delayer (store/delay.py: iptables NFQUEUE on loopback), kernel TCP untouched.

Prints each read's median bandwidth both ways and model/packets, ossfs2 over ossfs 1.x both
ways, and the delayer's own accuracy (how late past X it let packets go: p50, p99) and cost
(its CPU seconds per GB the daemons read). It runs itself under `unshare -n` (the firewall rule
is that namespace's alone); needs root, fio, MinIO, Go and iptables-legacy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_fsperf import units
from pytest_fsperf.mounts.builtin import BUILTIN
from pytest_fsperf.store import delay

TEST = """
import os

ROUNDS, SIZE = int(os.environ["RTT_ROUNDS"]), os.environ["RTT_SIZE"]


def test_read(fsperf):
    fsperf.fio(name="write", rw="write", bs="1M", size=SIZE, end_fsync=1)
    for i in range(ROUNDS):
        fsperf.cold()
        fsperf.fio(name=f"read{i}", rw="read", bs="1M", size=SIZE)
"""

CONFTEST = """
import json, os
import pytest
from pytest_fsperf.mounts.request import STORE_FIXTURE
from pytest_fsperf.store import delay


@pytest.fixture(scope="session", autouse=True)
def delayed_store(request):
    seconds = float(os.environ.get("RTT_PACKETS", "0"))
    if not seconds:
        yield
        return
    values = request.getfixturevalue(STORE_FIXTURE[os.environ["RTT_STORE"]]).config()
    hop = values.get("http_proxy") or values["endpoint"]  # where the daemons connect
    held = delay.start(int(hop.split("//")[-1].split("/")[0].rsplit(":", 1)[1]), seconds)
    try:
        yield
    finally:
        with open(os.environ["RTT_STATS"], "w") as f:
            json.dump(held.stats(), f)
        held.stop()
"""


def session(backend: str, rtt: float, packets: bool, size: str, rounds: int) -> dict[str, object]:
    store = next(b.store for b in BUILTIN if b.name == backend)
    with tempfile.TemporaryDirectory(prefix="fsperf-rtt-") as tmp:
        Path(tmp, "test_rtt.py").write_text(TEST)
        Path(tmp, "conftest.py").write_text(CONFTEST)
        Path(tmp, "pytest.ini").write_text("[pytest]\n")
        out, stats = Path(tmp, "out.json"), Path(tmp, "delay.json")
        env = {**os.environ, "RTT_ROUNDS": str(rounds), "RTT_SIZE": size, "RTT_STORE": store,
               "RTT_STATS": str(stats), "RTT_PACKETS": f"{rtt if packets else 0:g}"}
        conditions = [] if packets or not rtt else [f"--fsperf-store-rtt={rtt * 1000:g}ms"]
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_rtt.py",
             f"--fsperf-backend={backend}", "--fsperf-store-tls=off", f"--fsperf-json={out}",
             *conditions], cwd=tmp, env=env, capture_output=True, text=True, check=False)
        if not out.exists():
            return {"error": (done.stdout + done.stderr).strip()[-400:]}
        reads = [r for r in json.loads(out.read_text())["results"] if r["name"].startswith("read")]
        got: dict[str, object] = {
            "bw": statistics.median(float(r["total"]["bw_bytes"]) for r in reads),
            "bytes": sum(float(r["total"]["io_bytes"] or 0) for r in reads),
            "failed": done.returncode != 0}
        if stats.exists():
            got["delay"] = json.loads(stats.read_text())
        return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backends", default="ossfs2,ossfs,goofys")
    ap.add_argument("--rtt", default="2,10", help="round trips in ms")
    ap.add_argument("--size", default="256M")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mtu", type=int, default=1500,
                    help="the namespace's loopback MTU: a WAN path's 1500 (loopback's own is 65536)")
    a = ap.parse_args()
    if not delay.own_namespace():  # a namespace of its own: its loopback, its firewall
        os.execvp("unshare", ["unshare", "-n", sys.executable, "-m", "benchmarks.rtt_reference",
                              *sys.argv[1:]])
    subprocess.run(["ip", "link", "set", "lo", "mtu", str(a.mtu), "up"], check=True)
    backends = a.backends.split(",")
    print(f"loopback MTU {a.mtu}; {a.rounds} cold reads of {a.size} each way, medians")
    print(f"{'rtt':>6} {'backend':<8} {'model':>11} {'packets':>11} {'model/pk':>8}  delayer "
          "(late p50/p99, CPU-s/GB)")
    for ms in (float(x) for x in a.rtt.split(",")):
        both: dict[str, dict[str, float]] = {}
        for backend in backends:
            row = {}
            for packets in (False, True):
                got = session(backend, ms / 1000, packets, a.size, a.rounds)
                if "error" in got:
                    print(f"{ms:>4g}ms {backend:<8} {'packets' if packets else 'model'}: "
                          f"{got['error']}")
                    continue
                row["packets" if packets else "model"] = float(got["bw"])  # type: ignore[arg-type]
                d = got.get("delay")
                if isinstance(d, dict) and d.get("packets"):
                    per_gb = d.get("cpu_seconds", 0) / (float(got["bytes"]) / 1e9)  # type: ignore[arg-type]
                    row["note"] = (f"{d.get('late_p50', 0) * 1e3:.3f}/{d.get('late_p99', 0) * 1e3:.3f}"
                                   f" ms, {per_gb:.2f}")  # type: ignore[assignment]
            both[backend] = row
            m, p = row.get("model"), row.get("packets")
            print(f"{ms:>4g}ms {backend:<8} {units.format_rate(m) if m else '-':>11} "
                  f"{units.format_rate(p) if p else '-':>11} "
                  f"{(m / p) if m and p else float('nan'):>8.2f}  {row.get('note', '')}", flush=True)
        if "ossfs2" in both and "ossfs" in both:
            for way in ("model", "packets"):
                two, one = both["ossfs2"].get(way), both["ossfs"].get(way)
                if two and one:
                    print(f"{ms:>4g}ms ossfs2/ossfs {way}: {two / one:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
