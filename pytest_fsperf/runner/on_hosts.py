"""fio on several hosts at once (--fsperf-hosts), each host's daemon measured there.

Per run: a link to each host (hosts/link.py: the agent over SSH, its fio server forwarded to
a socket here), the job laid out on every host, each host's page cache dropped where a cold
start is pending, each host's daemon meter started, fio's controller here driving every
server at once, each meter stopped. Each host's row holds fio's figures for it, its daemon's
CPU, memory and I/O over its window, and its own cold check; the aggregate is fio's "All
clients" with the daemons summed. Job directories: the test's work dir, seen through each
host's mount of the same bucket (as with --fsperf-fio-servers)."""

from __future__ import annotations

import os

from pytest_fsperf.engine import fio as fio_engine
from pytest_fsperf.engine import fio_clients
from pytest_fsperf.errors import MeasurementError, UsageError
from pytest_fsperf.hosts import link
from pytest_fsperf.hosts.spec import SshSettings
from pytest_fsperf.measure.cache import check_cold
from pytest_fsperf.mounts.daemon import Lookup
from pytest_fsperf.result.daemon import DaemonStats
from pytest_fsperf.result.parts import ClientStats
from pytest_fsperf.result.store import Requests
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.runner.clients import Client, client_dirs, job_files, summed
from pytest_fsperf.runner.readings import DaemonReading, FuseReading, StoreReading, TimelineReading
from pytest_fsperf.runner.workspace import Workspace
from pytest_fsperf.store.requests import combined
from pytest_fsperf.vocab import ColdRead, EngineKind, PageCache


def _clients(ws: Workspace, n: int, where: str) -> list[tuple[str, str]]:
    """(host, its job directory) for the first n hosts; the directories made here."""
    given = ws.settings.hosts
    if n > len(given):
        raise UsageError(f"{where}: clients={n}, but --fsperf-hosts names {len(given)} "
                         f"({ws.settings.where('hosts')})")
    rel = os.path.relpath(ws.target.logical(str(ws.workdir)), ws.target.path)
    return [(h.shown, os.path.join(h.mount, rel, os.path.basename(local)))
            for h, local in zip(given[:n], client_dirs(ws, n), strict=True)]


def _cold(rows: list[ClientStats]) -> tuple[ColdRead, str]:
    bad = [f"host {c.host}: {c.cold_evidence}" for c in rows if c.cold_read == ColdRead.NOT_COLD]
    if bad:
        return ColdRead.NOT_COLD, "; ".join(bad)
    if rows and all(c.cold_read == ColdRead.VERIFIED for c in rows):
        return ColdRead.VERIFIED, f"each of {len(rows)} hosts' daemons served its read"
    return ColdRead.UNCHECKED, ""


