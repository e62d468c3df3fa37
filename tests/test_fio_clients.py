"""Many clients on fio's client/server mode: servers on unix sockets in a 0700 directory, one controller, each
client's figures and the aggregate; a server that dies mid-run fails the run naming it, and
no server is left running."""

from __future__ import annotations

import os
import signal
import threading
import time

import psutil
import pytest

from pytest_fsperf.engine import fio_clients
from pytest_fsperf.errors import MeasurementError
from tests.conftest import need

TIER = "fio"  # every test here, unless one says otherwise (conftest.py)


def servers_left() -> list[str]:
    return [" ".join(p.info["cmdline"]) for p in psutil.process_iter(["cmdline"])
            if p.info["cmdline"] and p.info["cmdline"][0].endswith("fio")
            and "--server=" in " ".join(p.info["cmdline"])]


def test_each_client_and_the_aggregate(tmp_path):
    need("fio")
    with fio_clients.local_servers(3, str(tmp_path)) as servers:
        files = []
        for i, _s in enumerate(servers):
            d = tmp_path / f"client{i}"
            d.mkdir()
            files.append(fio_clients.job_file(str(tmp_path / f"job{i}.fio"), str(d),
                                              {"rw": "write", "bs": "1M", "size": f"{4 * (i + 1)}M",
                                               "unique_filename": "0"}))
        clients, total = fio_clients.run(servers, files, str(tmp_path / "out.json"), 60)
    assert [c.server for c in clients] == [s.address for s in servers]
    assert [c.write.io_bytes for c in clients] == [4 << 20, 8 << 20, 12 << 20]
    for i, c in enumerate(clients):  # each wrote in its own directory: its own mount
        (name,) = os.listdir(tmp_path / f"client{i}")
        assert name == "fsperf.0.0"
        assert os.path.getsize(tmp_path / f"client{i}" / name) == c.write.io_bytes
    assert total.write.io_bytes == sum(c.write.io_bytes for c in clients)
    assert total.write.total_ios == sum(c.write.total_ios for c in clients)
    assert servers_left() == []


def test_a_server_that_dies_mid_run_is_named_and_nothing_is_left(tmp_path):
    need("fio")
    with pytest.raises(MeasurementError) as caught, \
            fio_clients.local_servers(2, str(tmp_path)) as servers:
        files = [fio_clients.job_file(str(tmp_path / f"j{i}.fio"), str(tmp_path),
                                      {"rw": "write", "bs": "64k", "size": "8M",
                                       "time_based": "1", "runtime": "6", "filename": f"f{i}"})
                 for i in range(2)]
        victim = servers[1]

        def kill() -> None:
            time.sleep(2.0)
            for p in psutil.Process(victim.proc.pid).children(recursive=True):
                p.kill()
            os.kill(victim.proc.pid, signal.SIGKILL)

        threading.Thread(target=kill, daemon=True).start()
        fio_clients.run(servers, files, str(tmp_path / "out.json"), 60)
    assert victim.address in str(caught.value), caught.value
    time.sleep(0.5)
    assert servers_left() == []


def test_servers_need_a_private_directory(tmp_path):
    need("fio")
    tmp_path.chmod(0o755)
    with pytest.raises(MeasurementError, match="not a 0700 directory of this user"), \
            fio_clients.local_servers(1, str(tmp_path)):
        pass
    assert servers_left() == []
