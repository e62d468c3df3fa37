"""Saved runs (.fsperf/runs/NAME.json) and the comparison of this run with one of them.

A workload is compared only with the same workload of a run whose fingerprint matches:
the workload (scenario or options), scale, fs type, mount options, kernel and machine.
Regression = the median ratio is past the tolerance AND its 95% bootstrap interval lies
wholly below 1 (both runs need 2 or more rounds for that); improvement likewise above.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .errors import UsageError
from .stats import shift

PASS, REGRESSION, IMPROVEMENT, INCONCLUSIVE, INCOMPARABLE = (
    "pass", "regression", "improvement", "inconclusive", "incomparable")


def storage(root: Path, configured: Path | None) -> Path:
    return configured if configured is not None else root / ".fsperf" / "runs"


def autosave_name() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


def load(folder: Path, name: str, where: str) -> tuple[str, dict[str, Any]]:
    """NAME, or 'latest' (the newest saved run)."""
    if name == "latest":
        found = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime) if folder.is_dir() else []
        if not found:
            raise UsageError(f"{where}: no saved run in {folder}")
        path = found[-1]
    else:
        path = folder / f"{name}.json"
        if not path.is_file():
            have = sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []
            raise UsageError(f"{where}: no saved run {name!r} in {folder}"
                             + (f" (have: {', '.join(have)})" if have else ""))
    try:
        doc = json.loads(path.read_text("utf-8"))
    except ValueError as exc:
        raise UsageError(f"{where}: {path} is not a saved run: {exc}") from None
    problem = shape_problem(doc)
    if problem:
        raise UsageError(f"{where}: {path} is not a saved run: {problem}")
    return path.stem, doc


def _number(value: object) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def shape_problem(doc: object) -> str | None:
    """What the comparison would trip over in a saved run, or None."""
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        return "no `results` list"
    for i, r in enumerate(doc["results"]):
        if not (isinstance(r, dict) and isinstance(r.get("test"), str) and isinstance(r.get("name"), str)):
            return f"result {i} has no `test` and `name`"
        if not isinstance(r.get("fingerprint", {}), dict) or not isinstance(r.get("total", {}), dict):
            return f"result {i}: `fingerprint` and `total` must be objects"
        if not all(_number(r.get("total", {}).get(k)) for k in ("bw_bytes", "ops_per_second", "io_bytes")):
            return f"result {i}: the figures in `total` must be numbers"
        rounds = r.get("rounds") or []
        if not isinstance(rounds, list) or not all(
                isinstance(x, dict) and _number(x.get("bw")) and _number(x.get("ops")) for x in rounds):
            return f"result {i}: `rounds` must be a list of objects with numeric figures"
    return None


def fingerprint(scenario: str | None, options: Mapping[str, str], mount: Mapping[str, Any] | None,
                env: dict[str, Any]) -> dict[str, Any]:
    """What must be equal for two measurements to be compared: the workload (scenario id or
    its options), scale, filesystem, mount options, kernel and machine."""
    mount = mount or {}
    env_mount = env.get("mount") or {}
    mount_options = " ".join(mount.get("options", [])) if mount else env_mount.get("super_options", "")
    m = env.get("machine", {})
    return {
        "workload": scenario or json.dumps(dict(options), sort_keys=True),
        "scale": env.get("scale"),
        "fs": mount.get("backend") or env_mount.get("fstype"),
        "mount_options": hashlib.sha256(mount_options.encode()).hexdigest()[:16],
        "kernel": env.get("kernel"),
        "machine": f"{m.get('cpu_model')} x{m.get('cpus')} {m.get('mem_total_bytes')}",
    }


@dataclass(frozen=True)
class RunComparison:
    run: str  # the saved run's name
    key: str  # TEST::WORKLOAD
    metric: str  # bw or ops
    outcome: str
    old: list[float]
    new: list[float]
    ratio: float | None  # median(new) / median(old)
    ci_low: float | None
    ci_high: float | None
    differs: list[str]  # fingerprint fields that differ (incomparable)

    def message(self, tolerance: float, who: str | None = None) -> str:
        """One line, starting with `who` (default: TEST::WORKLOAD)."""
        who = who or self.key
        if self.outcome == INCOMPARABLE:
            return (f"{who}: not compared with run {self.run!r}: the "
                    f"{', '.join(self.differs)} differ")
        shown = f"{self.ratio:.3f}" if self.ratio is not None else "-"
        band = (f", 95% interval {self.ci_low:.3f} to {self.ci_high:.3f}"
                if self.ci_low is not None and self.ci_high is not None else "")
        return (f"{who}: {self.outcome} against run {self.run!r}: {self.metric} "
                f"{shown}x ({len(self.new)} vs {len(self.old)} rounds{band}; "
                f"tolerance {100 * tolerance:g}%)")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def values(result: dict[str, Any], metric: str) -> list[float]:
    if result.get("rounds"):
        return [float(r[metric]) for r in result["rounds"] if r.get(metric) is not None]
    total = result.get("total", {})
    v = total.get("bw_bytes") if metric == "bw" else total.get("ops_per_second")
    return [float(v)] if v else []


def compare(run: str, key: str, old: dict[str, Any], new: dict[str, Any], tolerance: float,
            ) -> RunComparison:
    metric = "bw" if new.get("total", {}).get("io_bytes") else "ops"
    differs = [k for k, v in new["fingerprint"].items() if old.get("fingerprint", {}).get(k) != v]
    a, b = values(old, metric), values(new, metric)
    if differs or not a or not b:
        return RunComparison(run, key, metric, INCOMPARABLE, a, b, None, None, None,
                             differs or ["figures"])
    ratio, lo, hi, direction = shift(b, a, tolerance)
    outcome = {"up": IMPROVEMENT, "down": REGRESSION, "same": PASS}.get(direction, INCONCLUSIVE)
    if outcome == INCONCLUSIVE and lo is not None and lo >= 1 - tolerance:
        outcome = PASS  # no slowdown beyond tolerance is possible; a speed-up is not proven
    return RunComparison(run, key, metric, outcome, a, b, ratio, lo, hi, [])