def measure(ws: Workspace, label: str, judged: bool, job: dict[str, str], n: int,
            where: str) -> WorkloadResult:
    """One round of a job on n hosts at once."""
    hosts = ws.settings.hosts[:n]
    dirs = _clients(ws, n, where)
    ssh = SshSettings(str(ws.settings.ssh_config) if ws.settings.ssh_config else None,
                      ws.settings.host_python)
    out = ws.output(label)
    with link.links(hosts, ssh, ws.local_dir()) as found:
        clients = [Client(lk.server, d, None) for lk, (_h, d) in zip(found, dirs, strict=True)
                   if lk.server is not None]
        servers = [c.server for c in clients]
        if fio_engine.is_reading(job):  # lay out each host's files, unmeasured
            fio_clients.run(servers, job_files(ws, out + ".layout", clients,
                                               {**job, "create_only": "1"}),
                            out + ".layout.json", ws.deadline(job))
            ws.recold()
        pending = ws.pending_cold
        host_cache = ([PageCache(v) for v in link.everywhere(found, "cold")] if pending
                      else [PageCache.WARM] * len(found))
        controller = fio_clients.Controller(servers, job_files(ws, out, clients, job), out + ".json")
        with ws.measured(label, lambda: 0, here=False) as w:
            starts = link.everywhere(found, "start")
            try:
                each, total = controller.run(ws.deadline(job))
            except MeasurementError as exc:
                gone = link.dropped(found)
                if gone:  # the cause, named: a host left, not fio
                    raise link.HostError(f"host {', '.join(gone)} dropped out during the run "
                                         f"({exc})") from None
                raise
            stops = link.everywhere(found, "stop")
    rows = []
    for lk, (host, d), r, s, cache in zip(found, dirs, each, stops, host_cache, strict=True):
        stats = link.daemon_stats(s["daemon"])
        state, evidence = check_cold(cache, stats, r.read.io_bytes if r.read and not r.write else 0)
        counted, why = _requests(s.get("requests")), s.get("requests_note", "")
        if isinstance(counted, str):
            counted, why = None, counted
        rows.append(ClientStats(lk.server.address if lk.server else host, d, r.read, r.write,
                                stats, "" if stats else f"on {host}: {s['note']}", host,
                                state, evidence, counted,
                                "" if counted else f"on {host}: {why}"))
    measured: list[tuple[int, DaemonStats, Lookup]] = [
        (i, c.daemon, Lookup(None, c.daemon_note)) for i, c in enumerate(rows) if c.daemon]
    w.put(DaemonReading(summed(measured, lambda i: f"host {rows[i].host}") if measured else None),
          # this machine's tracepoints and timeline saw none of the hosts' work
          FuseReading(None, "not traced: the workload ran on the hosts"), TimelineReading(None))
    if w.daemon is None:
        w.lookup = Lookup(None, "; ".join(c.daemon_note for c in rows))
    hosts_counted = [c.requests for c in rows if c.requests is not None]
    by_store = w.requests is not None  # a store's own counters: every host at once
    if not by_store and hosts_counted and len(hosts_counted) == len(rows):
        store = w.get(StoreReading)
        w.put(StoreReading(combined(hosts_counted, "JuiceFS .stats on each host"), "",
                           store.daemon_counters if store else None))
    exited = [c.host for c, s in zip(rows, stops, strict=True) if s.get("exited")]
    if exited:
        raise link.HostError(f"{label}: the FUSE daemon on host {', '.join(exited)} exited "
                             "during the run")
    aligned = [lk.to_ours(t) for lk, t in zip(found, starts, strict=True)]
    notes = [f"{n} hosts over SSH, each on fio's client/server mode: bandwidth and IOPS are "
             "fio's 'All clients'; daemon CPU, I/O and peak memory measured on each host, "
             "summed here",
             f"the hosts' windows started within {1000 * link.skew(aligned):.0f} ms of each other "
             f"on this machine's clock (each host's clock compared over its channel, round trip "
             f"at most {1000 * max(lk.rtt for lk in found):.1f} ms)"]
    if by_store:
        notes.append(f"object requests: the store's counters, all {n} hosts together (and "
                     "anything else that used the store in the window)")
    if len(measured) < n:
        notes.append(f"daemon figures of {n - len(measured)} of {n} hosts missing: "
                     + "; ".join(c.daemon_note for c in rows if c.daemon is None))
    tool = 100.0 * sum(c.cpu_seconds for c in each) / w.wall if w.wall > 0 else 0.0
    return ws.record(w, cold=_cold(rows), name=label, kind=EngineKind.FIO, options=job,
                     read=total.read, write=total.write, tool_cpu_percent=tool, judged=judged,
                     output_file=out + ".json", notes=tuple(notes), clients=tuple(rows))


def _requests(given: object) -> Requests | str | None:
    """A host's request counts as their type, or why they could not be read."""
    if not given:
        return None
    try:
        return Requests.from_dict(given) if isinstance(given, dict) else "not an object"
    except ValueError as exc:
        return f"its request counts could not be read: {exc}"[:300]
