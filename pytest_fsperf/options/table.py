"""The options' table: one row each (ini key, Settings field, converter, default, help),
read into Settings by config.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pytest_fsperf.measure import balloon, fusetrace, pagecache, placement, profile
from pytest_fsperf.mounts.registry import BackendConfig
from pytest_fsperf.options import parse
from pytest_fsperf.options.parse import Raw
from pytest_fsperf.plan import conditions
from pytest_fsperf.store import cost
from pytest_fsperf.vocab import Gate, Missing, StoreCache, Unsure


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
    Option("fsperf_missing_backend", "missing_backend", parse.member(Missing), Missing.FAIL,
           "fail|skip", "a test whose backend's daemon is not installed: 'fail' (default: with "
           "its install line; a session that measured nothing is not green) or 'skip'"),
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
    Option("fsperf_gate_on", "gate_on", parse.gate_on, (), "FIGURES",
           "the figures a release gate and fsperf.compare decide on together, comma-separated: "
           "'default' (the bandwidth or ops/s, every figure the test bounds, daemon CPU per GB, "
           "peak and settled memory, requests and FUSE requests per MiB or per file), "
           "'primary' (the bandwidth or ops/s alone), or figure names (marker gate_on=)"),
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
           "share of bodies (replies and uploads) cut mid-body, the connection reset, e.g. 0.5%"),
    Option("fsperf_store_corrupt", "store_corrupt",
           lambda raw: conditions.fraction(raw.text, raw.where), None, "SHARE",
           "share of ranged reads answered with one byte flipped (silent corruption)"),
    Option("fsperf_store_tail", "store_tail", lambda raw: conditions.tail(raw.text, raw.where),
           None, "1/N:TIME", "a slow tail: one request in N held TIME more, e.g. 1/100:200ms"),
    Option("fsperf_store_tls", "store_tls", lambda raw: parse.choice("on", "off")(raw) == "on",
           None, "on|off",
           "the plugin's stores over TLS, as real endpoints are (the proxy's, with a CA made for "
           "it; each backend told to trust it as its daemon reads trust): the daemon's TLS work "
           "in its CPU and latency (default: on for S3, Azure and GCS, whose every built-in "
           "daemon reads a CA file the plugin names; off for OSS)"),
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
    Option("fsperf_k8s", "pods", parse.pods, (), "[NAMESPACE/]POD[/CONTAINER]:/MOUNT,...|@FILE",
           "fsperf.fio() runs in these pods at once (clients=N: the first N), reached over "
           "kubectl exec; on each node a measuring pod made from --fsperf-k8s-meter-pod "
           "(privileged, the node's PIDs) measures the daemon that serves the pods' mount"),
    Option("fsperf_k8s_reference", "reference_pods", parse.pods, (),
           "[NAMESPACE/]POD[/CONTAINER]:/MOUNT,...|@FILE",
           "with --fsperf-reference-mount: the pods that read the reference side of a gate "
           "(another mount pod's mount: its old mountOptions or version), as many as --fsperf-k8s"),
    Option("fsperf_kubeconfig", "kubeconfig", parse.kubeconfig, None, "FILE",
           "the kubeconfig kubectl uses for --fsperf-k8s (default: kubectl's own)"),
    Option("fsperf_k8s_meter_pod", "meter_pod", parse.meter_pod, None, "FILE",
           "the measuring pod's template for --fsperf-k8s, a Pod in JSON or YAML (its image "
           "must have --fsperf-host-python with pytest-fsperf; namespace, volumes, env kept)"),
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
