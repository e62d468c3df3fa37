"""fio on several hosts at once (--fsperf-hosts), each host's daemon measured there; or in
several pods at once (--fsperf-k8s), each node's daemon measured by a measuring pod there.

Per run: a link to each host (hosts/link.py: the agent over SSH, its fio server forwarded to
a socket here), the job laid out on every host, each host's page cache dropped where a cold
start is pending, each host's daemon meter started, fio's controller here driving every
server at once, each meter stopped. Each host's row holds fio's figures for it, its daemon's
CPU, memory and I/O over its window, and its own cold check; the aggregate is fio's "All
clients" with the daemons summed. Job directories: the test's work dir, seen through each
host's mount of the same bucket (as with --fsperf-fio-servers)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator

from pytest_fsperf.engine import fio as fio_engine
from pytest_fsperf.engine import fio_clients
from pytest_fsperf.engine.fio_clients import ClientResult
from pytest_fsperf.errors import MeasurementError, UsageError
from pytest_fsperf.hosts import link, pods
from pytest_fsperf.hosts.spec import Pod
from pytest_fsperf.measure.cache import check_cold
from pytest_fsperf.measure.daemons import DaemonReading
from pytest_fsperf.measure.fuse_requests import FuseReading
from pytest_fsperf.measure.store_requests import StoreReading
from pytest_fsperf.measure.timeline import TimelineReading
from pytest_fsperf.mounts.daemon import Daemon, Lookup
from pytest_fsperf.result.daemon import DaemonStats
from pytest_fsperf.result.parts import ClientStats
from pytest_fsperf.result.store import Requests
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.runner.clients import Client, client_dirs, job_files, summed
from pytest_fsperf.runner.workspace import Workspace
from pytest_fsperf.store.requests import combined
from pytest_fsperf.vocab import ColdRead, EngineKind, PageCache


def _clients(ws: Workspace, n: int, where: str) -> list[tuple[str, str]]:
    """(host, its job directory) for the first n hosts; the directories made here."""
    given = places(ws)
    if n > len(given):
        raise UsageError(f"{where}: clients={n}, but {ws.running.clients.places_given} names "
                         f"{len(given)}")
    rel = os.path.relpath(ws.target.logical(str(ws.workdir)), ws.target.path)
    return [(h.shown, os.path.join(h.mount, rel, os.path.basename(local)))
            for h, local in zip(given[:n], client_dirs(ws, n), strict=True)]


def places(ws: Workspace) -> tuple[link.Place, ...]:
    """The hosts or the pods the clients run on (none: the clients run here); in a gate
    between two mounts, on the reference side, the reference's pods."""
    s = ws.running.clients
    if s.reference_pods and s.reference_mount is not None and (
            os.path.realpath(ws.target.path) == os.path.realpath(s.reference_mount)):
        return s.reference_pods
    return s.pods or s.hosts


@contextlib.contextmanager
def _reached(ws: Workspace, n: int) -> Iterator[link.Reached]:
    s = ws.running.clients
    if s.pods:
        assert s.meter_pod is not None  # the settings require it with --fsperf-k8s
        kube = pods.Kube(pods.kubectl(), s.kubeconfig, s.ssh.python, json.loads(s.meter_pod))
        chosen = places(ws)
        with pods.reached([p for p in chosen[:n] if isinstance(p, Pod)], kube,
                          ws.local_dir()) as found:
            yield found
        return
    with link.links(s.hosts[:n], s.ssh, ws.local_dir()) as made:
        yield link.Reached(made, made, list(range(len(made))), [f"host {h.host.shown}" for h in made],
                           "over SSH")


def _cold(rows: list[ClientStats]) -> tuple[ColdRead, str]:
    bad = [f"{c.place}: {c.cold_evidence}" for c in rows if c.cold_read == ColdRead.NOT_COLD]
    if bad:
        return ColdRead.NOT_COLD, "; ".join(bad)
    checked = [c for c in rows if c.daemon is not None or c.cold_read is not None]
    if checked and all(c.cold_read == ColdRead.VERIFIED for c in checked):
        return ColdRead.VERIFIED, f"each of {len(checked)} daemons served its read"
    return ColdRead.UNCHECKED, ""


