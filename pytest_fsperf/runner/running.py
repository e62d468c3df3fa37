"""What the runner reads of the session's settings, resolved once when the session starts
(session/state.py) and then fixed: the runner never reads the 70 flags themselves, only
this, so what each stage depends on is stated here. A setting a message names carries where
it was given (its flag or ini key) with it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pytest_fsperf.engine.fio_clients import Server
from pytest_fsperf.hosts.spec import Host, Pod, SshSettings
from pytest_fsperf.measure.balloon import Settle
from pytest_fsperf.measure.fusetrace import Tracing
from pytest_fsperf.measure.placement import AUTO, CpuSetting
from pytest_fsperf.measure.profile import Profiling
from pytest_fsperf.store.cost import PriceList
from pytest_fsperf.vocab import StoreCache


@dataclass(frozen=True)
class Clients:
    """Where many clients run: fio servers, hosts over SSH or pods (at most one kind), and
    what reaching them takes; each list with where it was given."""

    fio_servers: tuple[Server, ...] = ()
    fio_servers_given: str = ""  # e.g. "--fsperf-fio-servers=... (command line)"
    hosts: tuple[Host, ...] = ()
    pods: tuple[Pod, ...] = ()
    places_given: str = ""  # where the hosts or the pods were named
    reference_pods: tuple[Pod, ...] = ()  # the reference side's, in a gate between two mounts
    reference_mount: Path | None = None
    ssh: SshSettings = field(default_factory=SshSettings)
    kubeconfig: str | None = None
    meter_pod: str | None = None  # the measuring pod's template, as JSON text

    @property
    def elsewhere(self) -> bool:
        """The clients' daemons run on other hosts or nodes (nothing here sees their work)."""
        return bool(self.hosts or self.pods)


@dataclass(frozen=True)
class Running:
    scale: float = 1.0  # every size is multiplied by it
    workload_timeout: float | None = None  # None: derived from each workload
    stall_limit: float | None = None  # s without progress before a workload is stopped
    cpus: CpuSetting = AUTO
    settle: Settle = Settle.AUTO
    store_cache: StoreCache = StoreCache.AUTO
    fuse_trace: Tracing = Tracing.AUTO
    profiling: Profiling = Profiling.AUTO
    price_list: PriceList | None = None
    ab_max_rounds: int = 100
    ab_seconds: float = 300.0
    clients: Clients = field(default_factory=Clients)
