"""Run fio on the work directory and read its JSON output.

The job comes from keyword options passed through to fio as --key=value. The
plugin owns directory, output and group_reporting; file names must stay inside
the work directory. Files a read job needs are laid out by a separate, unmetered
fio pass (create_only=1) so that the measured window holds only the workload.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any

from pytest_fsperf.engine import fiosize
from pytest_fsperf.engine.fio_options import PATHS, refusal
from pytest_fsperf.engine.fiosize import check_size, parse_fio_size, scale_count, scale_size
from pytest_fsperf.errors import MeasurementError, UsageError, WorkloadHung
from pytest_fsperf.infra import leftovers, trust
from pytest_fsperf.infra.procs import Proc, kill_tree
from pytest_fsperf.mounts.spec import Need
from pytest_fsperf.result.parts import IoStats, JobStats

INSTALL_HINT = "fio is not installed: install the 'fio' package (apt-get install fio / dnf install fio)"
OWNED = {"directory", "output", "output_format", "opendir", "group_reporting"}  # set by the plugin
SIZE_KEYS = ("size", "io_size", "io_limit", "filesize")
READING = {"read", "randread", "rw", "readwrite", "randrw", "trimwrite"}
_KEY = re.compile(r"^[a-z][a-z0-9_]*$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def fio_binary() -> str:
    """fio as root runs it: found on PATH, its real path checked (trust.which)."""
    path, why = trust.which("fio")
    if why:
        raise MeasurementError(f"fio is not run: {why}; it would run as you")
    if path is None:
        raise MeasurementError(INSTALL_HINT)
    return path


def fio_version() -> str | None:
    path, _why = trust.which("fio")
    if path is None:
        return None
    out = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or None


def _render(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _check_path(key: str, value: str, where: str) -> None:
    parts = value.replace(":", "/").split("/")
    if value.startswith("/") or ".." in parts or (key == "filename" and "/" in value):
        raise UsageError(f"{where}: {key}={value!r} would leave the test's work directory; "
                         "give a plain file name")


def _block(options: dict[str, str], kb_base: int) -> int:
    try:
        return parse_fio_size(options.get("bs", "4k"), kb_base)
    except ValueError:
        return 1  # bs lists or ranges: no rounding


def build_job(options: dict[str, object], scale: float, where: str) -> dict[str, str]:
    """Validate keyword options and apply --fsperf-scale. Returns fio's options as text."""
    job: dict[str, str] = {}
    for key, value in options.items():
        if not _KEY.fullmatch(key):
            raise UsageError(f"{where}: {key!r} is not a fio option name")
        if value is None or not isinstance(value, str | int | float | bool):
            raise UsageError(f"{where}: {key}={value!r} must be a string, number or bool")
        if isinstance(value, int) and abs(value) >= 10**20:  # (str() refuses 4300 digits)
            raise UsageError(f"{where}: {key}= a number of {value.bit_length()} bits: past any "
                             "value fio takes")
        if isinstance(value, bool) and (key in SIZE_KEYS or key in fiosize.CHECKED):
            raise UsageError(f"{where}: {key}={value!r} is not a size or a count; give one")
        job[key] = _render(value)
        why = refusal(key, job[key])
        if why:
            raise UsageError(f"{where}: {why}; remove it" if key in OWNED else f"{where}: {why}")
    for key in PATHS:
        if key in job:
            _check_path(key, job[key], where)
    kb_base = 1000 if job.get("kb_base") == "1000" else 1024
    for key in (*SIZE_KEYS, *fiosize.CHECKED):
        if key in job:
            try:
                if key in SIZE_KEYS:
                    check_size(job[key], kb_base)
                else:
                    fiosize.check_value(key, job[key], kb_base)
            except ValueError as exc:
                raise UsageError(f"{where}: {key}={job[key][:40]!r}: {exc}") from None
    block = _block(job, kb_base)
    scaled_keys = [k for k in SIZE_KEYS if k in job]
    if "nrfiles" in job and "filesize" in job:
        scaled_keys.remove("filesize")  # a small-file job keeps its file size; count shrinks
    try:
        for key in scaled_keys:
            job[key] = scale_size(job[key], scale, block, kb_base)
        if "nrfiles" in job:
            job["nrfiles"] = scale_count(job["nrfiles"], scale)
        if "runtime" in job and scale < 1:
            job["runtime"] = scale_runtime(job["runtime"], scale)
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None
    return job


