"""Run a scenario's steps through the fixture: preparation unjudged, the last step judged."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..result import WorkloadResult
from .juicefs import grade as juicefs_grade
from .library import get

if TYPE_CHECKING:
    from ..fixture import Fsperf


def run_scenario(fs: Fsperf, scenario_id: str, overrides: Mapping[str, object],
                 where: str) -> WorkloadResult:
    sc = get(scenario_id, where)
    measured = [i for i, st in enumerate(sc.steps) if st.engine not in ("cold", "drop")]
    result: WorkloadResult | None = None
    engines = {"sysbench": fs._sysbench, "files": fs._files, "meta": fs._meta}
    for i, step in enumerate(sc.steps):
        if step.engine == "cold":
            fs._make_cold()
            continue
        if step.engine == "drop":
            fs._drop()
            continue
        final = i == measured[-1]
        params: dict[str, object] = {**step.params, **(overrides if final else {})}
        name = fs._unique(sc.id if final else f"{sc.id}.prep{i}")
        def once(label: str, step_engine: str = step.engine, judged: bool = final,
                 params: dict[str, object] = params) -> WorkloadResult:
            if step_engine == "fio":
                return fs._fio(label, judged, params, where)
            return engines[step_engine](label, judged=judged, where=where, **params)  # type: ignore[operator,no-any-return]

        try:
            result = fs._repeat(name, once) if final else once(name)
        except TypeError as exc:
            raise UsageError(f"{where}: {exc}") from None
    assert result is not None
    graded = juicefs_grade(sc.id, result)
    notes = (*result.notes, graded) if graded else result.notes
    tagged = dataclasses.replace(result, scenario=sc.id, notes=notes)
    fs.results[fs.results.index(result)] = tagged
    return tagged
