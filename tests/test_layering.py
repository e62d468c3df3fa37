"""The package's shape: each folder is a stage of the pipeline, and no module imports from a
stage above its own. The words (units, vocabulary, errors, statistics) are for everyone."""

from __future__ import annotations

import ast
from pathlib import Path

TIER = "unit"  # every test here (conftest.py)

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_fsperf"

# Bottom first. A module may import from its own stage and any stage below it.
STAGES: list[tuple[str, tuple[str, ...]]] = [
    ("words", ("units", "vocab", "figures", "errors", "stats", "version", "typed")),
    # the contract: what a workload produced and how it was judged, plain frozen data that
    # imports only the words; meters and judges make it, a results file reads back into it
    ("result", ("result",)),
    ("infra", ("infra",)),  # processes, the leftovers record, the lock, safe files, /proc
    ("plan", ("plan",)),  # the frozen plan a marker states
    ("mounts", ("mounts",)),  # backends: specs, mounting, finding the daemon
    ("store", ("store",)),  # the object store under a mount: MinIO, request counts, cost
    ("measure", ("measure",)),  # meters (one list: measure/registry.py) and the cold cache
    ("saved", ("saved",)),  # saved runs on disk: read and named here only
    ("engine", ("engine",)),  # load generators: fio, the in-process engines
    ("baselines", ("baselines",)),  # published figures
    ("judge", ("judge",)),  # verdicts: thresholds, comparisons, history (pure)
    ("hosts", ("hosts",)),  # clients on other hosts over SSH
    ("options", ("options",)),  # settings from the command line and ini, validated and frozen
    ("runner", ("runner",)),  # work directory, cold state, rounds, the window, A/B, clients
    ("scenarios", ("scenarios",)),  # the published workloads, run step by step
    ("ceilings", ("ceilings",)),  # what the store, FUSE and tmpfs move for the same job
    ("report", ("report",)),  # terminal, Markdown, HTML, JSON
    ("session", ("session",)),  # the session object: mounts, the store, saved runs
    ("top", ("fixture", "plugin", "session_plugin", "declared", "stores", "cli", "cli_parser", "hooks", "suites", "bisect", "__init__", "__main__")),
]
WORDS = STAGES[0][1]
# Stages that never import pytest: everything below the session (the measuring core).
WITHOUT_PYTEST = {name for name, _ in STAGES[: [s for s, _ in STAGES].index("session")]}


def stage_of(module: str) -> int:
    """The stage index of a module named relative to the package ('measure.meters')."""
    head = module.split(".", 1)[0]
    for i, (_, members) in enumerate(STAGES):
        if head in members:
            return i
    raise AssertionError(f"pytest_fsperf.{module} is in no stage: add it to STAGES")


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        found[".".join(parts)] = path
    return found


