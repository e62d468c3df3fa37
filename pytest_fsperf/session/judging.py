"""A test's measured workloads judged once, into its record: the lines it fails with; an
inconclusive or machine-changed line fails it or is a warning pointing at the test
(--fsperf-inconclusive, --fsperf-machine-changed), held where a second pass may replace it."""

from __future__ import annotations

import warnings

import pytest

from pytest_fsperf.report import junit
from pytest_fsperf.session.keys import PASSES, RECORD, STATE
from pytest_fsperf.session.second_pass import HELD
from pytest_fsperf.session.verdict import judge_test
from pytest_fsperf.vocab import Unsure


def judge_item(item: pytest.Item) -> list[str]:
    """Judge the test's workloads once into its record; returns the lines it fails with.
    Inconclusive lines fail it, or are warnings pointing at the test (--fsperf-inconclusive)."""
    record = item.stash.get(RECORD, None)
    if record is None or record.judgement is not None:
        return []
    state = item.config.stash[STATE]
    s = state.settings
    item.user_properties.extend(junit.properties(record.results))  # each figure, in JUnit XML
    j = judge_test(state, record)
    failures = list(j.failures)
    path, line, _ = item.location
    for lines, how in ((j.unsure, s.inconclusive), (j.machine, s.machine_changed or s.inconclusive)):
        if how is Unsure.FAIL:
            failures += lines
            continue
        held = item.config.stash[PASSES].holding(item) if PASSES in item.config.stash else False
        for text in lines:
            if held:  # said when its first reports are logged, if no second pass replaces them
                item.stash.setdefault(HELD, []).append((f"fsperf: {text}",
                                                        str(item.config.rootpath / path), (line or 0) + 1))
                continue
            warnings.warn_explicit(pytest.PytestWarning(f"fsperf: {text}"), pytest.PytestWarning,
                                   str(item.config.rootpath / path), (line or 0) + 1)
    return failures + (j.notes if failures else [])
