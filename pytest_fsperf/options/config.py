"""Command-line flags and ini keys: one row each, validated into frozen Settings.

Each option is a flag (--fsperf-x) and an ini key (fsperf_x). One precedence rule holds
for every setting, also where a marker can set it (rounds, warmup, baseline):
command line, then marker, then ini file, then the default. Every error names the value
and where it came from, as pytest-timeout does.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import iniconfig

from pytest_fsperf.engine import fio_clients
from pytest_fsperf.errors import UsageError
from pytest_fsperf.hosts import spec as hosts_spec
from pytest_fsperf.infra import inputs
from pytest_fsperf.judge import history
from pytest_fsperf.measure import balloon, fusetrace, pagecache, placement, profile
from pytest_fsperf.mounts.registry import BackendConfig
from pytest_fsperf.options import parse
from pytest_fsperf.options.parse import RULE, Chosen, Raw, Source, choose
from pytest_fsperf.plan import conditions
from pytest_fsperf.saved import runs as saved
from pytest_fsperf.store import cost
from pytest_fsperf.vocab import Gate, StoreCache, Unsure

if TYPE_CHECKING:  # the settings are read from pytest's config; the core needs no pytest
    import pytest

T = TypeVar("T")


@dataclass(frozen=True)
class Option:
    """One row: ini key (the flag is --fsperf-... with dashes), Settings field, converter,
    default, help."""

    name: str
    field: str
    convert: Callable[[Raw], Any]
    default: Any
    metavar: str
    help: str

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


OPTIONS = (
    Option("fsperf_mount", "mount", parse.text, None, "PATH", "filesystem under test (a mounted "
           "directory); default: a fresh directory under the system temp dir"),
    Option("fsperf_plain_dir", "plain_dir", parse.flag, False, "0|1",
           "accept a --fsperf-mount (and --fsperf-reference-mount) that is not itself a mount "
           "point: a directory inside one (default 0: refused, so that a failed mount step "
           "does not gate the machine's own disk)"),
    Option("fsperf_daemon_pid", "daemon_pid", parse.pid, None, "PID",
           "PID of the FUSE daemon; default: found from the mount"),
    Option("fsperf_scale", "scale", parse.scale, 1.0, "FACTOR",
           "multiply every workload size and file count (default 1)"),
    Option("fsperf_json", "json_path", parse.out_file, None, "PATH",
           "write every result, with the environment, as JSON to PATH"),
    Option("fsperf_backend", "backend", parse.text, None, "NAME", "mount this backend for the session "
           "(local, bindfs, rclone, s3fs, ossfs, ossfs2, goofys, juicefs, mountpoint-s3, or one you "
           "define)"),
    Option("fsperf_mount_options", "mount_options", parse.words, (), "OPTIONS",
           "options for --fsperf-backend, as on its command line"),
    Option("fsperf_backend_config", "backend_config", parse.backend_config, BackendConfig(), "FILE",
           "INI file: [fsperf] endpoint, bucket, credentials ...; [backend NAME] sections define "
           "backends"),
    Option("fsperf_backend_store", "backend_store", parse.choice("minio"), None, "minio",
           "with --fsperf-backend: mount it over the plugin's own MinIO on 127.0.0.1 (as the "
           "marker's config=\"fsperf_s3\"), e.g. rclone, which otherwise mounts a local directory"),
    Option("fsperf_mount_timeout", "mount_timeout", parse.timeout, 30.0, "SECONDS", "seconds a backend "
           "may take to mount, and an existing mount to answer its first touch (default 30)"),
    Option("fsperf_workload_timeout", "workload_timeout", parse.positive, None, "SECONDS",
           "seconds after which a workload is taken to hang (default: its runtime, or its bytes "
           "at 2 MB/s, plus 2 minutes)"),
    Option("fsperf_lock_timeout", "lock_timeout", parse.positive, 900.0, "SECONDS",
           "seconds a test waits for the machine lock another session of yours holds, then "
           "fails naming the holder (default 900; a lock another user holds fails at once)"),
    Option("fsperf_baseline", "baseline", parse.name, None, "NAME", "compare each scenario with this "
           "baseline (shipped, e.g. ossfs-2.0.4, or saved with --fsperf-save-baseline)"),
    Option("fsperf_gate", "gate", parse.member(Gate), Gate.NONE, "WHAT",
           "'baseline': fail a scenario that misses its baseline by more than the tolerance; "
           "default 'none': only report measured / documented"),
    Option("fsperf_baseline_any_scale", "baseline_any_scale", parse.flag, False, "0|1",
           "1: let --fsperf-gate=baseline pass or fail a shipped baseline's figures also when "
           "--fsperf-scale is not 1 (default: such a comparison is shown and labelled, never "
           "judged: the documents measured at full size)"),
    Option("fsperf_rounds", "rounds", parse.rounds, 1, "N",
           "run every workload N times and judge the medians (default 1)"),
    Option("fsperf_warmup", "warmup", parse.flag, False, "0|1",
           "1: run one unjudged, discarded warm-up round before the rounds"),
    Option("fsperf_inconclusive", "inconclusive", parse.member(Unsure), Unsure.FAIL, "fail|warn",
           "when the rounds' spread is too wide to decide a threshold: 'fail' (default) or 'warn'"),
    Option("fsperf_machine_changed", "machine_changed", parse.member(Unsure), None, "fail|warn",
           "when a saved-run comparison finds the machine canary moved (the machine, not the "
           "filesystem, changed): 'fail' or 'warn' (default: as --fsperf-inconclusive)"),
    Option("fsperf_save", "save", parse.name, None, "NAME",
           "save this run (every round's figures, the environment) as NAME in the storage directory"),
    Option("fsperf_autosave", "autosave", parse.flag, False, "0|1",
           "1: save every run, named by its start time"),
    Option("fsperf_build_id", "build_id", parse.build_id, None, "ID",
           "what build this run measures (a commit, a version), recorded in saved runs for "
           "`fsperf history` (default: $GIT_COMMIT, $GITHUB_SHA or $CI_COMMIT_SHA; the "
           "daemon binary's SHA-256 is recorded too)"),
    Option("fsperf_history", "history", parse.flag, False, "0|1",
           "1: at the end, show the change points of each workload's series over the saved "
           "runs, this one included (needs pytest-fsperf[history])"),
    Option("fsperf_history_gate", "history_gate", parse.flag, False, "0|1",
           "1: fail a workload whose newest saved runs (2-5 of them, this one last) start a "
           "level worse than before by more than the tolerance, found as a change point over "
           "the saved runs (needs pytest-fsperf[history] and --fsperf-save or --fsperf-autosave)"),
    Option("fsperf_compare_last", "compare_last", parse.rounds, 1, "N",
           "with --fsperf-compare=latest: compare with the last N saved runs whose fingerprint "
           "matches (their run-to-run spread), not only the newest"),
    Option("fsperf_storage", "storage", parse.storage, None, "DIR",
           "where runs are saved (default .fsperf/runs under the rootdir)"),
    Option("fsperf_compare", "compare", parse.compare, None, "NAME", "compare with a saved run (NAME or "
           "'latest'): regression, improvement, pass or inconclusive per workload"),
    Option("fsperf_markdown", "markdown_path", parse.out_file, None, "PATH",
           "write a Markdown summary to PATH (e.g. $GITHUB_STEP_SUMMARY)"),
    Option("fsperf_benchmark_json", "benchmark_json", parse.out_file, None, "PATH",
           "write every workload in pytest-benchmark's JSON format to PATH (needs pytest-benchmark)"),
    Option("fsperf_html", "html_path", parse.out_file, None, "PATH",
           "write a self-contained HTML report with charts to PATH"),
    Option("fsperf_benchmark_action", "action_prefix", parse.out_file, None, "PREFIX",
           "write github-action-benchmark files PREFIX-bigger.json and PREFIX-smaller.json"),
    Option("fsperf_save_baseline", "save_baseline", parse.name, None, "NAME",
           "save this run's figures as baseline NAME in .fsperf/baselines/"),
    Option("fsperf_reference", "reference", parse.executable, None, "BINARY",
           "release gate: run every workload on this build of --fsperf-backend's daemon (A) and "
           "on the candidate (B), interleaved, each run after a cold remount; B worse fails"),
    Option("fsperf_candidate", "candidate", parse.executable, None, "BINARY",
           "the candidate build for --fsperf-reference (default: the backend's binary on PATH)"),
    Option("fsperf_reference_mount", "reference_mount", parse.text, None, "DIR",
           "release gate between two existing mounts (of the same bucket): the reference (A) "
           "mounted at DIR, the candidate (B) at --fsperf-mount; every workload on both, "
           "interleaved, each after a page-cache drop; B worse fails"),
    Option("fsperf_tolerance", "tolerance", parse.tolerance, 0.10, "PERCENT",
           "how far B may be from A (or this run from a saved one, or from a baseline) and still "
           "be the same (default 10%; marker tolerance=)"),
    Option("fsperf_ab_max_rounds", "ab_max_rounds", parse.pairs, 100, "N",
           "a safety cap on the pairs of an interleaved A/B (default 100); the time budget "
           "decides how many fit"),
    Option("fsperf_ab_seconds", "ab_seconds", parse.timeout, 300.0, "SECONDS",
           "an interleaved A/B adds pairs until decisive or until this many seconds of wall "
           "time are spent, layout and cold starts included; a pair that would not fit is not "
           "started (default 300)"),
    Option("fsperf_gate_seconds", "gate_seconds", parse.session_seconds, None, "SECONDS",
           "one time budget for all the gated workloads of the session (--fsperf-reference, "
           "--fsperf-reference-mount): each gets what is left over the tests still to run, at "
           "most --fsperf-ab-seconds, so time one decided early goes to those after it; the "
           "report says how the time went (default: none, each has --fsperf-ab-seconds)"),
    Option("fsperf_cpus", "cpus", lambda raw: placement.parse(raw.text, raw.where),
           placement.AUTO, "auto|split|off|D/L",
           "pin the daemon's threads and the load to CPUs for every run: split (the daemon on "
           "the upper half, the load on the lower), or DAEMON/LOAD CPU lists (e.g. 1/0); auto "
           "(default): split in an interleaved A/B, where runs must meet the same placement, "
           "the scheduler's choice elsewhere"),
    Option("fsperf_settle", "settle", parse.member(balloon.Settle),
           balloon.Settle.AUTO, "auto|on|off",
           "on a VM whose balloon reports free memory to the host, wait after each cache drop "
           "until the reporting is done, so that every cold read meets the same memory (2-15 s "
           "per cold start): auto (default) in an interleaved A/B once its runs have spread "
           "past 1.5x without it (the pairs so far are dropped; only for runs that fill page "
           "cache), on: every cold start"),
    Option("fsperf_store_cache", "store_cache", parse.member(StoreCache), StoreCache.AUTO,
           "auto|drop|keep",
           "what a cold start does to the page cache of what a FUSE daemon reads from: drop "
           "(drop_caches, the whole machine's), keep (only the FUSE files' pages, the daemon "
           "remounted where the plugin mounts it: a local store's files stay in memory, so that "
           "every run of a gate meets one state of them), or auto (default: keep in a release "
           "gate between builds, drop otherwise)"),
    Option("fsperf_store_profile", "store_profile",
           lambda raw: conditions.profile(raw.text, raw.where), conditions.PROFILES["bare"],
           "|".join(conditions.PROFILES), "the conditions of the stores the plugin starts, as a "
           "real store's (docs/how-to/store-conditions.md): a named profile; the options below "
           "change one condition of it (default bare: loopback, no latency, no limits)"),
    Option("fsperf_store_rtt", "store_rtt", lambda raw: conditions.duration(raw.text, raw.where),
           None, "TIME", "a round trip added to each request to a store the plugin starts (and "
           "one more per new connection), e.g. 10ms"),
    Option("fsperf_store_ttfb", "store_ttfb", lambda raw: conditions.duration(raw.text, raw.where),
           None, "TIME", "time added before each reply's first byte (the store's own work)"),
    Option("fsperf_store_bandwidth", "store_bandwidth",
           lambda raw: conditions.bandwidth(raw.text, raw.where), None, "RATE",
           "bytes a second the store moves for all connections together, e.g. 1GB/s"),
    Option("fsperf_store_conn_bandwidth", "store_conn_bandwidth",
           lambda raw: conditions.bandwidth(raw.text, raw.where), None, "RATE",
           "bytes a second one connection moves, e.g. 100MB/s"),
    Option("fsperf_store_rate", "store_rate", lambda raw: conditions.rate(raw.text, raw.where),
           None, "N/s[,burst=B]", "requests a second the store takes; past it each is answered "
           "as the store throttles (S3 503 SlowDown, OSS 503 TotalQpsLimitExceeded ...)"),
    Option("fsperf_store_errors", "store_errors",
           lambda raw: conditions.fraction(raw.text, raw.where), None, "SHARE",
           "share of requests answered with a 5xx without reaching the store, e.g. 1%"),
    Option("fsperf_store_resets", "store_resets",
           lambda raw: conditions.fraction(raw.text, raw.where), None, "SHARE",
           "share of replies cut mid-body, the connection reset, e.g. 0.5%"),
    Option("fsperf_store_corrupt", "store_corrupt",
           lambda raw: conditions.fraction(raw.text, raw.where), None, "SHARE",
           "share of ranged reads answered with one byte flipped (silent corruption)"),
    Option("fsperf_store_tail", "store_tail", lambda raw: conditions.tail(raw.text, raw.where),
           None, "1/N:TIME", "a slow tail: one request in N held TIME more, e.g. 1/100:200ms"),
    Option("fsperf_page_cache", "page_cache", parse.member(pagecache.Counting),
           pagecache.Counting.AUTO, "auto|on|off",
           "count the page cache a fio workload takes (its processes in a memory cgroup of "
           "their own: what is charged to it at the window's end): auto (default, as root), "
           "or off"),
    Option("fsperf_fuse_trace", "fuse_trace", parse.tracing, fusetrace.Tracing.AUTO, "auto|on|off",
           "count the FUSE requests of every workload by opcode, with their service times, from "
           "the kernel's fuse tracepoints: auto (default) where they exist and the session is "
           "root; on: stop if they cannot be used"),
    Option("fsperf_ceilings", "ceilings", lambda raw: parse.choice("on", "off")(raw) == "on", False,
           "on|off",
           "on: beside each judged fio workload, measure what the object store (read straight "
           "by obstore), FUSE with nothing behind it (bindfs over tmpfs) and tmpfs move for the "
           "same job, once per session and shape, and show the workload as a fraction of each"),
    Option("fsperf_profile", "profiling", parse.member(profile.Profiling), profile.Profiling.AUTO,
           "auto|on|off",
           "profile the daemon (perf record -g) over one more pair of an A/B and say which "
           "functions' share of its CPU moved: auto (default) when B is worse, on: every A/B"),
    Option("fsperf_rss_settle", "rss_settle", parse.timeout, None, "SECONDS",
           "after each workload, wait this long and read the daemon's RSS again: the memory "
           "it gave back (daemon_rss_after; default: 2 s where a test names max_rss_after, "
           "else not measured)"),
    Option("fsperf_stall_limit", "stall_limit", parse.timeout, None, "SECONDS",
           "stop a fio workload that moved nothing for this many seconds, and fail it "
           "(default: only --fsperf-workload-timeout stops a workload)"),
    Option("fsperf_fio_servers", "fio_servers", parse.servers, (), "HOST:PORT[:DIR],...",
           "fsperf.fio(clients=N) runs on these fio servers you started (fio --server), each on "
           "another machine with its own mount of the bucket under test at DIR (default: the "
           "same path as --fsperf-mount); their daemons are not measured"),
    Option("fsperf_hosts", "hosts", parse.hosts, (), "[USER@]HOST[:PORT]:/MOUNT,...|@FILE",
           "fsperf.fio() runs on these hosts at once (clients=N: the first N), reached over "
           "SSH (keys only, known host keys only): on each, pytest-fsperf's measuring core "
           "measures that host's daemon of MOUNT and a fio server runs on a unix socket that "
           "this machine reaches through an SSH forward; @FILE: one host per line"),
    Option("fsperf_ssh_config", "ssh_config", parse.ssh_config, None, "FILE",
           "the ssh config file for --fsperf-hosts (ssh -F: user, keys, known hosts, port)"),
    Option("fsperf_host_python", "host_python", parse.host_python, "python3", "COMMAND",
           "the Python on the hosts that has pytest-fsperf installed (default python3)"),
    Option("fsperf_price", "price", parse.name, cost.DEFAULT, "NAME",
           "price the object-store requests with this price list (default aws-s3-standard; "
           "also aws-s3-standard-ia, cloudflare-r2-standard, backblaze-b2, aliyun-oss-standard, "
           "self-hosted, or one of --fsperf-prices)"),
    Option("fsperf_jobfile", "jobfile", parse.job_file, None, "FILE",
           "your fio job file, run by the jobfile suite (`fsperf bench --fio FILE`, or "
           "`pytest --pyargs pytest_fsperf.suites.jobfile`): each section a workload"),
    Option("fsperf_prices", "prices_file", parse.prices_file, None, "FILE",
           "a TOML price table of your own, over the shipped one (its format: "
           "pytest_fsperf/store/data/prices.toml)"),
)
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
    fuse_trace: fusetrace.Tracing = fusetrace.Tracing.AUTO
    page_cache: pagecache.Counting = pagecache.Counting.AUTO
    ceilings: bool = False
    profiling: profile.Profiling = profile.Profiling.AUTO
    fio_servers: tuple[fio_clients.Server, ...] = ()
    hosts: tuple[hosts_spec.Host, ...] = ()
    ssh_config: Path | None = None
    host_python: str = "python3"
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


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("fsperf", "filesystem performance (pytest-fsperf); precedence: " + RULE)
    for opt in OPTIONS:
        # argparse formats a flag's help with %: a bare "10%" would crash `pytest --help`
        group.addoption(opt.flag, dest=opt.name, metavar=opt.metavar, default=None,
                        help=opt.help.replace("%", "%%"))
        parser.addini(opt.name, opt.help, default="")


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


def ini_keys(path: Path) -> list[str]:
    """The keys of pytest's section of an ini, cfg or toml file (as pytest finds them)."""
    try:
        text = inputs.read_text(path)
        if path.suffix == ".toml":
            tool = inputs.parse_toml(text).get("tool", {})
            found = tool.get("pytest", {}) if isinstance(tool, dict) else {}
            section = found.get("ini_options", found) if isinstance(found, dict) else {}
            return [str(k) for k in section] if isinstance(section, dict) else []
        ini = iniconfig.IniConfig(str(path), data=text)
    except (inputs.InputError, iniconfig.ParseError):
        return []  # pytest itself names a file it cannot read
    name = "tool:pytest" if path.name == "setup.cfg" else "pytest"
    return list(ini[name]) if name in ini else []


def check_ini(inipath: Path | None) -> None:
    """An fsperf_* key pytest-fsperf does not know (a typo would silently run the defaults,
    e.g. at scale 1): one line, with the key it may have meant, before anything runs."""
    if inipath is None:
        return
    for key in ini_keys(inipath):
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
