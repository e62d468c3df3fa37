"""Command-line flags and ini keys: one row each, validated into frozen Settings.

Each option is a flag (--fsperf-x) and an ini key (fsperf_x). One precedence rule holds
for every setting, also where a marker can set it (rounds, warmup, baseline):
command line, then marker, then ini file, then the default. Every error names the value
and where it came from, as pytest-timeout does.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_fsperf.engine import fio_clients
from pytest_fsperf.errors import UsageError
from pytest_fsperf.hosts import spec as hosts_spec
from pytest_fsperf.infra import inputs
from pytest_fsperf.judge import history
from pytest_fsperf.measure import balloon, fusetrace, pagecache, placement, profile
from pytest_fsperf.mounts.registry import BackendConfig
from pytest_fsperf.options import parse
from pytest_fsperf.options.parse import Chosen, Raw, Source, choose
from pytest_fsperf.options.table import OPTIONS, Option
from pytest_fsperf.plan import conditions
from pytest_fsperf.saved import runs as saved
from pytest_fsperf.store import cost
from pytest_fsperf.vocab import Gate, Missing, StoreCache, Unsure

if TYPE_CHECKING:  # the settings are read from pytest's config; the core needs no pytest
    import pytest

T = TypeVar("T")


BY_NAME = {opt.name: opt for opt in OPTIONS}


@dataclass(frozen=True)
class Settings:
    mount: Path | None = None  # None: the embedded default, a fresh temp directory
    daemon_pid: int | None = None
    plain_dir: bool = False  # a --fsperf-mount that is not a mount point is accepted
    scale: float = 1.0
    json_path: Path | None = None
    backend: str | None = None
    mount_options: tuple[str, ...] = ()
    backend_config: BackendConfig = field(default_factory=BackendConfig)
    mount_timeout: float = 30.0
    workload_timeout: float | None = None  # None: derived from each workload
    lock_timeout: float = 900.0
    baseline: str | None = None
    gate: Gate = Gate.NONE
    baseline_any_scale: bool = False
    save_baseline: str | None = None
    rounds: int = 1
    warmup: bool = False
    inconclusive: Unsure = Unsure.FAIL
    missing_backend: Missing = Missing.FAIL
    machine_changed: Unsure | None = None  # None: as inconclusive
    jobfile: Path | None = None
    backend_store: str | None = None  # "minio": --fsperf-backend over the plugin's MinIO
    save: str | None = None
    autosave: bool = False
    storage: Path | None = None
    compare: str | None = None
    compare_last: int = 1
    build_id: str | None = None
    history: bool = False
    history_gate: bool = False
    markdown_path: Path | None = None
    html_path: Path | None = None
    benchmark_json: Path | None = None
    action_prefix: Path | None = None
    reference: str | None = None  # release gate: the reference build's binary
    candidate: str | None = None
    reference_mount: Path | None = None  # release gate between two existing mounts
    tolerance: float = 0.10
    gate_on: tuple[str, ...] = ()  # () : the default set (judge/deciding.py)
    ab_max_rounds: int = 100
    ab_seconds: float = 300.0
    gate_seconds: float | None = None  # one budget the session's gated workloads share
    stall_limit: float | None = None
    rss_settle: float | None = None
    cpus: placement.CpuSetting = placement.AUTO
    settle: balloon.Settle = balloon.Settle.AUTO
    store_cache: StoreCache = StoreCache.AUTO
    store_profile: conditions.StoreConditions = conditions.PROFILES["bare"]
    store_rtt: float | None = None
    store_ttfb: float | None = None
    store_bandwidth: float | None = None
    store_conn_bandwidth: float | None = None
    store_rate: tuple[float, float] | None = None
    store_errors: float | None = None
    store_resets: float | None = None
    store_corrupt: float | None = None
    store_tail: tuple[int, float] | None = None
    store_tls: bool | None = None
    fuse_trace: fusetrace.Tracing = fusetrace.Tracing.AUTO
    page_cache: pagecache.Counting = pagecache.Counting.AUTO
    ceilings: bool = False
    profiling: profile.Profiling = profile.Profiling.AUTO
    fio_servers: tuple[fio_clients.Server, ...] = ()
    hosts: tuple[hosts_spec.Host, ...] = ()
    ssh_config: Path | None = None
    host_python: str = "python3"
    pods: tuple[hosts_spec.Pod, ...] = ()
    reference_pods: tuple[hosts_spec.Pod, ...] = ()  # the reference side's, in a gate
    kubeconfig: Path | None = None
    meter_pod: str | None = None  # the measuring pod's template, as JSON text
    price: str = cost.DEFAULT
    prices_file: Path | None = None
    price_list: cost.PriceList | None = None  # the price list chosen (set by settings_from)
    root: Path = Path(".")  # rootdir: .fsperf/ lives here
    given: Mapping[str, Raw] = field(default_factory=dict)  # by Settings field: what the user wrote

    @property
    def store(self) -> conditions.StoreConditions:
        """The stores' conditions: the profile, with each condition given over it."""
        rate, tail = self.store_rate, self.store_tail
        return conditions.combined(
            self.store_profile, rtt=self.store_rtt, ttfb=self.store_ttfb,
            bandwidth=self.store_bandwidth, conn_bandwidth=self.store_conn_bandwidth,
            rate=rate[0] if rate else None, burst=rate[1] if rate else None,
            errors=self.store_errors, resets=self.store_resets, corrupt=self.store_corrupt,
            tail_every=tail[0] if tail else None, tail=tail[1] if tail else None)

    def where(self, name: str) -> str:
        """Where a setting was given ('--fsperf-baseline=x (command line)'), or ''."""
        raw = self.given.get(name)
        return raw.where if raw is not None else ""

    def chosen(self, name: str) -> Chosen[Any]:
        """A setting as a candidate for the precedence rule."""
        raw = self.given.get(name)
        value = getattr(self, name)
        if raw is None:
            return Chosen(value, Source.DEFAULT)
        return Chosen(value, raw.source, raw.where, (raw.over,) if raw.over else ())


