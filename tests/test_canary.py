"""The machine canary: a fixed workload off the filesystem under test, compared as ratios."""

from __future__ import annotations

import os

from pytest_fsperf.measure import canary


def test_a_reading_touches_only_its_directory(tmp_path):
    before = set(os.listdir(tmp_path))
    r = canary.measure(str(tmp_path))
    assert r.score > 0 and set(r.parts) == {"cpu", "memory", "syscalls"}
    assert all(0 < s < 5 for s in r.parts.values())
    assert set(os.listdir(tmp_path)) == before  # its file is gone again


def test_the_machine_changed_past_half_the_tolerance():
    assert canary.moved([90.0, 91.0, 200.0], [100.0, 100.0]) == 0.91
    assert canary.moved([], [1.0]) is None
    assert canary.changed([94.0], [100.0], 0.10) and canary.changed([106.0], [100.0], 0.10)
    assert not canary.changed([96.0], [100.0], 0.10) and not canary.changed([], [100.0], 0.10)
    steady = [100.0, 93.0, 104.0, 97.0, 101.0]  # a few percent of its own noise
    assert not canary.changed([95.0, 99.0, 92.0, 96.0], steady, 0.10)
    assert canary.changed([80.0, 82.0, 79.0, 81.0], steady, 0.10)  # a busy neighbour
