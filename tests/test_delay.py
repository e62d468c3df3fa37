"""Issue 73.1: the reference for the conditions' model, a round trip as a network gives it:
fsperf-delayer holds the packets a store's port sends on loopback (NFQUEUE), and only ever in
a network namespace of the caller's own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from pytest_fsperf.errors import MeasurementError

ROUND_TRIPS = """
import json, socket, statistics, threading, time
from pytest_fsperf.store import delay

srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(8)
port = srv.getsockname()[1]

def echo():
    c, _ = srv.accept()
    while (b := c.recv(1)):
        c.sendall(b)

threading.Thread(target=echo, daemon=True).start()
other = socket.socket()
other.bind(("127.0.0.1", 0))
other.listen(8)
held = delay.start(port, 0.010)
try:
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    times = []
    for _ in range(30):
        t = time.perf_counter()
        s.sendall(b"x")
        s.recv(1)
        times.append(time.perf_counter() - t)
    t = time.perf_counter()  # another port's traffic is not held
    socket.create_connection(("127.0.0.1", other.getsockname()[1])).close()
    print(json.dumps({"p50": statistics.median(times), "other": time.perf_counter() - t,
                      **held.stats()}))
finally:
    held.stop()
"""


@pytest.mark.unit
def test_the_delayer_refuses_a_namespace_with_more_than_loopback(monkeypatch):
    from pytest_fsperf.store import delay

    monkeypatch.setattr(delay, "own_namespace", lambda: False)
    with pytest.raises(MeasurementError, match="only in a network namespace of the caller's own"):
        delay.start(9, 0.01)


@pytest.mark.fio
def test_a_stores_packets_are_held_the_round_trip_asked_and_no_others(clean):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare")
    if shutil.which("iptables-legacy") is None:
        pytest.skip("iptables-legacy is not installed (apt install iptables)")
    done = subprocess.run(["unshare", "-n", "sh", "-c", f"ip link set lo up && exec {sys.executable}"
                           " -c \"$0\"", ROUND_TRIPS], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert 0.010 <= got["p50"] < 0.0125  # the echo's reply held 10 ms; the request not
    assert got["other"] < 0.005
    assert got["packets"] >= 30 and got["late_p50"] < 0.001
