"""`juicefs bench` and the JuiceFS guide's fio jobs (document 004). Each bench row is graded
green / yellow / red with juicefs's own ranges; the grades are in the report's notes.

    pytest examples/test_juicefs_bench.py --fsperf-mount=/mnt/jfs --fsperf-baseline=juicefs-0.17-dev
"""

import pytest

from pytest_fsperf import fsperf


@pytest.mark.parametrize("row", ["big_write", "big_read", "small_write", "small_read", "stat"])
def test_bench(fsperf, row):
    r = fsperf.scenario(f"jfs_bench_{row}")
    assert "red" not in r.notes[0], r.notes[0]


@pytest.mark.parametrize("job", ["seq_write", "seq_read", "rand_write", "rand_read"])
@fsperf(min_bw="10MB/s")
def test_fio(fsperf, job):
    fsperf.scenario(f"jfs_fio_{job}")  # 4 jobs x 1 GiB, 1 MiB, direct