_TIME = re.compile(r"^(\d+(?:\.\d+)?)(us|ms|s|m|h|d)?$")
_TIME_UNIT = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
MIN_RUNTIME = 5.0  # s: a scaled time-based job still runs this long (unless it was shorter)


def scaled_seconds(seconds: float, scale: float) -> float:
    """A duration shrinks with a scale below 1, to no less than 5 s (or itself, if shorter);
    a scale above 1 leaves it as it is."""
    return seconds if scale >= 1 else max(min(seconds, MIN_RUNTIME), seconds * scale)


def scale_runtime(text: str, scale: float) -> str:
    """A time-based job's runtime, scaled as scaled_seconds does."""
    m = _TIME.match(text.strip().lower())
    if not m:
        raise ValueError(f"runtime={text!r}: not a time (e.g. 30s, 2m)")
    seconds = float(m.group(1)) * _TIME_UNIT[m.group(2) or "s"]
    return f"{round(scaled_seconds(seconds, scale) * 1000)}ms"


HANG_SLACK = 120.0  # s: start-up, layout and teardown on a slow mount
SLOWEST = 2e6  # bytes/s: a job moving its bytes slower than this is taken for a hang


def deadline(job: dict[str, str]) -> float:
    """Seconds after which a job is taken to hang: its runtime, or else its bytes at 2 MB/s,
    plus 2 minutes; one hour when neither can be read."""
    kb_base = 1000 if job.get("kb_base") == "1000" else 1024
    seconds = 0.0
    for key in ("runtime", "ramp_time", "startdelay"):
        m = _TIME.match(job.get(key, "").strip().lower())
        if m:
            seconds += float(m.group(1)) * _TIME_UNIT[m.group(2) or "s"]
    try:
        if "nrfiles" in job and "filesize" in job:
            per_job = int(job["nrfiles"]) * parse_fio_size(job["filesize"], kb_base)
        else:
            per_job = parse_fio_size(job.get("io_size") or job.get("size", ""), kb_base)
        moved = per_job * int(job.get("numjobs", "1")) * int(job.get("loops", "1"))
    except ValueError:
        moved = None
    if seconds:  # a runtime bounds the job, time-based or not
        return HANG_SLACK + seconds
    return 3600.0 if moved is None else HANG_SLACK + moved / SLOWEST


def valid_name(name: str) -> bool:
    return bool(_NAME.fullmatch(name))


def needs(job: dict[str, str]) -> dict[Need, str]:
    """What this job asks of the filesystem beyond writing new files front to back."""
    rw = job.get("rw", job.get("readwrite", "read"))
    out: dict[Need, str] = {}
    if rw in ("randwrite", "randrw", "trimwrite"):
        out[Need.RANDOM_WRITES] = f"rw={rw} writes at random offsets"
    if rw in ("rw", "readwrite"):
        out[Need.REWRITES] = f"rw={rw} rewrites the files it reads"
    if job.get("overwrite") == "1":
        out[Need.REWRITES] = "overwrite=1 rewrites existing files in place"
    if job.get("file_append") == "1":
        out[Need.APPENDS] = "file_append=1 appends to existing files"
    return out


def is_reading(job: dict[str, str]) -> bool:
    return job.get("rw", job.get("readwrite", "read")) in READING


def command(job: dict[str, str], name: str, workdir: str, output: str,
            grouped: bool = True) -> list[str]:
    """grouped=False: each job reported apart, as a command line without --group_reporting
    prints it (in json+, whose latency bins let parse_output merge the jobs exactly)."""
    directory = workdir.replace(":", "\\:")  # fio splits a directory on ':' unless escaped
    args = [fio_binary(), f"--name={name}", f"--directory={directory}",
            *(["--group_reporting", "--output-format=json"] if grouped else
              ["--output-format=json+"]), f"--output={output}"]
    args += [f"--{key}={value}" for key, value in job.items() if key != "name"]
    return args


