"""The dataset-cache scenarios (document 003): 8 jobs, 1 MiB, iodepth 4 over one 15 GB
file: the cold first read, the first read after a warm-up pass, the steady repeated read.
Baselines: fluid-zos-* and fluid-hpfs-* (accelerated on MEM or SSD, or unaccelerated)."""

import pytest

from pytest_fsperf.fixture import Fsperf

SCENARIOS = ["fluid_cold_read", "fluid_warmed_read", "fluid_steady_read"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_fluid(fsperf: Fsperf, scenario: str) -> None:
    fsperf.scenario(scenario)
