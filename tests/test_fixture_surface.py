"""The fixture a test author gets: exactly the documented attributes, each with its docstring,
and the reference page generated from them."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any, cast

from pytest_fsperf.fixture import Fsperf
from pytest_fsperf.options.config import Settings
from pytest_fsperf.runner.workspace import Workspace

TIER = "unit"  # every test here (conftest.py)

DOCUMENTED = {"workdir", "daemon", "cache_dirs", "results", "cold", "drop_page_cache", "fio",
              "files", "meta", "checkpoint", "mdtest", "sysbench", "scenario", "compare"}


def _hooks() -> Any:
    path = Path(__file__).resolve().parent.parent / "docs" / "hooks.py"
    spec = importlib.util.spec_from_file_location("fsperf_docs_hooks", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_public_attributes_are_exactly_the_documented_ones() -> None:
    fsperf = Fsperf(cast(Workspace, object()), cast(Settings, object()))
    public = {n for n in dir(fsperf) if not n.startswith("_")}
    assert public == DOCUMENTED
    members = _hooks().fixture_members()
    assert set(members) == public  # the reference page lists each one, generated
    for name in public:
        assert (getattr(Fsperf, name).__doc__ or "").strip(), f"fsperf.{name} has no docstring"
        assert f"`fsperf.{name}" in members[name]


def test_the_reference_page_is_generated_from_the_fixture() -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "reference" / "fixture.md").read_text()
    rendered = _hooks().on_page_markdown(page)
    assert "<!-- fsperf:fixture -->" in page
    for line in _hooks().fixture_members().values():
        assert line in rendered


def test_the_committed_reference_pages_are_current() -> None:
    """GitHub and an editor show the pages as committed: the generated tables are written
    into them (`python docs/hooks.py`), and a page the code has moved on from fails here."""
    hooks = _hooks()
    docs = Path(__file__).resolve().parent.parent / "docs"
    for page in hooks.PAGES:
        text = (docs / page).read_text()
        assert hooks.refresh(text) == text, f"docs/{page} is stale: run python docs/hooks.py"
        assert "<!-- /fsperf" in text
    fixture = (docs / "reference" / "fixture.md").read_text()
    for method, job in hooks.ENGINES:  # every engine's every parameter, documented
        section = fixture[fixture.index(f"**`fsperf.{method}()`**"):].splitlines()
        for f in __import__("dataclasses").fields(job):
            row = next(line for line in section if line.startswith(f"| `{f.name}` |"))
            assert not row.rstrip().endswith("|  |"), f"{method}({f.name}=) is not described"


def test_the_options_reference_shows_defaults_as_a_user_writes_them() -> None:
    from pytest_fsperf.options.config import OPTIONS, Settings

    hooks = _hooks()
    for o in OPTIONS:
        shown = hooks.as_written(o)
        assert not any(c in shown for c in "(<="), f"{o.name}: {shown}"  # no code repr
    assert hooks.as_written(hooks.BY_KEY["tolerance"]) == "10%"
    assert hooks.as_written(hooks.BY_KEY["cpus"]) == "auto"
    # a number written on a hand-made page comes from the code, not from a copy
    page = "up to <!-- fsperf:default ab_max_rounds --><!-- /fsperf --> pairs"
    assert hooks.on_page_markdown(page) == (f"up to <!-- fsperf:default ab_max_rounds -->"
                                            f"{Settings().ab_max_rounds}<!-- /fsperf --> pairs")


def test_no_page_writes_a_default_the_code_does_not_have() -> None:
    import re

    from pytest_fsperf.options.config import Settings

    docs = Path(__file__).resolve().parent.parent / "docs"
    text = "\n".join(p.read_text() for p in docs.rglob("*.md"))
    written = re.findall(r"--fsperf-ab-max-rounds`?[= (]+(\d+)", text)
    assert all(int(value) == Settings().ab_max_rounds for value in written), written
    assert re.findall(r"--fsperf-ab-max-rounds`?[= (]+(\d+)", "`--fsperf-ab-max-rounds` (16)") == ["16"]
