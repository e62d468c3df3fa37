"""The README and the docs/ pages hold together: every relative link names a file that is
there, every #anchor a heading of its page, and the site builds with warnings as errors."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def slug(heading: str) -> str:
    """A heading's anchor as GitHub and MkDocs make it: lower case, punctuation dropped,
    spaces to -."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text("utf-8"), flags=re.DOTALL)
    return {slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)}


@pytest.mark.unit
@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_holds(page):
    text = page.read_text("utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        found = (page.parent / path).resolve() if path else page
        assert found.exists(), f"{page.name}: link to {target!r}: no such file"
        if anchor and found.suffix == ".md":
            assert anchor in anchors(found), f"{page.name}: link to {target!r}: no such heading"


@pytest.mark.unit
@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_page_read_as_markdown_shows_no_placeholder(page):
    """Issue 74.4, as found: backends.md read on GitHub showed `--fsperf-ab-max-rounds=<!--
    fsperf:default ab_max_rounds -->`. A default is written into the source between its
    marks (docs/hooks.py), never inside a code span, where a comment is shown as written."""
    import sys

    sys.path.insert(0, str(DOCS))
    from hooks import refresh

    text = page.read_text("utf-8")
    assert refresh(text) == text, f"{page.name}: run `python3 docs/hooks.py`"
    assert not re.search(r"<!-- fsperf:default \w+ -->(?![^<]*<!-- /fsperf -->)", text)
    for span in re.findall(r"`[^`\n]+`", text):
        assert "<!--" not in span, f"{page.name}: a placeholder in a code span: {span}"


@pytest.mark.unit
def test_the_readme_is_short_and_keeps_its_two_commands():
    text = (ROOT / "README.md").read_text("utf-8")
    assert len(text.splitlines()) <= 120
    assert "python3 -m pytest" in text  # the test command CI runs
    assert "fsperf bench" in text and "pytest --fsperf-mount=" in text


@pytest.mark.fio
def test_the_site_builds_with_warnings_as_errors(tmp_path):
    """The options, marker and fixture reference pages are generated from the code at build
    time (docs/hooks.py): every option of table.OPTIONS is on the built page."""
    if shutil.which("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install mkdocs-material)")
    from pytest_fsperf.options.config import OPTIONS

    out = subprocess.run(["mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    page = (tmp_path / "site" / "reference" / "options" / "index.html").read_text("utf-8")
    for o in OPTIONS:
        assert f"{o.flag}={o.metavar}" in page, o.flag
    fixture = (tmp_path / "site" / "reference" / "fixture" / "index.html").read_text("utf-8")
    assert "fsperf.fio(" in fixture and "jobfile" in fixture


@pytest.mark.unit
def test_ci_installs_what_the_readme_lists_and_runs_its_test_command():
    """.ci/run is the README's set-up line on a fresh machine: the same apt packages, the
    package with the same extras, then the same test command, last."""
    readme = (ROOT / "README.md").read_text("utf-8")
    ci = (ROOT / ".ci" / "run").read_text("utf-8")
    line = next(s.strip() for s in readme.splitlines() if s.strip().startswith("apt-get install -y fio fuse3"))
    apt, pip, test = (part.strip() for part in line.split("&&"))
    assert set(apt.split()[3:]) == set(re.search(r"apt-get install -y -qq ([^>]+)>", ci)[1].split())
    assert pip.replace("pip install", "python3 -m pip install -q") in ci
    commands = [s.strip() for s in ci.splitlines() if s.strip() and not s.strip().startswith("#")]
    assert commands[-1] == test == "python3 -m pytest"


def test_tox_installs_the_extras_the_tests_import():
    """As found: `tox` (extras `test` only) failed test_hostile_inputs.py, which needs the
    `history` extra; the README's set-up line has them all."""
    import configparser

    readme = (ROOT / "README.md").read_text("utf-8")
    extras = set(re.search(r"pip install -e '\.\[([a-z0-9,]+)\]'", readme)[1].split(","))
    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini")
    assert {e.strip() for e in tox["testenv"]["extras"].split(",")} == extras - {"lint", "docs"}
