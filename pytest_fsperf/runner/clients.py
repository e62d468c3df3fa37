"""Many clients of one bucket, on fio's own client/server mode (engine/fio_clients.py).

On a backend the plugin mounts: N mounts of it (the test's own and N-1 more with the same
plan, so the same bucket), each served by its own daemon and its own `fio --server` on a
unix socket in the session's 0700 directory; fio's controller runs the job on all of them
at once. Every daemon is measured over the window; a cold start covers every mount. With
--fsperf-fio-servers the jobs run on servers the user started on other machines instead,
in the same work directory seen through their own mounts of the bucket; their daemons are not measured.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from pytest_fsperf.engine import fio as fio_engine
from pytest_fsperf.engine import fio_clients
from pytest_fsperf.engine.fio_clients import Server
from pytest_fsperf.errors import UsageError
from pytest_fsperf.measure import progress
from pytest_fsperf.measure.cache import check_cold
from pytest_fsperf.measure.daemons import DaemonReading
from pytest_fsperf.mounts.daemon import Lookup
from pytest_fsperf.result.daemon import DaemonStats, ProcessStats
from pytest_fsperf.result.parts import ClientStats
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.runner.workspace import Workspace
from pytest_fsperf.vocab import ColdRead, EngineKind, PageCache

MAX_CLIENTS = 64


@dataclass(frozen=True)
class Client:
    server: Server
    directory: str  # where its job runs, as its server sees it
    local: str | None  # the same directory through a mount of this machine (None: remote)


def count(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CLIENTS:
        raise UsageError(f"{where}: clients={value!r} must be a whole number from 1 to {MAX_CLIENTS}")
    return value


def client_dirs(ws: Workspace, n: int) -> list[str]:
    """Each client's own directory in the test's work dir, created through the test's mount."""
    found = []
    for i in range(n):
        path = os.path.join(ws.workdir, f"client{i}")
        os.makedirs(path, exist_ok=True)
        found.append(path)
    return found


def _remote(ws: Workspace, n: int, where: str) -> list[Client]:
    given = ws.running.clients.fio_servers
    if n > len(given):
        raise UsageError(f"{where}: clients={n}, but --fsperf-fio-servers names {len(given)} "
                         f"({ws.running.clients.fio_servers_given})")
    root = ws.target.path
    found = []
    for server, local in zip(given[:n], client_dirs(ws, n), strict=True):
        rel = os.path.relpath(local, root)
        found.append(Client(server, os.path.join(server.directory or root, rel), None))
    return found


def _local(ws: Workspace, n: int, where: str) -> list[Client]:
    owned = ws.target.owned
    if owned is None or not owned.backend.has_daemon:
        raise UsageError(f"{where}: clients={n} needs a backend the plugin mounts "
                         "(--fsperf-backend or an fsperf_mount marker), one mount per client, "
                         "or fio servers of your own (--fsperf-fio-servers)")
    dirs = client_dirs(ws, 1)
    rel = os.path.relpath(ws.target.logical(str(ws.workdir)), ws.target.path)
    for i, peer in enumerate(ws.open_peers(n - 1), 1):
        path = os.path.join(peer.path, rel, f"client{i}")
        os.makedirs(path, exist_ok=True)  # an own source per mount, or the bucket's
        dirs.append(path)
    return [Client(Server("127.0.0.1", 0), d, d) for d in dirs]


@contextlib.contextmanager
def _servers(ws: Workspace, clients: list[Client]) -> Iterator[list[Client]]:
    if clients[0].local is None:  # the user's servers
        yield clients
        return
    with fio_clients.local_servers(len(clients), ws.local_dir()) as started:
        yield [dataclasses.replace(c, server=s) for c, s in zip(clients, started, strict=True)]


def job_files(ws: Workspace, out: str, clients: Sequence[Client], job: dict[str, str]) -> list[str]:
    # on a unix socket fio would prefix file names with bytes of the socket path taken as
    # an IP address; each client has a directory of its own, so plain names suffice.
    # group_reporting: one block per client with all its jobs (numjobs=N), as a run on one
    # mount reports; without it each job came back apart under the same client name and
    # only the last was kept
    grouped = {**job, "group_reporting": "1"}
    return [fio_clients.job_file(f"{out}.client{i}.fio", c.directory,
                                 {"unique_filename": "0", **grouped} if c.server.sock else grouped)
            for i, c in enumerate(clients)]


