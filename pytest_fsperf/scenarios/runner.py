"""Run a scenario's steps through a workspace: preparation unjudged, the last step judged."""

from __future__ import annotations

import dataclasses
import itertools
import os
import secrets
import shutil
from collections.abc import Mapping

from pytest_fsperf.errors import UsageError
from pytest_fsperf.result.workload import WorkloadResult
from pytest_fsperf.runner.workspace import Workspace
from pytest_fsperf.scenarios.juicefs import grade as juicefs_grade
from pytest_fsperf.scenarios.library import Scenario, get
from pytest_fsperf.scenarios.steps import ENGINES, Engine, FilesJob


def run_scenario(fs: Workspace, scenario_id: str, overrides: Mapping[str, object],
                 where: str) -> WorkloadResult:
    sc = get(scenario_id, where)
    if sc.unavailable:
        raise UsageError(f"{where}: {scenario_id} cannot run here: {sc.unavailable}")
    if not sc.fresh:
        return _run(fs, sc, overrides, where, None)
    fresh = f"-{secrets.token_hex(3)}"
    try:
        return _run(fs, sc, overrides, where, fresh)
    finally:  # as juicefs bench removes its directory: the next run writes new files again
        for name in os.listdir(fs.workdir):
            if fresh in name:
                shutil.rmtree(os.path.join(fs.workdir, name), ignore_errors=True)


def _run(fs: Workspace, sc: Scenario, overrides: Mapping[str, object], where: str,
         fresh: str | None) -> WorkloadResult:
    measured = [i for i, st in enumerate(sc.steps) if st.engine not in ("cold", "drop")]
    result: WorkloadResult | None = None
    rounds = itertools.count(1)
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
        if fresh is not None and job is not None and hasattr(job, "subdir"):
            job = dataclasses.replace(job, subdir=job.subdir + fresh)

        def once(label: str, engine: Engine | None = engine, judged: bool = final,
                 params: dict[str, object] = params, job: object = job) -> WorkloadResult:
            if engine is None:  # fio: per_job is fsperf.fio()'s, not an option of fio's
                options = {k: v for k, v in params.items() if k != "per_job"}
                per_job = params.get("per_job", False)
                if not isinstance(per_job, bool):
                    raise UsageError(f"{where}: per_job={per_job!r} must be True or False")
                return fs.run_fio(label, judged, options, where, per_job=per_job)
            if fresh is not None and judged and isinstance(job, FilesJob) and job.mode == "write":
                # a fresh write: new files in every round
                job = dataclasses.replace(job, subdir=f"{job.subdir}.{next(rounds)}")
            return engine.step(fs, label, job, judged, where)

        result = fs.repeat(name, once, tag=lambda r: _tag(sc.id, r)) if final else fs.keep(once(name))
    assert result is not None
    return result


def _tag(scenario_id: str, result: WorkloadResult) -> WorkloadResult:
    """The measured step as the scenario's result: its id, and a juicefs bench grade."""
    graded = juicefs_grade(scenario_id, result)
    notes = (*result.notes, graded) if graded else result.notes
    return dataclasses.replace(result, scenario=scenario_id, notes=notes)
