"""`juicefs bench` as tests (document 004): per thread a 1 GiB file written and read at
1 MiB, 100 files of 128 KiB written and read, 100 stats; each row graded green, yellow or
red with juicefs's own ranges (in the report's notes). Then the guide's four fio jobs,
4 x 1 GiB sequential and random. Baseline: juicefs-0.17-dev (the fio rows)."""

import pytest

from pytest_fsperf.fixture import Fsperf

BENCH = ["jfs_bench_big_write", "jfs_bench_big_read", "jfs_bench_small_write",
         "jfs_bench_small_read", "jfs_bench_stat"]
FIO = ["jfs_fio_seq_write", "jfs_fio_seq_read", "jfs_fio_rand_write", "jfs_fio_rand_read"]


@pytest.mark.parametrize("scenario", BENCH + FIO)
def test_juicefs(fsperf: Fsperf, scenario: str) -> None:
    fsperf.scenario(scenario)