def summed(each: Sequence[tuple[int, DaemonStats, Lookup]],
           named: Callable[[int], str] = lambda i: f"client {i}") -> DaemonStats:
    """The daemons of all clients as one, as for a daemon of several processes: CPU, I/O and
    peak memory summed (what the machine spent), each client's daemon in `processes`."""
    stats = [d for _i, d, _l in each]
    procs = tuple(dataclasses.replace(p, role=f"{named(i)} {p.role}") if d.processes else p
                  for i, d, lookup in each
                  for p in (d.processes or (ProcessStats(
                      d.pid, f"{named(i)} daemon",
                      " ".join(lookup.daemon.cmdline if lookup.daemon else ())[:200],
                      d.cpu_seconds, d.peak_rss_bytes if d.peak_rss_method == "VmHWM" else None),)))

    def total(attr: str) -> int | None:
        values = [getattr(d, attr) for d in stats]
        return None if any(v is None for v in values) else sum(values)

    return dataclasses.replace(
        stats[0], wall_seconds=max(d.wall_seconds for d in stats),
        cpu_seconds=sum(d.cpu_seconds for d in stats), cpu_percent=sum(d.cpu_percent for d in stats),
        peak_rss_bytes=sum(d.peak_rss_bytes for d in stats),
        peak_rss_method="VmHWM" if all(d.peak_rss_method == "VmHWM" for d in stats) else "sampled",
        read_bytes=total("read_bytes"), write_bytes=total("write_bytes"),
        cpu_window_seconds=max(d.cpu_window_seconds for d in stats), processes=procs)


def _pid_of(server: Server) -> Callable[[], int | None]:
    return lambda: server.proc.pid if server.proc else None


def _cold(cache: PageCache, rows: Sequence[ClientStats]) -> tuple[ColdRead, str]:
    """A cold read of many clients: each client's daemon against its own bytes read; one
    served from the page cache makes the whole read not cold."""
    found = [(c, *check_cold(cache, c.daemon, c.read.io_bytes if c.read and not c.write else 0))
             for c in rows]
    bad = [f"client {c.server}: {why}" for c, state, why in found if state == ColdRead.NOT_COLD]
    if bad:
        return ColdRead.NOT_COLD, "; ".join(bad)
    if found and all(state == ColdRead.VERIFIED for _c, state, _w in found):
        return ColdRead.VERIFIED, f"each of {len(found)} clients' daemons served its read"
    return ColdRead.UNCHECKED, ""


def measure(ws: Workspace, label: str, judged: bool, job: dict[str, str], n: int,
            where: str) -> WorkloadResult:
    """One round of a job on n clients at once."""
    remote = bool(ws.running.clients.fio_servers)
    clients = _remote(ws, n, where) if remote else _local(ws, n, where)
    out = ws.output(label)
    with _servers(ws, clients) as clients:
        servers = [c.server for c in clients]
        if fio_engine.is_reading(job):  # lay out each client's files, unmeasured
            layout = job_files(ws, out + ".layout", clients, {**job, "create_only": "1"})
            fio_clients.run(servers, layout, out + ".layout.json", ws.deadline(job))
            ws.recold()
        controller = fio_clients.Controller(servers, job_files(ws, out, clients, job), out + ".json")
        trees = [progress.TreeIo(_pid_of(s)) for s in servers]
        # the servers' job processes: the bytes moved here (nothing to count for remote ones)
        with ws.measured(label, lambda: sum(t() for t in trees),
                         None if remote else controller.stop, timed_io=not remote,
                         peers=0 if remote else n - 1) as w:
            each, total = controller.run(ws.deadline(job))
            w.expected = sum(d.io_bytes for d in (total.read, total.write) if d is not None)
        # the load generator's CPU, as fio counted it on each client
        tool = 100.0 * sum(c.cpu_seconds for c in each) / w.wall if w.wall > 0 else 0.0
    daemons: list[tuple[DaemonStats | None, Lookup]] = (
        [(w.daemon, w.lookup), *zip(w.peer_stats, (o for o, _m in w.peers), strict=True)]
        if not remote else
        [(None, Lookup(None, f"fio server {c.server.address} is one you started: its daemon is "
                       "on its own machine, not measured here")) for c in clients])
    rows = tuple(ClientStats(c.server.address, c.directory, r.read, r.write, d,
                             lookup.note if d is None else "")
                 for c, r, (d, lookup) in zip(clients, each, daemons, strict=True))
    measured = [(i, d, lookup) for i, (d, lookup) in enumerate(daemons) if d is not None]
    w.put(DaemonReading(summed(measured) if measured else None))
    if w.daemon is None:
        w.lookup = daemons[0][1]
    notes = [f"{n} clients on fio's client/server mode: bandwidth and IOPS are fio's 'All "
             "clients'; daemon CPU, I/O and peak memory the sum over the clients' daemons"]
    if len(measured) < n:
        notes.append(f"daemon figures of {n - len(measured)} of {n} clients missing: "
                     + "; ".join(sorted({lk.note for d, lk in daemons if d is None})))
    return ws.record(w, cold=_cold(w.cache, rows), name=label, kind=EngineKind.FIO, options=job,
                     read=total.read, write=total.write, tool_cpu_percent=tool, judged=judged,
                     output_file=out + ".json", notes=tuple(notes), clients=rows)
