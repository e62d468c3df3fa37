"""The `fsperf` command (also `python -m pytest_fsperf`): `bench` runs a shipped suite through
pytest (as `pytest --pyargs pytest_fsperf.suites.NAME`, which it prints); `compare-runs` and
`history` judge saved runs; `baselines` lists the documented figures; `comment` writes a pull
request's comment from a session's JSON, exiting with its decision; `ci` prints a CI recipe."""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_fsperf import units
from pytest_fsperf.baselines import load as load_baseline
from pytest_fsperf.baselines import saved_dir, shipped_names
from pytest_fsperf.baselines.relative import entries as relative_entries
from pytest_fsperf.bisect import cli as bisect_cli
from pytest_fsperf.cli_parser import DEFAULT_SCALE, OPTION, PASSED, RECIPES, USAGE_ERROR, parser
from pytest_fsperf.errors import UsageError
from pytest_fsperf.figures import FILE_KEYS, Fig
from pytest_fsperf.infra.plain import plain_output
from pytest_fsperf.judge import history, runs
from pytest_fsperf.options.parse import MAX_SCALE
from pytest_fsperf.report import comment
from pytest_fsperf.result.document import Document
from pytest_fsperf.result.judged import show_documented
from pytest_fsperf.saved import runs as saved
from pytest_fsperf.scenarios.library import SCENARIOS
from pytest_fsperf.vocab import ExitCode, RunOutcome, Unsure


