"""Issue 72.5: a regression that shipped, rebuilt from its upstream source and caught by the
gate. The CI's case (benchmarks/shipped_regressions.py, gofuse-5076): go-fuse's loopback
example at the two versions of the juicedata fork that JuiceFS b6582db4c and d4779d9b4 built
with (juicedata/juicefs#5102), from the Go module proxy, checked against JuiceFS's go.sum:
64 KiB FUSE writes became 128 KiB ones. The full JuiceFS case takes minutes of building and
stays in the benchmark."""

from __future__ import annotations

import os

from benchmarks.shipped_regressions import CACHE, CASES, built, gate
from tests.conftest import need

TIER = "fuse"


def test_the_go_fuse_update_behind_juicefs_5102_is_changed_and_its_a_a_is_not():
    need("fio")
    need("go")
    case = next(c for c in CASES if c.name == "gofuse-5076")
    cache = CACHE if os.geteuid() == 0 else CACHE.with_name("fsperf-shipped-test")
    good, good_from, _ = built(case, case.good, None, cache)
    bad, bad_from, _ = built(case, case.bad, None, cache)
    assert "d78c97ed7b7a" in bad_from and "7c40cb5eb3e9" in good_from
    caught = gate(case, good, bad, 180.0)
    assert (caught.outcome, caught.decided_by) == ("changed", "fuse_per_mib"), caught
    assert 0.4 < (caught.ratio or 0) < 0.65 and caught.pairs <= 6, caught  # 8 per MiB against 16
    same = gate(case, good, good, 180.0)
    assert same.outcome in ("same", "not worse"), same
