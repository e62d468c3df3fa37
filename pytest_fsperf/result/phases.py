"""fsperf.mdtest()'s result: one workload result per phase."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_fsperf.result.workload import WorkloadResult


@dataclass(frozen=True)
class MdtestResult:
    """Each phase's result, as mdtest reports them; rename_dir is None for a tree without
    subdirectories (per_dir=0)."""

    create: WorkloadResult
    stat: WorkloadResult
    read: WorkloadResult
    rename: WorkloadResult
    rename_dir: WorkloadResult | None
    remove: WorkloadResult

    def phases(self) -> dict[str, WorkloadResult]:
        """The phases that ran, by name, in the order they ran."""
        order = ("create", "stat", "read", "rename", "rename_dir", "remove")
        return {p: r for p in order if (r := getattr(self, p)) is not None}