def show_comment(a: argparse.Namespace) -> int:
    where = "fsperf comment"
    path = Path(a.results)
    if not path.is_file():
        raise UsageError(f"{where}: no results file {a.results!r} (the session's --fsperf-json)")
    if a.limit < 1000:
        raise UsageError(f"{where}: --limit={a.limit} is too small (at least 1000 characters)")
    if path.suffix != ".json":
        raise UsageError(f"{where}: {a.results!r} is not a .json file")
    doc = saved.read_run(path, where)  # the file named (`latest.json` too), not a search
    fails, changed = a.inconclusive == "fail", a.machine_changed and a.machine_changed == "fail"
    try:  # another version's file, or results that do not read as their types: usage
        read = Document.read(doc, f"{where}: {a.results}")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        text, code = comment.render(read, fails, a.link, a.limit), comment.exit_code(read, fails, changed)
    except Exception as exc:  # a file the schema allows that the renderer trips over: ours
        print(f"{where}: internal error on {path}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return int(ExitCode.INTERNAL)
    sys.stdout.write(text)
    return int(code)


def show_recipe(a: argparse.Namespace) -> int:
    sys.stdout.write(resources.files("pytest_fsperf").joinpath(f"ci/{RECIPES[a.kind]}").read_text("utf-8"))
    return 0


def bench_args(a: argparse.Namespace) -> list[str]:
    """The pytest command line `fsperf bench` runs (raises UsageError for a bad value)."""
    where = "fsperf bench"
    if a.mount is not None and a.backend:
        raise UsageError(f"{where}: give MOUNT or --backend, not both")
    if a.mount is not None and not os.path.isdir(a.mount):
        raise UsageError(f"{where}: MOUNT {a.mount!r} is not a directory")
    fio = getattr(a, "fio", None)
    scale = _scale(a, 1.0 if fio else DEFAULT_SCALE)
    if a.gate and not a.baseline:
        raise UsageError(f"{where}: --gate needs --baseline NAME")
    suite = "jobfile" if fio else a.suite
    args = ["--pyargs", f"pytest_fsperf.suites.{suite}", "-p", "no:cacheprovider",
            f"--fsperf-scale={scale:g}"]
    if not getattr(a, "user_config", False):
        # the suite alone: no pytest.ini, tox.ini or conftest.py of the current directory or
        # above it (as root, a conftest.py another user put there ran as uid 0)
        args += ["-c", os.devnull, f"--rootdir={os.getcwd()}", "--noconftest"]
    if fio:
        args.append(f"--fsperf-jobfile={os.path.abspath(fio)}")
    if a.mount is not None:
        args.append(f"--fsperf-mount={os.path.abspath(a.mount)}")
    args += [f"{OPTION[name].flag}={getattr(a, key)}" for key, name in PASSED.items()
             if getattr(a, key) is not None]
    if a.gate:
        args.append("--fsperf-gate=baseline")
    if a.keyword:
        args += ["-k", a.keyword]
    return args + list(getattr(a, "pytest_args", []))


def bench(a: argparse.Namespace) -> int:
    import pytest  # the command is pytest; the measuring core does not import it

    if a.ceilings:
        return ceilings(a)
    args = bench_args(a)
    if a.mount is None and not a.backend:
        print("fsperf bench: no MOUNT and no --backend: measuring a fresh directory on the local "
              "disk (no FUSE daemon); name a mount point to measure it", file=sys.stderr)
    print("fsperf bench runs: pytest " + shlex.join(args), file=sys.stderr, flush=True)
    return int(pytest.main(args))


def _scale(a: argparse.Namespace, default: float) -> float:
    scale = float(a.scale) if a.scale is not None else default
    if not 0 < scale <= MAX_SCALE:
        raise UsageError(f"fsperf bench: --scale={scale:g} must be above 0 and at most "
                         f"{MAX_SCALE:g} (above 1 for a machine bigger than the document's)")
    return scale


def ceilings(a: argparse.Namespace) -> int:

    scale = _scale(a, DEFAULT_SCALE)
    scenarios = importlib.import_module(f"pytest_fsperf.suites.{a.suite}").SCENARIOS
    for line in _ceilings_run(scenarios, scale, a.keyword):
        print(line, flush=True)
    return 0


def _ceilings_run(scenarios: Sequence[str], scale: float, keyword: str | None) -> list[str]:
    """Measure every fio scenario's ceilings (those whose id holds `keyword`, if given) with
    the embedded MinIO as the store where it is installed; the report's lines."""
    from pytest_fsperf.ceilings import machine
    from pytest_fsperf.infra import watchdog
    from pytest_fsperf.infra.lock import machine_lock
    from pytest_fsperf.options.config import Settings
    from pytest_fsperf.session.state import FsperfSession
    from pytest_fsperf.store.minio import INSTALL, find_minio, start_minio

    started = time.monotonic()
    jobs = [(s, j) for s, j in machine.fio_jobs(scenarios, scale) if not keyword or keyword in s]
    settings = Settings(scale=scale)
    with watchdog.recorded() as swept, machine_lock(
            timeout=settings.lock_timeout, say=lambda text: print(text, file=sys.stderr, flush=True)):
        session = FsperfSession(settings)
        binary = find_minio()
        server = None
        try:
            server = start_minio(binary) if binary else None
            lines = [f"removed what a killed session left: {s}" for s in swept]
            if server is None:
                lines.append(f"store: no MinIO here to measure against ({INSTALL})")
            config = server.config() if server is not None else None
            return lines + machine.report(machine.measure(session, jobs, config), started)
        finally:
            session.close()
            if server is not None:
                server.stop()


def _run_doc(ref: str, storage: Path, where: str) -> tuple[str, dict[str, Any]]:
    if ref.endswith(".json") or os.sep in ref:  # that file (`latest.json` too); one line if none
        return Path(ref).stem, saved.read_run(Path(ref), where)
    if ref == "latest":
        raise UsageError(f"{where}: name a run ('latest' is for --fsperf-compare)")
    return saved.load(storage, ref, where)[0]


def compare_runs(a: argparse.Namespace) -> int:
    where = "fsperf compare-runs"
    try:
        tolerance = units.parse_tolerance(a.tolerance)
    except ValueError as exc:
        raise UsageError(f"{where}: --tolerance: {exc}") from None
    storage = Path(a.storage)
    base_name, base = _run_doc(a.base, storage, where)
    new_name, new = _run_doc(a.new, storage, where)
    old_rows = {r.key: r for r in map(saved.SavedResult.of, base["results"])}
    rows, failing, unsure = [], 0, 0
    for r in map(saved.SavedResult.of, new["results"]):  # each checked when its run was read
        key = r.key
        old = old_rows.get(key)
        if old is None:
            rows.append((key, "-", "-", "-", "-", f"not in {base_name}"))
            unsure += 1
            continue
        c = runs.compare(base_name, key, old, r, tolerance)
        fig: Callable[[float], str] = units.format_rate if c.metric == Fig.BW else units.format_count
        band = (f"{c.ci_low:.3f} to {c.ci_high:.3f}" if c.ci_low is not None and c.ci_high is not None
                else "-")
        rows.append((key, _shown(fig, c.old), _shown(fig, c.new),
                     f"{c.ratio:.3f}x" if c.ratio is not None else "-", band, c.outcome))
        failing += c.outcome == RunOutcome.REGRESSION
        unsure += c.outcome.unsure
        if c.outcome not in (RunOutcome.PASS, RunOutcome.IMPROVEMENT):
            print(c.message(tolerance), file=sys.stderr)
    head = ("workload", base_name, new_name, "ratio", "95% interval", "outcome")
    _table([head, *rows])
    print(f"{len(rows)} workload{'' if len(rows) == 1 else 's'}: {failing} regressed, {unsure} undecided "
          f"(tolerance {100 * tolerance:g}%)")
    if failing or (unsure and Unsure(a.inconclusive) is Unsure.FAIL):
        return 1
    return 0


def show_history(a: argparse.Namespace) -> int:
    where = "fsperf history"
    try:
        tolerance = units.parse_tolerance(a.tolerance)
        least = units.parse_tolerance(a.min_change)
    except ValueError as exc:
        raise UsageError(f"{where}: --tolerance/--min-change: {exc}") from None
    figures = tuple(f.strip() for f in a.figure.split(",") if f.strip())
    unknown = [f for f in figures if f not in history.FOLLOWED]
    if unknown or not figures:
        raise UsageError(f"{where}: --figure {','.join(unknown)}: not one of "
                         f"{', '.join(history.FOLLOWED)}")
    if not 0 < a.max_pvalue < 1 or a.window < 4 or a.recent < 1:
        raise UsageError(f"{where}: --max-pvalue must be in (0, 1), --window at least 4, "
                         "--recent at least 1")
    if missing := history.available():
        raise UsageError(f"{where}: {missing}")
    found, skipped = saved.read(saved.paths(a.runs, Path(a.storage)))
    for line in skipped:
        print(f"skipped {line}", file=sys.stderr)
    if not found:
        raise UsageError(f"{where}: none of the files is a saved run")
    analyses, notes, lines = history.report(found, figures, a.max_pvalue, least, a.window,
                                            a.normalise)
    for line in lines:
        print(line)
    if a.html:
        from pytest_fsperf.infra import outfile
        from pytest_fsperf.report import trend
        outfile.write(Path(a.html), trend.page(analyses, notes))
        print(f"trend page: {a.html}")
    if a.gate:
        failing = history.gate(analyses, tolerance, found[-1].name, a.recent)
        for c in failing:
            print(f"history: {c.message()}", file=sys.stderr)
        return 1 if failing else 0
    return 0


def _shown(fig: Callable[[float], str], values: list[float]) -> str:
    """The median of a side's rounds, as the reports show figures."""
    return fig(statistics.median(values)) if values else "-"


def _table(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


def baselines(a: argparse.Namespace) -> int:
    root = Path.cwd()
    if a.name is None:
        rows: list[tuple[str, ...]] = [("name", "system", "scenarios with figures")]
        for name in shipped_names():
            b = load_baseline(name, root, "fsperf baselines")
            rows.append((name, f"{b.data.get('system', '')} {b.data.get('version', '')}".strip(),
                         ", ".join(b.data.get("entries", {})) or "relative: " + ", ".join(
                             b.data.get("relative", {}))))
        folder = saved_dir(root)
        saved = sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []
        for name in saved:
            try:
                b = load_baseline(name, root, "fsperf baselines")
            except UsageError as exc:  # one that cannot be read is named, not a traceback
                rows.append((name, "saved (unreadable)", str(exc)[:80]))
                continue
            rows.append((name, f"saved at scale {b.data.get('scale')}",
                         ", ".join(b.data.get("entries", {}))))
        _table(rows)
        print("shipped: documented at full scale on the machines they name; saved: by "
              f"--fsperf-save-baseline in {folder} (fsperf baselines NAME); compare with "
              "fsperf bench --baseline NAME")
        return 0
    b = load_baseline(a.name, root, "fsperf baselines")
    print(f"{b.name}: {b.data.get('system', '')} {b.data.get('version', '')} ({b.origin}); "
          f"measured on {b.data.get('hardware', '?')}; source {b.data.get('source', '?')}")
    conditions = {"os": b.data.get("os"), "kernel": b.data.get("kernel"),
                  "mount options": b.data.get("mount_options"),
                  **{k.replace("_", " "): v for k, v in (b.data.get("conditions") or {}).items()}}
    print("conditions: " + "; ".join(f"{k} {v}" for k, v in conditions.items() if v))
    if b.origin == "shipped":
        print("compared only at --fsperf-scale=1 (the document's sizes); at another scale the "
              "report shows the ratio, labelled, and does not judge it")
    rows = [("scenario", "bandwidth", "daemon CPU", "daemon memory")]  # a second table
    for scenario, entry in b.data.get("entries", {}).items():
        rows.append((scenario, *(_figure(key, entry.get(key)) for key in FILE_KEYS)))
    if len(rows) > 1:
        _table(rows)
    for e in relative_entries(b).values():
        print(f"\n{b.name}:{e.name}: {e.b} against {e.a}: {e.printed} less time, B/A "
              f"{e.speedup:.2f}x of a rate (fsperf.compare(..., expect=\"{b.name}:{e.name}\") "
              f"checks an A/B of yours; {e.scenario} is the workload)")
    for scenario in b.data.get("entries", {}):
        sc = SCENARIOS.get(scenario)
        if sc is not None:
            print(f"\n{scenario}: {sc.title}\n  {sc.fidelity}")
            if sc.command:
                print(f"  the document's command: {sc.command}")
    return 0


def _figure(key: str, figure: object) -> str:
    if not isinstance(figure, dict):
        return "-"
    per = " per job" if figure.get("per") == "job" else ""
    return show_documented(key, figure["value"], figure.get("high")) + per


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:  # fsperf bench ... -- PYTEST ARGS
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    a = parser().parse_args(argv)
    a.pytest_args = extra
    try:  # what saved runs and results hold reaches the terminal without control characters
        with plain_output(a.command not in ("bench", "bisect")):
            return {"bench": bench, "compare-runs": compare_runs, "baselines": baselines,
                    "history": show_history, "comment": show_comment, "ci": show_recipe,
                    "bisect": bisect_cli.main}[a.command](a)
    except UsageError as exc:
        print(f"fsperf: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except BrokenPipeError:  # fsperf baselines | head
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