def _last_lines(path: str, n: int = 3) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [ln.strip() for ln in f if ln.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            pid, _ = os.waitpid(proc.pid, os.WNOHANG)
            if pid:
                return
            time.sleep(0.05)


class FioProcess:
    """One fio run in its own process group, reaped with wait4 to get its CPU time."""

    def __init__(self, args: list[str], log: str) -> None:
        self.args = args
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.reaped = False
        self.started: Proc | None = None
        self.entry: leftovers.Entry = None

    def start(self) -> None:
        """Start fio; an interrupt (Ctrl-C, SIGTERM) while it starts stops what started."""
        try:
            with open(self.log, "wb") as log:
                self.proc = subprocess.Popen(self.args, stdout=log, stderr=log,
                                             stdin=subprocess.DEVNULL, start_new_session=True)
            self.started = Proc.of(self.proc.pid)
            self.entry = leftovers.note_process(self.started)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """fio's group, then what is left of its tree (its job processes run in sessions
        of their own); reaped."""
        if self.proc is None or self.reaped:
            return
        started = self.started or Proc.of(self.proc.pid)
        _kill_group(self.proc)
        if started is not None:
            kill_tree(started)
        self.reaped = True
        leftovers.done(self.entry)

    def stop_now(self) -> None:
        if self.proc is not None and not self.reaped:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)

    def run(self, timeout: float | None = None,
            on_hang: Callable[[], str] | None = None) -> tuple[int, float]:
        """start() and wait(), with no gap between them where an interrupt is not handled."""
        try:
            self.start()
            return self.wait(timeout, on_hang)
        except BaseException:
            self.stop()
            raise

    def wait(self, timeout: float | None = None,
             on_hang: Callable[[], str] | None = None) -> tuple[int, float]:
        """fio's exit code and CPU seconds. Past `timeout`: on_hang() (which may abort the
        FUSE connection, so fio's waits end), fio is stopped, and WorkloadHung raised."""
        assert self.proc is not None
        end = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
                if pid:
                    break
                if end is not None and time.monotonic() > end:
                    told = on_hang() if on_hang else ": the filesystem stopped answering"
                    raise WorkloadHung(f"fio did not finish within {timeout:g} s{told}")
                time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        self.reaped = True
        leftovers.done(self.entry)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        return self.proc.returncode, usage.ru_utime + usage.ru_stime


def run_fio(args: list[str], output: str, timeout: float | None = None,
            on_hang: Callable[[], str] | None = None) -> None:
    """Run fio to completion, unmeasured (layout); raise MeasurementError on failure."""
    proc = FioProcess(args, output + ".log")
    code, _cpu = proc.run(timeout, on_hang)
    check_exit(code, output)


def check_exit(code: int, output: str) -> None:
    if code != 0:
        detail = _last_lines(output + ".log") or _last_lines(output)
        raise MeasurementError(f"fio failed (exit {code}): {detail or 'no message'}")


def _direction(block: dict[str, Any]) -> IoStats:
    lat_kind = "lat" if "percentile" in block.get("lat_ns", {}) else "clat"
    lat = block.get(f"{lat_kind}_ns", {})
    pct = lat.get("percentile", {})

    def pick(p: str) -> float | None:
        return float(pct[p]) if p in pct else None

    return IoStats(
        io_bytes=int(block["io_bytes"]),
        bw_bytes=float(block["bw_bytes"]),
        iops=float(block["iops"]),
        total_ios=int(block["total_ios"]),
        runtime_ms=int(block["runtime"]),
        lat_mean_ns=float(lat.get("mean", 0.0)),
        lat_p50_ns=pick("50.000000"),
        lat_p99_ns=pick("99.000000"),
        lat_p999_ns=pick("99.900000"),
        lat_kind=lat_kind,
    )


def documents(text: str) -> list[Any]:
    """The JSON documents in fio's output, in order: fio may print warnings before them, and
    with --status-interval it writes one report a second before the final one."""
    found: list[Any] = []
    decoder = json.JSONDecoder()
    at = text.find("{")
    while at >= 0:
        try:
            doc, end = decoder.raw_decode(text, at)
        except ValueError:
            at = text.find("\n{", at + 1)
            at = at + 1 if at >= 0 else -1
            continue
        found.append(doc)
        at = text.find("{", end)
    return found


