"""The ossfs 2.0 benchmark scenarios (documents 000 and 001): sequential write and read,
4-thread read, 128-thread small-file write and read. Baselines: ossfs-2.0.4, ossfs-1.91.8,
goofys-0.24.0 (ecs.g9i.48xlarge), ossfs-2.0.0beta, ossfs-1.91.4 (ecs.g7.32xlarge)."""

import pytest

from pytest_fsperf.fixture import Fsperf

SCENARIOS = ["seq_write_1t", "seq_read_1t", "seq_read_4t", "smallfile_write_128t",
             "smallfile_read_128t"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_ossfs2(fsperf: Fsperf, scenario: str) -> None:
    fsperf.scenario(scenario)