def marker_value(value: T | None, where: str) -> Chosen[T] | None:
    """A marker's keyword as a candidate for the precedence rule (None: not given)."""
    return None if value is None else Chosen(value, Source.MARKER, where)


def for_item(settings: Settings, name: str, marker: T | None, where: str) -> Chosen[Any]:
    """A setting a marker may also give, resolved by the one rule."""
    return choose(settings.chosen(name), marker_value(marker, where))


MAX_VALUE = 8192  # characters of one option's value (a path, a list of hosts)


def shown(text: str, limit: int = 80) -> str:
    """A value as a message quotes it: cut, its control characters escaped."""
    text = text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _raw(config: pytest.Config, opt: Option) -> Raw | None:
    """The strongest of flag and ini key; where the flag beat the ini key, it says so."""
    ini_raw = None
    ini = str(config.getini(opt.name)).strip()
    if ini:
        inipath = config.inipath
        name = str(inipath) if inipath else "ini file"
        base = inipath.parent if inipath else config.rootpath
        ini_raw = Raw(ini, f"{opt.name} = {shown(ini)} (ini file {name})", base, Source.INI)
    value: Any = config.getoption(opt.name)
    if value is None:
        return ini_raw
    return Raw(str(value), f"{opt.flag}={shown(str(value))} (command line)", Path.cwd(), Source.COMMAND_LINE,
               ini_raw.where if ini_raw else "")


def check_ini(inipath: Path | None) -> None:
    """An fsperf_* key pytest-fsperf does not know (a typo would silently run the defaults,
    e.g. at scale 1): one line, with the key it may have meant, before anything runs."""
    if inipath is None:
        return
    for key in inputs.ini_keys(inipath):
        if key.startswith("fsperf") and key not in BY_NAME:
            near = difflib.get_close_matches(key, list(BY_NAME), n=1)
            raise UsageError(f"{key} (ini file {inipath}): unknown setting"
                             + (f"; did you mean {near[0]}?" if near else ""))


def read_settings(config: pytest.Config) -> Settings:
    check_ini(config.inipath)
    given = {opt.field: raw for opt in OPTIONS if (raw := _raw(config, opt)) is not None}
    return settings_from(given, config.rootpath)