def parse_output(path: str) -> tuple[IoStats | None, IoStats | None, dict[str, Any],
                                     tuple[JobStats, ...]]:
    """(read, write, raw job, each job) from fio's JSON file: its last report (fio may print
    warnings before the JSON, and status reports). One grouped job: its figures, and no jobs
    apart. Jobs reported apart (json+): each one's figures, and their sum as fio's group line
    computes it (bytes over the longest job's time; latency percentiles from the merged
    histograms)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        docs = documents(text)
        if not docs:
            raise ValueError("no JSON document")
        data = docs[-1]
        jobs = data["jobs"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise MeasurementError(f"fio wrote no readable JSON to {path}: {exc}") from None
    if not jobs:
        raise MeasurementError(f"fio reported no job in {path}")
    for job in jobs:
        if job.get("error"):
            raise MeasurementError(f"fio job failed with error {job['error']} "
                                   f"({os.strerror(job['error'])})")
    raw = {"fio version": data.get("fio version"), "job": jobs[0] if len(jobs) == 1 else
           {"jobs_apart": len(jobs)}}
    if len(jobs) == 1:
        job = jobs[0]
        return _maybe(job["read"]), _maybe(job["write"]), raw, ()
    apart = tuple(JobStats(_maybe(j["read"]), _maybe(j["write"])) for j in jobs)
    return _merged([j["read"] for j in jobs]), _merged([j["write"] for j in jobs]), raw, apart


def _maybe(block: dict[str, Any]) -> IoStats | None:
    return _direction(block) if block["total_ios"] else None


def _merged(blocks: list[dict[str, Any]]) -> IoStats | None:
    """One direction of jobs reported apart, as fio's group line sums them: bytes and I/Os
    over the longest job's runtime; mean latency weighted by samples; percentiles from the
    jobs' latency bins added up (json+), found as fio finds them."""
    blocks = [b for b in blocks if b["total_ios"]]
    if not blocks:
        return None
    kind = "lat" if "percentile" in blocks[0].get("lat_ns", {}) else "clat"
    lats = [b.get(f"{kind}_ns", {}) for b in blocks]
    io_bytes = sum(int(b["io_bytes"]) for b in blocks)
    total_ios = sum(int(b["total_ios"]) for b in blocks)
    runtime = max(int(b["runtime"]) for b in blocks)
    samples = sum(int(lat.get("N", 0)) for lat in lats)
    mean = (sum(float(lat.get("mean", 0.0)) * int(lat.get("N", 0)) for lat in lats) / samples
            if samples else 0.0)
    bins: dict[int, int] = {}
    for lat in lats:
        for value, count in lat.get("bins", {}).items():
            bins[int(value)] = bins.get(int(value), 0) + int(count)
    return IoStats(
        io_bytes=io_bytes,
        bw_bytes=float(io_bytes * 1000 // runtime) if runtime else 0.0,
        iops=1000.0 * total_ios / runtime if runtime else 0.0,
        total_ios=total_ios, runtime_ms=runtime, lat_mean_ns=mean,
        lat_p50_ns=percentile(bins, 50.0), lat_p99_ns=percentile(bins, 99.0),
        lat_p999_ns=percentile(bins, 99.9), lat_kind=kind)


def percentile(bins: dict[int, int], p: float) -> float | None:
    """The latency at percentile p of a histogram {bin value: count}, as fio computes its
    own (the first bin whose running count reaches p% of all); None without samples."""
    total = sum(bins.values())
    if not total:
        return None
    running = 0
    for value in sorted(bins):
        running += bins[value]
        if running >= p / 100.0 * total:
            return float(value)
    return float(max(bins))


def read_latency_logs(prefix: str, origin: float = 0.0,
                      kind: str = "lat") -> tuple[str, list[tuple[float, float]]]:
    """The kind read, and (s since `origin`, mean ns) per second of every job's PREFIX_<kind>.N.log
    ("lat" total as the table, else "clat"). Lines: `msec, value, direction, bs, offset[, prio]`,
    msec on the monotonic clock (fio_status.instrumented), as `origin`."""
    if not (paths := sorted(glob.glob(glob.escape(prefix) + f"_{kind}.*.log"))) and kind != "clat":
        kind, paths = "clat", sorted(glob.glob(glob.escape(prefix) + "_clat.*.log"))
    per: dict[int, list[float]] = {}
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split(",")
                try:
                    msec, value = int(fields[0]), float(fields[1])
                except (ValueError, IndexError):
                    continue
                per.setdefault(round(msec / 1000 - origin), []).append(value)
    return kind, [(float(sec), sum(v) / len(v)) for sec, v in sorted(per.items()) if v]
