"""Run a scenario's steps through a workspace: preparation unjudged, the last step judged."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ..engine.steps import ENGINES, Engine
from ..measure.workspace import Workspace
from ..result import WorkloadResult
from .juicefs import grade as juicefs_grade
from .library import get


def run_scenario(fs: Workspace, scenario_id: str, overrides: Mapping[str, object],
                 where: str) -> WorkloadResult:
    sc = get(scenario_id, where)
    measured = [i for i, st in enumerate(sc.steps) if st.engine not in ("cold", "drop")]
    result: WorkloadResult | None = None
    for i, step in enumerate(sc.steps):
        if step.engine == "cold":
            fs.cold_start()
            continue
        if step.engine == "drop":
            fs.drop_pages()
            continue
        final = i == measured[-1]
        params: dict[str, object] = {**step.params, **(overrides if final else {})}
        name = fs.unique(sc.id if final else f"{sc.id}.prep{i}")
        engine = ENGINES.get(step.engine)
        job = engine.check(params, where) if engine else None  # before anything runs

        def once(label: str, engine: Engine | None = engine, judged: bool = final,
                 params: dict[str, object] = params, job: object = job) -> WorkloadResult:
            if engine is None:
                return fs.run_fio(label, judged, params, where)
            return engine.step(fs, label, job, judged, where)

        result = fs.repeat(name, once, tag=lambda r: _tag(sc.id, r)) if final else fs.keep(once(name))
    assert result is not None
    return result


def _tag(scenario_id: str, result: WorkloadResult) -> WorkloadResult:
    """The measured step as the scenario's result: its id, and a juicefs bench grade."""
    graded = juicefs_grade(scenario_id, result)
    notes = (*result.notes, graded) if graded else result.notes
    return dataclasses.replace(result, scenario=scenario_id, notes=notes)
