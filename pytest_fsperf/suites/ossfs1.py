"""The ossfs 1.91+ scenarios (document 002): sysbench-fileio-like sequential write, read and
random read/write over 128 files of 16 KiB blocks (as fio jobs), ls and find over 1,000,
10,000 and 100,000 files, and 10 concurrent reads of 10 GB files (the direct_read case)."""

import pytest

from pytest_fsperf.fixture import Fsperf

SCENARIOS = ["sysbench_seqwr", "sysbench_seqrd", "sysbench_rndrw", "ls_1k", "ls_names_1k",
             "find_1k", "ls_10k", "find_10k", "ls_100k", "find_100k", "direct_read_10x10g"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_ossfs1(fsperf: Fsperf, scenario: str) -> None:
    fsperf.scenario(scenario)