def measure(ws: Workspace, label: str, judged: bool, job: dict[str, str], n: int,
            where: str) -> WorkloadResult:
    """One round of a job on n hosts (or pods) at once."""
    dirs = _clients(ws, n, where)
    out = ws.output(label)
    with _reached(ws, n) as at:
        clients = [Client(lk.server, d, None) for lk, (_h, d) in zip(at.clients, dirs, strict=True)
                   if lk.server is not None]
        servers = [c.server for c in clients]
        if fio_engine.is_reading(job):  # lay out each host's files, unmeasured
            fio_clients.run(servers, job_files(ws, out + ".layout", clients,
                                               {**job, "create_only": "1"}),
                            out + ".layout.json", ws.deadline(job))
            ws.recold()
        pending = ws.pending_cold
        cache = ([PageCache(v) for v in link.everywhere(at.meters, "cold")] if pending
                 else [PageCache.WARM] * len(at.meters))
        controller = fio_clients.Controller(servers, job_files(ws, out, clients, job), out + ".json")
        with ws.measured(label, lambda: 0, here=False) as w:
            starts = link.everywhere(at.meters, "start")
            try:
                each, total = controller.run(ws.deadline(job))
            except MeasurementError as exc:
                gone = list(dict.fromkeys(link.dropped([*at.clients, *at.meters])))
                if gone:  # the cause, named: a host left, not fio
                    raise link.HostError(f"{', '.join(gone)} dropped out during the run "
                                         f"({exc})") from None
                raise
            stops = link.everywhere(at.meters, "stop")
    rows = _rows(at, dirs, each, stops, cache)
    measured: list[tuple[int, DaemonStats, Lookup]] = [
        (i, c.daemon, _named(c.daemon, stops[at.meter_of[i]].get("command")))
        for i, c in enumerate(rows) if c.daemon]
    w.put(DaemonReading(summed(measured, lambda i: at.where[at.meter_of[i]]) if measured else None),
          # this machine's tracepoints and timeline saw none of the hosts' work
          FuseReading(None, "not traced: the workload ran on the hosts"), TimelineReading(None))
    if w.daemon is None:
        w.lookup = Lookup(None, "; ".join(c.daemon_note for c in rows))
    hosts_counted = [c.requests for c in rows if c.requests is not None]
    by_store = w.requests is not None  # a store's own counters: every host at once
    if not by_store and hosts_counted and len(hosts_counted) == len(at.meters):
        store = w.get(StoreReading)
        w.put(StoreReading(combined(hosts_counted, "JuiceFS .stats on each host"), "",
                           store.daemon_counters if store else None))
    exited = [at.where[j] for j, s in enumerate(stops) if s.get("exited")]
    if exited:
        raise link.HostError(f"{label}: the FUSE daemon on {', '.join(exited)} exited "
                             "during the run")
    aligned = [lk.to_ours(t) for lk, t in zip(at.meters, starts, strict=True)]
    notes = [_how(at, n),
             f"the daemons' windows started within {1000 * link.skew(aligned):.0f} ms of each "
             f"other on this machine's clock (each clock compared over its channel, round trip "
             f"at most {1000 * max(lk.rtt for lk in at.meters):.1f} ms)"]
    if by_store:
        notes.append(f"object requests: the store's counters, all {n} clients together (and "
                     "anything else that used the store in the window)")
    if len(measured) < len(at.meters):
        kind = "hosts" if at.meters is at.clients else "node mounts"
        notes.append(f"daemon figures of {len(at.meters) - len(measured)} of {len(at.meters)} "
                     f"{kind} missing: " + "; ".join(
                         c.daemon_note for c in rows if c.daemon is None and not c.daemon_of))
    tool = 100.0 * sum(c.cpu_seconds for c in each) / w.wall if w.wall > 0 else 0.0
    return ws.record(w, cold=_cold(rows), name=label, kind=EngineKind.FIO, options=job,
                     read=total.read, write=total.write, tool_cpu_percent=tool, judged=judged,
                     output_file=out + ".json", notes=tuple(notes), clients=tuple(rows))


def _named(stats: DaemonStats, command: object) -> Lookup:
    """The daemon as its host named it (its command line, as the agent read it there)."""
    words = tuple(str(command).split()) if isinstance(command, str) and command else ()
    return Lookup(Daemon(stats.pid, 0, words, "on its host") if words else None, "")


def _how(at: link.Reached, n: int) -> str:
    if at.meters is at.clients:
        return (f"{n} hosts over SSH, each on fio's client/server mode: bandwidth and IOPS are "
                "fio's 'All clients'; daemon CPU, I/O and peak memory measured on each host, "
                "summed here")
    return (f"{n} pods over kubectl exec, each on fio's client/server mode: bandwidth and IOPS "
            f"are fio's 'All clients'; the daemon of each of {len(at.meters)} node mounts "
            "measured by a measuring pod on its node (in the row of its first pod), summed here")


def _rows(at: link.Reached, dirs: list[tuple[str, str]], each: list[ClientResult],
          stops: list[dict[str, object]], cache: list[PageCache]) -> list[ClientStats]:
    """Each client's row: fio's figures; its daemon's in the first row of those it serves."""
    rows = []
    for i, (lk, (host, d), r) in enumerate(zip(at.clients, dirs, each, strict=True)):
        j = at.meter_of[i]
        s, first = stops[j], at.meter_of.index(j) == i
        pod = at.meters is not at.clients
        place = f"{lk.host.shown} ({at.where[j]})" if pod else host
        if not first:
            shared = at.clients[at.meter_of.index(j)].named
            rows.append(ClientStats(lk.server.address if lk.server else host, d, r.read, r.write,
                                    None, f"its daemon is measured in the row of {shared}", place,
                                    daemon_of=shared, pod=pod))
            continue
        stats = link.daemon_stats(s["daemon"])  # type: ignore[arg-type]
        read = sum(x.read.io_bytes for k, x in enumerate(each)
                   if at.meter_of[k] == j and x.read and not x.write)
        state, evidence = check_cold(cache[j], stats, read)
        given, why = _requests(s.get("requests")), str(s.get("requests_note", ""))
        counted = given if isinstance(given, Requests) else None
        why = given if isinstance(given, str) else why
        rows.append(ClientStats(lk.server.address if lk.server else host, d, r.read, r.write,
                                stats, "" if stats else f"on {at.where[j]}: {s['note']}", place,
                                state, evidence, counted,
                                "" if counted else f"on {at.where[j]}: {why}", pod=pod))
    return rows


def _requests(given: object) -> Requests | str | None:
    """A host's request counts as their type, or why they could not be read."""
    if not given:
        return None
    try:
        return Requests.from_dict(given) if isinstance(given, dict) else "not an object"
    except ValueError as exc:
        return f"its request counts could not be read: {exc}"[:300]
