"""State of one pytest session: where tests work, the mounts it owns, what was measured."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pytest_fsperf import baselines, units
from pytest_fsperf.baselines import Baseline
from pytest_fsperf.hosts.spec import SshSettings
from pytest_fsperf.infra import leftovers
from pytest_fsperf.infra.mountinfo import Mount
from pytest_fsperf.infra.redact import mask
from pytest_fsperf.measure import canary
from pytest_fsperf.mounts.daemon import Lookup
from pytest_fsperf.mounts.mounter import MountedFs, MountPlan
from pytest_fsperf.options.config import Settings
from pytest_fsperf.report import jsonout
from pytest_fsperf.report.environment import environment
from pytest_fsperf.result.comparison import Comparison
from pytest_fsperf.result.document import FailedTest, ResultRow
from pytest_fsperf.result.environment import Environment, Priced
from pytest_fsperf.runner.budget import SessionClock
from pytest_fsperf.runner.running import Clients, Running
from pytest_fsperf.runner.target import Target
from pytest_fsperf.saved import runs as saved


def running(s: Settings) -> Running:
    """What the runner reads of the settings (runner/running.py)."""
    places = "pods" if s.pods else "hosts"
    clients = Clients(
        fio_servers=s.fio_servers, fio_servers_given=s.where("fio_servers"), hosts=s.hosts,
        pods=s.pods, places_given=s.where(places), reference_pods=s.reference_pods,
        reference_mount=s.reference_mount,
        ssh=SshSettings(str(s.ssh_config) if s.ssh_config else None, s.host_python),
        kubeconfig=str(s.kubeconfig) if s.kubeconfig else None, meter_pod=s.meter_pod)
    return Running(
        scale=s.scale, workload_timeout=s.workload_timeout, stall_limit=s.stall_limit, cpus=s.cpus,
        settle=s.settle, store_cache=s.store_cache, fuse_trace=s.fuse_trace, profiling=s.profiling,
        price_list=s.price_list, ab_max_rounds=s.ab_max_rounds, ab_seconds=s.ab_seconds,
        clients=clients)


class FsperfSession:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.running = running(settings)  # what the runner reads of them, resolved once
        self.clock = SessionClock(settings.gate_seconds)  # the gated workloads' shared budget
        self.results: list[ResultRow] = []  # every measured workload, as reported
        self.comparisons: list[Comparison] = []  # every A/B comparison, as reported
        # a test's rows and comparisons made in this process, as types, until its report
        # is logged (a report carries only JSON: xdist and report logs serialise it)
        self.measured: dict[str, tuple[list[ResultRow], list[Comparison]]] = {}
        self.leftovers: list[str] = []  # work dirs or mounts that could not be removed
        self.swept: list[str] = []  # what earlier, killed sessions left, removed at the start
        self.failed_tests: list[FailedTest] = []  # every test that failed or errored
        self.usage_errors = False  # a test failed on bad input: the session exits 4
        self.unrecorded: str | None = None  # why this session keeps no record (no watchdog)
        self._default: Target | None = None
        self._reference: Target | None = None
        self._targets: list[Target] = []
        self._local: str | None = None
        self._local_entry: leftovers.Entry = None
        self._env: Environment | None = None
        self._baselines: dict[str, Baseline] = {}
        self.saved_baseline: str | None = None  # where --fsperf-save-baseline wrote
        self.saved_run: str | None = None  # where --fsperf-save wrote
        # --fsperf-compare: TEST::WORKLOAD -> [(run, its result)], newest run first
        self.earlier: dict[str, list[tuple[str, saved.SavedResult]]] = {}
        self.earlier_name = ""
        self.canary: list[float] = []  # machine canary scores, this session (canary.py)
        self._history: list[saved.Run] | None = None  # saved runs, read once when asked
        # a live line, on a terminal: (write, pytest's cursor column)
        self.progress_write: tuple[Callable[[str], None], Callable[[], int]] | None = None

    def load_earlier(self) -> None:
        s = self.settings
        if s.compare is None:
            return
        folder = saved.storage(s.root, s.storage)
        found = saved.load(folder, s.compare, s.where("compare"))
        self.earlier_name = found[0][0] if s.compare != "latest" else "latest"
        for name, doc in found:  # each result was checked when its run was read
            for r in map(saved.SavedResult.of, doc.get("results", [])):
                self.earlier.setdefault(r.key, []).append((name, r))

    def history_runs(self) -> list[saved.Run]:
        """The saved runs in the storage dir, oldest first, without one of this run's own
        name (it is replaced at the end): the series --fsperf-history-gate extends."""
        if self._history is None:
            s = self.settings
            found, _skipped = saved.read_folder(saved.storage(s.root, s.storage))
            self._history = [r for r in found if r.name != s.save]
        return self._history

    @property
    def canary_wanted(self) -> bool:
        """A run that is saved or compared carries machine canary readings."""
        s = self.settings
        return s.save is not None or s.compare is not None

    def read_canary(self) -> float:
        score = canary.measure(self.local_dir()).score
        self.canary.append(score)
        return score

    @property
    def env(self) -> Environment | None:
        return self._env

    def baseline(self, name: str, where: str) -> Baseline:
        if name not in self._baselines:
            self._baselines[name] = baselines.load(name, self.settings.root, where)
        return self._baselines[name]

    def save_baseline(self, env: Environment, path: Path | None = None) -> None:
        """This run's figures, per scenario (or test:workload), in the baseline format
        (at `path`, else the baseline's own place)."""
        name = self.settings.save_baseline
        if name is None:
            return
        entries = {r.baseline_key: r.baseline_entry for r in self.results
                   if r.judged and r.baseline_entry}
        mounts = sorted({" ".join(r.mount.options) for r in self.results if r.mount})
        m, machine = env.mount, env.machine
        data = {
            "name": name, "system": m.fstype if m else "", "version": "",
            "hardware": f"{machine.cpu_model}, {machine.cpus} CPUs, "
                        f"{units.format_size(machine.mem_total_bytes or 0)} RAM",
            "os": env.os or "", "kernel": env.kernel, "source": "saved run",
            "number_format": "en", "mount_options": "; ".join(mounts) or (m.options if m else ""),
            "scale": self.settings.scale, "environment": env.to_dict(), "entries": entries,
        }
        path = path or baselines.saved_dir(self.settings.root) / f"{name}.json"
        jsonout.write(path, data, streams=False)
        self.saved_baseline = str(path)

    @property
    def embedded(self) -> bool:
        return self.settings.mount is None and self.settings.backend is None

    def default_target(self) -> Target:
        """--fsperf-mount, or the embedded default (a fresh temp dir)."""
        if self._default is None:
            s = self.settings
            if s.mount is not None:
                self._default = Target(str(s.mount), daemon_pid=s.daemon_pid, timeout=s.mount_timeout)
            else:
                path, entry = leftovers.private_dir("pytest-fsperf-mount-")
                self._default = Target(path, temp=True, entry=entry, timeout=s.mount_timeout)
            self._targets.append(self._default)
        return self._default

    def reference_target(self) -> Target:
        """--fsperf-reference-mount: the reference side of a gate between two mounts."""
        if self._reference is None:
            s = self.settings
            assert s.reference_mount is not None
            self._reference = Target(str(s.reference_mount), timeout=s.mount_timeout)
            self._targets.append(self._reference)
        return self._reference

    def open_target(self, plan: MountPlan) -> Target:
        """Mount a backend; it stays until close_target (or the session's end)."""
        owned = MountedFs(plan)
        try:
            owned.start()
        except BaseException:
            owned.close()
            raise
        target = Target(owned.mountpoint, owned, timeout=plan.timeout)
        self._targets.append(target)
        return target

    def close_target(self, target: Target) -> None:
        if target in self._targets:
            self._targets.remove(target)
            self.leftovers += target.close()

    def environment(self, target: Target) -> Environment:
        """The run's environment, read once (on first use, while the mount is up)."""
        if self._env is None:
            mount: Mount | None = None
            lookup: Lookup | None = None
            try:
                mount = target.mount()
                lookup = target.lookup_daemon()
            except (OSError, LookupError):
                pass
            env = environment(target.path, mount, lookup, self.settings.scale,
                              self.embedded and target.owned is None, self.settings.build_id)
            price = self.settings.price_list
            if price is not None:  # what request costs are priced at
                env = replace(env, price=Priced(price.name, price.title, price.currency,
                                                price.source, price.checked, price.origin))
            if target.owned:
                env = replace(env, backend=target.owned.backend.name,
                              source_note=_source_note(target.owned))
                env = Environment.from_dict(mask(env.to_dict(), target.owned.rendered.secrets))
            self._env = env
        return self._env

    def final_environment(self) -> Environment:
        env = self._env if self._env is not None else self.environment(self.default_target())
        return replace(env, canary=tuple(self.canary)) if self.canary else env

    def local_dir(self) -> str:
        """A private local directory for fio's output files (never on the mount)."""
        if self._local is None:
            self._local, self._local_entry = leftovers.private_dir("pytest-fsperf-out-")
        return self._local

    def close(self) -> None:
        for target in list(reversed(self._targets)):
            self.close_target(target)
        self._default = self._reference = None
        if self._local is not None:
            shutil.rmtree(self._local, ignore_errors=True)
            leftovers.done(self._local_entry)
            self._local = None


def _source_note(owned: MountedFs) -> str:
    """What an owned mount measures when its backend can reach a bucket but was given none."""
    wants_bucket = any("{bucket}" in d for choices in owned.backend.defaults.values() for d in choices)
    if wants_bucket and not owned.rendered.fields.get("bucket"):
        return (f"a local directory, not object storage: {owned.backend.name} was given no bucket "
                "and endpoint (set them in --fsperf-backend-config to measure a bucket)")
    return ""
