"""Written by pytest_fsperf/options/declare.py from the option table: do not edit.
What the entry point (plugin.py) declares before a session uses the plugin."""

# (ini key and dest; the flag is --fsperf-... with dashes), metavar, help
OPTIONS: tuple[tuple[str, str, str], ...] = (
    ("fsperf_mount", "PATH",
     ("filesystem under test (a mounted directory); default: a fresh directory under "
      "the system temp dir")),
    ("fsperf_plain_dir", "0|1",
     ("accept a --fsperf-mount (and --fsperf-reference-mount) that is not itself a "
      "mount point: a directory inside one (default 0: refused, so that a failed mount "
      "step does not gate the machine's own disk)")),
    ("fsperf_daemon_pid", "PID",
     "PID of the FUSE daemon; default: found from the mount"),
    ("fsperf_scale", "FACTOR",
     "multiply every workload size and file count (default 1)"),
    ("fsperf_json", "PATH",
     "write every result, with the environment, as JSON to PATH"),
    ("fsperf_backend", "NAME",
     ("mount this backend for the session (local, bindfs, rclone, s3fs, ossfs, ossfs2, "
      "goofys, juicefs, mountpoint-s3, or one you define)")),
    ("fsperf_mount_options", "OPTIONS",
     "options for --fsperf-backend, as on its command line"),
    ("fsperf_backend_config", "FILE",
     ("INI file: [fsperf] endpoint, bucket, credentials ...; [backend NAME] sections "
      "define backends")),
    ("fsperf_backend_store", "minio",
     ("with --fsperf-backend: mount it over the plugin's own MinIO on 127.0.0.1 (as "
      "the marker's config=\"fsperf_s3\"), e.g. rclone, which otherwise mounts a local "
      "directory")),
    ("fsperf_mount_timeout", "SECONDS",
     ("seconds a backend may take to mount, and an existing mount to answer its first "
      "touch (default 30)")),
    ("fsperf_workload_timeout", "SECONDS",
     ("seconds after which a workload is taken to hang (default: its runtime, or its "
      "bytes at 2 MB/s, plus 2 minutes)")),
    ("fsperf_missing_backend", "fail|skip",
     ("a test whose backend's daemon is not installed: 'fail' (default: with its "
      "install line; a session that measured nothing is not green) or 'skip'")),
    ("fsperf_lock_timeout", "SECONDS",
     ("seconds a test waits for the machine lock another session of yours holds, then "
      "fails naming the holder (default 900; a lock another user holds fails at once)")),
    ("fsperf_baseline", "NAME",
     ("compare each scenario with this baseline (shipped, e.g. ossfs-2.0.4, or saved "
      "with --fsperf-save-baseline)")),
    ("fsperf_gate", "WHAT",
     ("'baseline': fail a scenario that misses its baseline by more than the "
      "tolerance; default 'none': only report measured / documented")),
    ("fsperf_baseline_any_scale", "0|1",
     ("1: let --fsperf-gate=baseline pass or fail a shipped baseline's figures also "
      "when --fsperf-scale is not 1 (default: such a comparison is shown and labelled, "
      "never judged: the documents measured at full size)")),
    ("fsperf_rounds", "N",
     "run every workload N times and judge the medians (default 1)"),
    ("fsperf_warmup", "0|1",
     "1: run one unjudged, discarded warm-up round before the rounds"),
    ("fsperf_inconclusive", "fail|warn",
     ("when the rounds' spread is too wide to decide a threshold: 'fail' (default) or "
      "'warn'")),
    ("fsperf_machine_changed", "fail|warn",
     ("when a saved-run comparison finds the machine canary moved (the machine, not "
      "the filesystem, changed): 'fail' or 'warn' (default: as --fsperf-inconclusive)")),
    ("fsperf_save", "NAME",
     ("save this run (every round's figures, the environment) as NAME in the storage "
      "directory")),
    ("fsperf_autosave", "0|1",
     "1: save every run, named by its start time"),
    ("fsperf_build_id", "ID",
     ("what build this run measures (a commit, a version), recorded in saved runs for "
      "`fsperf history` (default: $GIT_COMMIT, $GITHUB_SHA or $CI_COMMIT_SHA; the "
      "daemon binary's SHA-256 is recorded too)")),
    ("fsperf_history", "0|1",
     ("1: at the end, show the change points of each workload's series over the saved "
      "runs, this one included (needs pytest-fsperf[history])")),
    ("fsperf_history_gate", "0|1",
     ("1: fail a workload whose newest saved runs (2-5 of them, this one last) start a "
      "level worse than before by more than the tolerance, found as a change point "
      "over the saved runs (needs pytest-fsperf[history] and --fsperf-save or "
      "--fsperf-autosave)")),
    ("fsperf_compare_last", "N",
     ("with --fsperf-compare=latest: compare with the last N saved runs whose "
      "fingerprint matches (their run-to-run spread), not only the newest")),
    ("fsperf_storage", "DIR",
     "where runs are saved (default .fsperf/runs under the rootdir)"),
    ("fsperf_compare", "NAME",
     ("compare with a saved run (NAME or 'latest'): regression, improvement, pass or "
      "inconclusive per workload")),
    ("fsperf_markdown", "PATH",
     "write a Markdown summary to PATH (e.g. $GITHUB_STEP_SUMMARY)"),
    ("fsperf_benchmark_json", "PATH",
     ("write every workload in pytest-benchmark's JSON format to PATH (needs "
      "pytest-benchmark)")),
    ("fsperf_html", "PATH",
     "write a self-contained HTML report with charts to PATH"),
    ("fsperf_benchmark_action", "PREFIX",
     "write github-action-benchmark files PREFIX-bigger.json and PREFIX-smaller.json"),
    ("fsperf_save_baseline", "NAME",
     "save this run's figures as baseline NAME in .fsperf/baselines/"),
    ("fsperf_reference", "BINARY",
     ("release gate: run every workload on this build of --fsperf-backend's daemon (A) "
      "and on the candidate (B), interleaved, each run after a cold remount; B worse "
      "fails")),
    ("fsperf_candidate", "BINARY",
     ("the candidate build for --fsperf-reference (default: the backend's binary on "
      "PATH)")),
    ("fsperf_reference_mount", "DIR",
     ("release gate between two existing mounts (of the same bucket): the reference "
      "(A) mounted at DIR, the candidate (B) at --fsperf-mount; every workload on "
      "both, interleaved, each after a page-cache drop; B worse fails")),
    ("fsperf_tolerance", "PERCENT",
     ("how far B may be from A (or this run from a saved one, or from a baseline) and "
      "still be the same (default 10%; marker tolerance=)")),
    ("fsperf_gate_on", "FIGURES",
     ("the figures a release gate and fsperf.compare decide on together, "
      "comma-separated: 'default' (the bandwidth or ops/s, every figure the test "
      "bounds, daemon CPU per GB, peak and settled memory, requests and FUSE requests "
      "per MiB or per file), 'primary' (the bandwidth or ops/s alone), or figure names "
      "(marker gate_on=)")),
    ("fsperf_ab_max_rounds", "N",
     ("a safety cap on the pairs of an interleaved A/B (default 100); the time budget "
      "decides how many fit")),
    ("fsperf_ab_seconds", "SECONDS",
     ("an interleaved A/B adds pairs until decisive or until this many seconds of wall "
      "time are spent, layout and cold starts included; a pair that would not fit is "
      "not started (default 300)")),
    ("fsperf_gate_seconds", "SECONDS",
     ("one time budget for all the gated workloads of the session (--fsperf-reference, "
      "--fsperf-reference-mount): each gets what is left over the tests still to run, "
      "at most --fsperf-ab-seconds, so time one decided early goes to those after it; "
      "the report says how the time went (default: none, each has --fsperf-ab-seconds)")),
    ("fsperf_cpus", "auto|split|off|D/L",
     ("pin the daemon's threads and the load to CPUs for every run: split (the daemon "
      "on the upper half, the load on the lower), or DAEMON/LOAD CPU lists (e.g. 1/0); "
      "auto (default): split in an interleaved A/B, where runs must meet the same "
      "placement, the scheduler's choice elsewhere")),
    ("fsperf_settle", "auto|on|off",
     ("on a VM whose balloon reports free memory to the host, wait after each cache "
      "drop until the reporting is done, so that every cold read meets the same memory "
      "(2-15 s per cold start): auto (default) in an interleaved A/B once its runs "
      "have spread past 1.5x without it (the pairs so far are dropped; only for runs "
      "that fill page cache), on: every cold start")),
    ("fsperf_store_cache", "auto|drop|keep",
     ("what a cold start does to the page cache of what a FUSE daemon reads from: drop "
      "(drop_caches, the whole machine's), keep (only the FUSE files' pages, the "
      "daemon remounted where the plugin mounts it: a local store's files stay in "
      "memory, so that every run of a gate meets one state of them), or auto (default: "
      "keep in a release gate between builds, drop otherwise)")),
    ("fsperf_store_profile", "bare|in-region|cross-region|express|throttled|faulty",
     ("the conditions of the stores the plugin starts, as a real store's "
      "(docs/how-to/store-conditions.md): a named profile; the options below change "
      "one condition of it (default bare: loopback, no latency, no limits)")),
    ("fsperf_store_rtt", "TIME",
     ("a round trip added to each request to a store the plugin starts (and one more "
      "per new connection), e.g. 10ms")),
    ("fsperf_store_ttfb", "TIME",
     "time added before each reply's first byte (the store's own work)"),
    ("fsperf_store_bandwidth", "RATE",
     "bytes a second the store moves for all connections together, e.g. 1GB/s"),
    ("fsperf_store_conn_bandwidth", "RATE",
     "bytes a second one connection moves, e.g. 100MB/s"),
    ("fsperf_store_rate", "N/s[,burst=B]",
     ("requests a second the store takes; past it each is answered as the store "
      "throttles (S3 503 SlowDown, OSS 503 TotalQpsLimitExceeded ...)")),
    ("fsperf_store_errors", "SHARE",
     "share of requests answered with a 5xx without reaching the store, e.g. 1%"),
    ("fsperf_store_resets", "SHARE",
     ("share of bodies (replies and uploads) cut mid-body, the connection reset, e.g. "
      "0.5%")),
    ("fsperf_store_corrupt", "SHARE",
     "share of ranged reads answered with one byte flipped (silent corruption)"),
    ("fsperf_store_tail", "1/N:TIME",
     "a slow tail: one request in N held TIME more, e.g. 1/100:200ms"),
    ("fsperf_store_tls", "on|off",
     ("the plugin's stores over TLS, as real endpoints are (the proxy's, with a CA "
      "made for it; each backend told to trust it as its daemon reads trust): the "
      "daemon's TLS work in its CPU and latency (default: on for S3, Azure and GCS, "
      "whose every built-in daemon reads a CA file the plugin names; off for OSS)")),
    ("fsperf_page_cache", "auto|on|off",
     ("count the page cache a fio workload takes (its processes in a memory cgroup of "
      "their own: what is charged to it at the window's end): auto (default, as root), "
      "or off")),
    ("fsperf_fuse_trace", "auto|on|off",
     ("count the FUSE requests of every workload by opcode, with their service times, "
      "from the kernel's fuse tracepoints: auto (default) where they exist and the "
      "session is root; on: stop if they cannot be used")),
    ("fsperf_ceilings", "on|off",
     ("on: beside each judged fio workload, measure what the object store (read "
      "straight by obstore), FUSE with nothing behind it (bindfs over tmpfs) and tmpfs "
      "move for the same job, once per session and shape, and show the workload as a "
      "fraction of each")),
    ("fsperf_profile", "auto|on|off",
     ("profile the daemon (perf record -g) over one more pair of an A/B and say which "
      "functions' share of its CPU moved: auto (default) when B is worse, on: every A/B")),
    ("fsperf_rss_settle", "SECONDS",
     ("after each workload, wait this long and read the daemon's RSS again: the memory "
      "it gave back (daemon_rss_after; default: 2 s where a test names max_rss_after, "
      "else not measured)")),
    ("fsperf_stall_limit", "SECONDS",
     ("stop a fio workload that moved nothing for this many seconds, and fail it "
      "(default: only --fsperf-workload-timeout stops a workload)")),
    ("fsperf_fio_servers", "HOST:PORT[:DIR],...",
     ("fsperf.fio(clients=N) runs on these fio servers you started (fio --server), "
      "each on another machine with its own mount of the bucket under test at DIR "
      "(default: the same path as --fsperf-mount); their daemons are not measured")),
    ("fsperf_hosts", "[USER@]HOST[:PORT]:/MOUNT,...|@FILE",
     ("fsperf.fio() runs on these hosts at once (clients=N: the first N), reached over "
      "SSH (keys only, known host keys only): on each, pytest-fsperf's measuring core "
      "measures that host's daemon of MOUNT and a fio server runs on a unix socket "
      "that this machine reaches through an SSH forward; @FILE: one host per line")),
    ("fsperf_ssh_config", "FILE",
     "the ssh config file for --fsperf-hosts (ssh -F: user, keys, known hosts, port)"),
    ("fsperf_host_python", "COMMAND",
     "the Python on the hosts that has pytest-fsperf installed (default python3)"),
    ("fsperf_k8s", "[NAMESPACE/]POD[/CONTAINER]:/MOUNT,...|@FILE",
     ("fsperf.fio() runs in these pods at once (clients=N: the first N), reached over "
      "kubectl exec; on each node a measuring pod made from --fsperf-k8s-meter-pod "
      "(privileged, the node's PIDs) measures the daemon that serves the pods' mount")),
    ("fsperf_k8s_reference", "[NAMESPACE/]POD[/CONTAINER]:/MOUNT,...|@FILE",
     ("with --fsperf-reference-mount: the pods that read the reference side of a gate "
      "(another mount pod's mount: its old mountOptions or version), as many as "
      "--fsperf-k8s")),
    ("fsperf_kubeconfig", "FILE",
     "the kubeconfig kubectl uses for --fsperf-k8s (default: kubectl's own)"),
    ("fsperf_k8s_meter_pod", "FILE",
     ("the measuring pod's template for --fsperf-k8s, a Pod in JSON or YAML (its image "
      "must have --fsperf-host-python with pytest-fsperf; namespace, volumes, env kept)")),
    ("fsperf_price", "NAME",
     ("price the object-store requests with this price list (default aws-s3-standard; "
      "also aws-s3-standard-ia, cloudflare-r2-standard, backblaze-b2, "
      "aliyun-oss-standard, self-hosted, or one of --fsperf-prices)")),
    ("fsperf_jobfile", "FILE",
     ("your fio job file, run by the jobfile suite (`fsperf bench --fio FILE`, or "
      "`pytest --pyargs pytest_fsperf.suites.jobfile`): each section a workload")),
    ("fsperf_prices", "FILE",
     ("a TOML price table of your own, over the shipped one (its format: "
      "pytest_fsperf/store/data/prices.toml)")),
)
GROUP = ("filesystem performance (pytest-fsperf); precedence: command line > marker > ini "
         "file > default")
MARKERS = (
    ("fsperf(**thresholds): performance thresholds for the test's measured workloads: "
     "min_bw, max_bw, min_stored_bw, min_iops, min_ops, max_cpu, max_rss, "
     "max_rss_after, max_rss_round_growth, max_rss_per_handle, max_major_faults, "
     "max_minor_faults, max_disk_read, max_disk_written, max_page_cache, max_p99, "
     "max_p50, max_mean_lat, max_ttfb_p50, max_ttfb, max_requests, max_gets, "
     "max_heads, max_lists, max_puts, max_requests_per_mib, max_requests_per_file, "
     "max_fuse_requests, max_fuse_per_mib, max_fuse_per_file, max_app_errors, "
     "max_cost, max_cost_per_tb, max_stall, max_decay, max_swing, max_rss_growth, "
     "min_efficiency"),
    ("fsperf_mount(backend, options=[...], config=None, memory_limit=None, "
     "store=None): mount this backend for the test (config: a dict, or the name of a "
     "fixture giving one, e.g. 'fsperf_s3'; memory_limit: '512M', every process of "
     "the daemon in a cgroup with that limit; store: a store profile, e.g. "
     "'in-region', for the store the plugin starts for it)"),
)
