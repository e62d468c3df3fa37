"""What linking the hosts costs each run (--fsperf-hosts): the time from nothing to every
host's agent answering and its fio server forwarded, and back (links() opened and closed).

Hosts are network namespaces on this machine with an sshd each (tests/netns_hosts.py), each
with an s3fs mount of a bucket on a MinIO started here, so no network time is in the figure:
only ssh, execnet's bootstrap, the agent's hello and clock pings, fio's server and the
forward. Root, sshd, s3fs and MinIO needed.

    python -m benchmarks.host_links [--hosts 2 4] [--repeats 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pytest_fsperf.hosts import link
from pytest_fsperf.hosts.spec import SshSettings, parse_hosts
from pytest_fsperf.infra import leftovers
from pytest_fsperf.store.minio import find_minio, start_minio
from tests.netns_hosts import ssh_hosts


def timed(hosts: list, ssh: SshSettings, folder: str) -> tuple[float, float]:
    """(seconds to open every link, seconds to close them)."""
    t0 = time.monotonic()
    with link.links(hosts, ssh, folder) as found:
        t1 = time.monotonic()
        assert len(found) == len(hosts)
    return t1 - t0, time.monotonic() - t1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    binary = find_minio()
    if binary is None:
        print("MinIO is not installed", file=sys.stderr)
        return 2
    with leftovers.recorded():
        server = start_minio(binary)
        try:
            for n in args.hosts:
                with tempfile.TemporaryDirectory() as tmp, \
                        ssh_hosts(Path(tmp) / "hosts", n, server) as made:
                    ssh = SshSettings(str(made.config), sys.executable)
                    folder, entry = leftovers.private_dir("pytest-fsperf-bench-")
                    try:
                        hosts = list(parse_hosts(made.option()))
                        timed(hosts, ssh, folder)  # warm: the first ssh of each host
                        runs = [timed(hosts, ssh, folder) for _ in range(args.repeats)]
                    finally:
                        shutil.rmtree(folder, ignore_errors=True)  # ours: made just above
                        leftovers.done(entry)
                    opens = [o for o, _c in runs]
                    closes = [c for _o, c in runs]
                    print(f"{n} hosts: open median {statistics.median(opens):.2f} s "
                          f"(min {min(opens):.2f}, max {max(opens):.2f}); close median "
                          f"{statistics.median(closes):.2f} s; {args.repeats} repeats")
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