def _type_only(tree: ast.Module) -> set[int]:
    """Lines under `if TYPE_CHECKING:` (annotations only: nothing is imported at run time)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module relative to the package) of each pytest_fsperf import; 'pytest' for a
    run-time import of pytest. A name taken from the package itself is from its __init__."""
    tree = ast.parse(path.read_text())
    found = modules()
    type_only = _type_only(tree)
    out = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: relative import"
            names = [node.module or ""]
            if node.module == "pytest_fsperf":
                names = [f"pytest_fsperf.{a.name}" if a.name in found or f"{a.name}.__init__" in found
                         else "pytest_fsperf.__init__"
                         for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if name.startswith("pytest_fsperf."):
                out.append((node.lineno, name.removeprefix("pytest_fsperf.")))
            elif (name in ("pytest", "_pytest") or name.startswith("_pytest.")) and node.lineno not in type_only:
                out.append((node.lineno, "pytest"))
    return out


def test_no_module_imports_from_a_stage_above_its_own() -> None:
    found = modules()
    wrong = []
    for module, path in sorted(found.items()):
        mine = stage_of(module)
        for line, target in imports(path):
            if target == "pytest":
                if STAGES[mine][0] in WITHOUT_PYTEST:
                    wrong.append(f"pytest_fsperf/{path.relative_to(PACKAGE)}:{line}: imports pytest")
                continue
            theirs = stage_of(target)
            if (theirs > mine and STAGES[mine][0] != "words") or (mine == 0 and theirs > 0):
                wrong.append(f"pytest_fsperf/{path.relative_to(PACKAGE)}:{line}: "
                             f"{STAGES[mine][0]} imports {target} ({STAGES[theirs][0]}, above)")
    assert not wrong, "\n".join(wrong)


def test_every_folder_is_a_stage() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    staged = {m for _, members in STAGES for m in members}
    assert folders <= staged, f"folders in no stage: {sorted(folders - staged)}"


def test_no_module_is_over_450_lines_nor_a_function_over_80() -> None:
    long = {m: n for m, p in modules().items() if (n := len(p.read_text().splitlines())) > 450}
    assert not long, long
    functions = {f"{m}.{node.name}": n for m, p in modules().items() for node in ast.walk(ast.parse(p.read_text()))
                 if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                 and (n := (node.end_lineno or node.lineno) - node.lineno + 1) > 80}
    assert not functions, functions


def test_the_rule_catches_an_upward_import(tmp_path: Path) -> None:
    """The check itself: a meter importing the runner is named."""
    bad = tmp_path / "meters.py"
    bad.write_text("from pytest_fsperf.runner.workspace import Workspace\n")
    (_line, target), = imports(bad)
    assert stage_of(target) > stage_of("measure.meters")


def loaded_by(module: str) -> set[str]:
    """Every package module importing `module` loads at run time (its packages' __init__
    too; imports under TYPE_CHECKING and inside functions left out: they run later)."""
    found = modules()
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for n in range(1, len(parts) + 1):  # a module's packages are imported before it
            here = ".".join(parts[:n])
            key = here if here in found else f"{here}.__init__"
            if key in seen or key not in found:
                continue
            seen.add(key)
            tree = ast.parse(found[key].read_text())
            for line, target in imports(found[key]):
                top = [s for s in tree.body if getattr(s, "lineno", 0) == line]
                if target != "pytest" and top:  # a module-level import only
                    todo.append(target)
    return seen


def test_reading_a_results_file_imports_the_contract_alone() -> None:
    """A results file reads back (result/document.Document) through the result types and the
    words: not the meters, mounts, processes or judges that made it (61 modules before)."""
    loaded = loaded_by("result.document")
    readers = {"__init__"}
    outside = sorted(m for m in loaded - readers if STAGES[stage_of(m)][0] not in ("words", "result"))
    assert not outside, outside
    assert len(loaded) <= 24, sorted(loaded)


def test_the_import_count_sees_a_module_level_import() -> None:
    assert "result.workload" in loaded_by("result.document")
    assert "mounts.spec" in loaded_by("mounts.mounter")


def test_every_readings_fields_are_the_results_of_the_same_type() -> None:
    """A reading reaches the result by its fields' names (runner/window.py): each field of
    every Reading is a WorkloadResult field whose annotation is the same, so a renamed or
    retyped field fails here, not in a session."""
    import dataclasses
    import importlib
    import typing

    from pytest_fsperf.measure.reading import Reading
    from pytest_fsperf.result.workload import WorkloadResult

    for module in modules():
        if module.startswith(("measure.", "runner.")):
            importlib.import_module(f"pytest_fsperf.{module}")
    kinds = Reading.__subclasses__()
    assert len(kinds) >= 10, kinds
    result = typing.get_type_hints(WorkloadResult)
    wrong = [f"{k.__name__}.{name}: {kind} vs {result.get(name)}" for k in kinds
             for name, kind in typing.get_type_hints(k).items()
             if name in {f.name for f in dataclasses.fields(k)} and result.get(name) != kind]
    assert not wrong, wrong


def test_one_name_per_list() -> None:
    """`METRICS` is the figures' registry (figures.py) and nothing else; no module renames it
    on import (it had named three lists, `FIGURES` two more, each aliased)."""
    lists, aliases = [], []
    for module, path in modules().items():
        for node in ast.parse(path.read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, ast.AnnAssign) else []
            lists += [f"{module}.{t.id}" for t in targets if isinstance(t, ast.Name) and t.id in ("METRICS", "FIGURES")]
            if isinstance(node, ast.ImportFrom):
                aliases += [f"{module}: {a.name} as {a.asname}" for a in node.names
                            if a.name in ("METRICS", "FIGURES") and a.asname not in (None, a.name)]
    assert lists == ["figures.METRICS"], lists
    assert not aliases, aliases


def test_the_runner_reads_settings_resolved_not_the_flags() -> None:
    """Settings are resolved once, into what the runner reads (runner/running.Running, made
    by session/state.py): no module of the runner or the stages it drives imports options/
    (as found: the 69-field Settings was read 17 times in runner/ besides the per-test ones)."""
    found = [f"{module}:{line} {name}" for module, path in modules().items()
             if module.split(".", 1)[0] in ("runner", "scenarios", "ceilings")
             for line, name in imports(path) if name.split(".", 1)[0] == "options"]
    assert found == []


def test_the_session_hooks_module_wires_and_does_no_work_of_its_own() -> None:
    """session_plugin.py holds pytest's hooks and the fixtures' bodies plugin.py calls; the
    session's behaviour is in session/ (guard, mounting, judging, the reporter, the second
    pass), each a module of its own (as found: signals, the watchdog, the mount plumbing and
    the inconclusive-to-warning policy were all in the hooks file)."""
    tree = ast.parse((PACKAGE / "session_plugin.py").read_text())
    defs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    own = {d for d in defs if not d.startswith("pytest_")}
    assert own <= {"sessionstart", "collection_modifyitems", "settings", "fsperf", "fail", "_fault"}, own