def _converted(opt: Option, raw: Raw) -> Any:
    """A row's value; a path the system refuses (a name too long, a loop) is one usage line
    naming the option, not a traceback. Overlong text is cut in the line."""
    if len(raw.text) > MAX_VALUE:
        raise UsageError(f"{raw.where}: {len(raw.text)} characters; at most {MAX_VALUE}")
    odd = next((c for c in raw.text if (ord(c) < 32 and c not in "\t\n") or ord(c) == 127), None)
    if odd is not None:  # a NUL in a path was a traceback at the first use of it
        raise UsageError(f"{raw.where}: holds a control character ({odd!r}); no setting takes one")
    try:
        return opt.convert(raw)
    except OSError as exc:
        raise UsageError(f"{raw.where}: {exc.strerror or exc}") from None


def settings_from(given: Mapping[str, Raw], root: Path) -> Settings:
    """Every row converted (its default where not given), then the rules across rows."""
    backend, mount, options = given.get("backend"), given.get("mount"), given.get("mount_options")
    if backend is not None and mount is not None:
        raise UsageError(f"{backend.where}: conflicts with {mount.where}; "
                         "give an existing mount or a backend to mount, not both")
    if options is not None and backend is None:
        raise UsageError(f"{options.where}: needs --fsperf-backend (options of which backend?)")
    reference, candidate = given.get("reference"), given.get("candidate")
    if reference is not None and backend is None:
        raise UsageError(f"{reference.where}: needs --fsperf-backend (a build of which backend's "
                         "daemon?)")
    ref_mount = given.get("reference_mount")
    if ref_mount is not None and mount is None:
        raise UsageError(f"{ref_mount.where}: needs --fsperf-mount (the candidate's mount)")
    if ref_mount is not None and reference is not None:
        raise UsageError(f"{ref_mount.where}: conflicts with {reference.where}; gate two builds "
                         "of a backend or two existing mounts, not both")
    pods, hosts = given.get("pods"), given.get("hosts")
    if pods is not None and hosts is not None:
        raise UsageError(f"{pods.where}: conflicts with {hosts.where}; clients in pods or on "
                         "hosts over SSH, not both")
    if pods is not None and given.get("meter_pod") is None:
        raise UsageError(f"{pods.where}: needs --fsperf-k8s-meter-pod (the pod that measures "
                         "each node's daemon: its image has pytest-fsperf)")
    ref_pods = given.get("reference_pods")
    if ref_pods is not None and (pods is None or ref_mount is None):
        raise UsageError(f"{ref_pods.where}: needs --fsperf-k8s and --fsperf-reference-mount (the "
                         "candidate's pods, and this machine's mount of the reference side)")
    last = given.get("compare_last")
    if last is not None and (given.get("compare") is None or given["compare"].text.strip() != "latest"):
        raise UsageError(f"{last.where}: needs --fsperf-compare=latest (the runs to choose from)")
    if candidate is not None and reference is None:
        raise UsageError(f"{candidate.where}: needs --fsperf-reference (the build to compare with)")
    values = {opt.field: _converted(opt, given[opt.field]) if opt.field in given else opt.default
              for opt in OPTIONS if opt.field not in ("mount", "reference_mount")}
    if mount is not None:  # probed with the timeout the user gave
        values["mount"] = parse.mount(mount, values["mount_timeout"], values["plain_dir"])
    if ref_mount is not None:
        values["reference_mount"] = parse.mount(ref_mount, values["mount_timeout"], values["plain_dir"])
        if values["reference_mount"] == values["mount"]:
            raise UsageError(f"{ref_mount.where}: is the candidate's mount itself "
                             f"({mount.where if mount else ''})")
    if ref_pods is not None and len(values["reference_pods"]) != len(values["pods"]):
        raise UsageError(f"{ref_pods.where}: names {len(values['reference_pods'])} pods, "
                         f"--fsperf-k8s {len(values['pods'])}: a gate compares like with like")
    try:
        values["price_list"] = cost.choose(cost.load(values["prices_file"]), values["price"])
    except cost.PriceError as exc:
        raw = given.get("price") or given.get("prices_file")
        raise UsageError(f"{raw.where if raw else 'fsperf_price'}: {exc}") from None
    if values["save"] is None and values["autosave"]:
        values["save"] = saved.autosave_name()
    for name in ("history", "history_gate"):
        raw = given.get(name)
        if raw is None or not values[name]:
            continue
        if missing := history.available():
            raise UsageError(f"{raw.where}: {missing}")
        if name == "history_gate" and values["save"] is None:
            raise UsageError(f"{raw.where}: needs --fsperf-save or --fsperf-autosave (the run "
                             "that joins the history)")
    return Settings(**values, root=root, given=dict(given))
