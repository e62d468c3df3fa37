"""Settings: one row per option, and one precedence rule (command line > marker > ini > default)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_fsperf.errors import UsageError
from pytest_fsperf.options.config import OPTIONS, Chosen, Source, choose, for_item, settings_from
from pytest_fsperf.options.parse import RULE, Raw


def raw(text: str, source: Source = Source.COMMAND_LINE) -> Raw:
    return Raw(text, f"x={text} ({source})", Path("/nonexistent"), source)


def test_every_row_has_a_field_and_converts_its_own_default():
    fields = {opt.field for opt in OPTIONS}
    settings = settings_from({}, Path("."))
    for name in fields:
        assert getattr(settings, name) == next(o.default for o in OPTIONS if o.field == name)
    assert len(fields) == len(OPTIONS)


@pytest.mark.parametrize(("given", "winner"), [
    ((Source.COMMAND_LINE, Source.MARKER, Source.INI), Source.COMMAND_LINE),
    ((Source.INI, Source.MARKER), Source.MARKER),
    ((Source.DEFAULT, Source.INI), Source.INI),
    ((Source.DEFAULT,), Source.DEFAULT),
])
def test_the_strongest_source_wins_whatever_the_order(given, winner):
    candidates = [Chosen(i + 1, src, f"{src}") for i, src in enumerate(given)]
    for order in (candidates, candidates[::-1]):
        chosen = choose(*order)
        assert chosen.source == winner
        assert len(chosen.over) == len([s for s in given if s not in (winner, Source.DEFAULT)])


def test_a_command_line_setting_beats_the_marker_and_says_so():
    settings = settings_from({"rounds": raw("5")}, Path("."))
    chosen = for_item(settings, "rounds", 3, "fsperf marker rounds=3")
    assert chosen.value == 5
    assert chosen.over == ("fsperf marker rounds=3",)
    assert "over fsperf marker rounds=3" in chosen.describe("rounds")
    ini = settings_from({"rounds": raw("2", Source.INI)}, Path("."))
    assert for_item(ini, "rounds", 3, "marker").value == 3
    assert for_item(ini, "rounds", None, "marker").value == 2


def test_a_bad_value_names_where_it_came_from():
    with pytest.raises(UsageError, match=r"x=0 \(ini file\): must be from 1 to 1000"):
        settings_from({"rounds": raw("0", Source.INI)}, Path("."))


def test_the_rule_shows_in_the_header_and_in_the_results(pytester, tmp_path):
    pytester.makeini("[pytest]\nfsperf_rounds = 2\n")
    pytester.makepyfile("""
        from pytest_fsperf import fsperf

        @fsperf(rounds=3)
        def test_marked(fsperf):
            assert fsperf._runner.rounds == 5
            fsperf.fio(rw="write", bs="64k", size="256k")

        def test_plain(fsperf):
            assert fsperf._runner.rounds == 5
    """)
    out = tmp_path / "r.json"
    r = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-rounds=5", f"--fsperf-json={out}")
    r.assert_outcomes(passed=2)
    r.stdout.fnmatch_lines([f"fsperf: precedence {RULE}", "fsperf: --fsperf-rounds=5 (command line), over fsperf_rounds = 2 (ini file *)"])
    (row,) = json.loads(out.read_text())["results"]
    assert len(row["rounds"]) == 5
    (note,) = [n for n in row["notes"] if RULE in n]
    assert "over fsperf_rounds = 2 (ini file" in note and "over fsperf marker rounds=3" in note
    r = pytester.runpytest("-p", "no:cacheprovider")
    r.assert_outcomes(failed=2)  # ini 2 for the plain test, marker 3 for the marked one
    r.stdout.fnmatch_lines(["*assert 3 == 5*", "*assert 2 == 5*"])
