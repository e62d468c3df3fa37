"""Median, MAD and bootstrap intervals."""

from hypothesis import given
from hypothesis import strategies as st

from pytest_fsperf.stats import mad, median, median_ci, ratio_ci

figures = st.lists(st.floats(min_value=1, max_value=1e10, allow_nan=False), min_size=1, max_size=12)


def test_median_and_mad():
    assert median([3, 1, 2]) == 2
    assert mad([1, 2, 3, 4, 100]) == 1


@given(figures)
def test_median_interval_holds_the_median_and_stays_in_range(values):
    lo, hi = median_ci(values)
    assert min(values) <= lo <= hi <= max(values)
    assert median_ci(values) == (lo, hi)  # seeded: the same every time


def test_ratio_interval_separates_a_clear_slowdown():
    old = [100.0, 101.0, 99.0, 100.5, 99.5]
    new = [89.0, 90.0, 91.0, 90.5, 89.5]
    lo, hi = ratio_ci(new, old)
    assert 0.87 < lo <= hi < 0.93
    lo, hi = ratio_ci(old, old)
    assert lo < 1 < hi or lo == hi == 1
