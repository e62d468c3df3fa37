"""Run a scenario's steps through a workspace: preparation unjudged, the last step judged."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping

from ..engine import steps
from ..errors import UsageError
from ..measure.workspace import Workspace
from ..result import WorkloadResult
from .juicefs import grade as juicefs_grade
from .library import get

ENGINES: dict[str, Callable[..., WorkloadResult]] = {
    "sysbench": steps.sysbench_step, "files": steps.files_step, "meta": steps.meta_step}


def _checked(engine: str, params: Mapping[str, object], where: str) -> None:
    """A parameter the engine does not take is the user's mistake (an override): say so
    before running, instead of reading a TypeError from inside a running engine."""
    if engine == "fio":
        return
    try:
        inspect.signature(ENGINES[engine]).bind(None, None, judged=True, where=where, **params)
    except TypeError as exc:
        raise UsageError(f"{where}: {exc}") from None


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
        _checked(step.engine, params, where)

        def once(label: str, step_engine: str = step.engine, judged: bool = final,
                 params: dict[str, object] = params) -> WorkloadResult:
            if step_engine == "fio":
                return fs.run_fio(label, judged, params, where)
            return ENGINES[step_engine](fs, label, judged=judged, where=where, **params)

        result = fs.repeat(name, once, tag=lambda r: _tag(sc.id, r)) if final else fs.keep(once(name))
    assert result is not None
    return result


def _tag(scenario_id: str, result: WorkloadResult) -> WorkloadResult:
    """The measured step as the scenario's result: its id, and a juicefs bench grade."""
    graded = juicefs_grade(scenario_id, result)
    notes = (*result.notes, graded) if graded else result.notes
    return dataclasses.replace(result, scenario=scenario_id, notes=notes)
