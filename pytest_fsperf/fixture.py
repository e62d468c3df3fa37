"""The `fsperf` fixture object: a work directory on the mount, cold(), fio()."""

from __future__ import annotations

import os
import time
from pathlib import Path

from . import cache
from .engine import fio as fio_engine
from .errors import MeasurementError, UsageError, or_fail
from .meters import DaemonExited, DaemonMeter
from .mount.daemon import Lookup, start_time
from .result import WorkloadResult
from .session import FsperfSession, safe_name


def _daemon_cache(lookup: Lookup, cold: str | None) -> str:
    if lookup.daemon is None and lookup.note.startswith("no daemon"):
        return "n/a: no daemon"
    if cold is None:
        return "warm"
    return "unknown: existing mount, daemon not restarted"


class Fsperf:
    """Given to a test as `fsperf`. Everything it writes stays in `workdir`."""

    def __init__(self, state: FsperfSession, test: str, workdir: str) -> None:
        self._state = state
        self.test = test
        self.workdir = Path(workdir)
        self.results: list[WorkloadResult] = []
        self._cold: str | None = None

    @property
    def scale(self) -> float:
        return self._state.settings.scale

    def cold(self) -> str:
        """Sync and drop the page cache now; the next workload records it as cold.
        If that workload must first lay out its files, the drop is repeated after."""
        self._cold = cache.make_cold(str(self.workdir))
        return self._cold

    def _unique(self, name: str) -> str:
        taken = {r.name for r in self.results}
        if name not in taken:
            return name
        n = 2
        while f"{name}#{n}" in taken:
            n += 1
        return f"{name}#{n}"

    def fio(self, name: str | None = None, *, judged: bool = True,
            **options: object) -> WorkloadResult:
        """Run one fio job in the work directory and measure it with the daemon."""
        where = f"{self.test}: fsperf.fio()"
        return or_fail(lambda: self._fio(name, judged, options, where))

    def _fio(self, name: str | None, judged: bool, options: dict[str, object],
             where: str) -> WorkloadResult:
        if name is not None and not fio_engine.valid_name(name):
            raise UsageError(f"{where}: name={name!r} must be letters, digits, '_', '.', '-'")
        job = fio_engine.build_job(options, self.scale, where)
        label = self._unique(name or job.get("rw", "read"))
        out = os.path.join(self._state.local_dir(), f"{safe_name(self.test)}-{safe_name(label)}")
        lookup = self._state.lookup_daemon()
        try:
            return self._measure(label, judged, job, out, lookup)
        except DaemonExited:
            raise
        except MeasurementError as exc:  # fio failed: was it because the daemon died?
            d = lookup.daemon
            if d is not None and start_time(d.pid) != d.start_time:
                raise DaemonExited(f"FUSE daemon PID {d.pid} exited during {label}: {exc}") from None
            raise

    def _measure(self, label: str, judged: bool, job: dict[str, str], out: str,
                 lookup: Lookup) -> WorkloadResult:
        job_name = "fsperf"  # one fio job name per test: a read finds what a write left
        if fio_engine.is_reading(job):
            layout = {**job, "create_only": "1"}
            fio_engine.run_fio(fio_engine.command(layout, job_name, str(self.workdir), out + ".layout.json"),
                               out + ".layout.json")
            if self._cold is not None:
                self._cold = cache.make_cold(str(self.workdir))
        cache_state = self._cold or cache.WARM
        daemon_cache = _daemon_cache(lookup, self._cold)
        self._cold = None

        proc = fio_engine.FioProcess(
            fio_engine.command(job, job_name, str(self.workdir), out + ".json"), out + ".json.log")
        meter = DaemonMeter(lookup.daemon, on_exit=proc.stop_now) if lookup.daemon else None
        try:
            if meter:
                meter.start()
            t0 = time.monotonic()
            proc.start()
            code, fio_cpu = proc.wait()
            wall = time.monotonic() - t0
            daemon = meter.stop(label) if meter else None
        finally:
            if meter:
                meter.abort()
        fio_engine.check_exit(code, out + ".json")
        read, write, raw = fio_engine.parse_output(out + ".json")
        result = WorkloadResult(
            test=self.test, name=label, kind="fio", options=job, cache=cache_state,
            daemon_cache=daemon_cache, read=read, write=write, daemon=daemon,
            daemon_note=lookup.note, wall_seconds=wall,
            tool_cpu_percent=100.0 * fio_cpu / wall if wall > 0 else 0.0,
            judged=judged, raw=raw, output_file=out + ".json",
        )
        self.results.append(result)
        return result
