"""Your own fio job file (--fsperf-jobfile=FILE, or `fsperf bench --fio FILE`): each job
section a workload, run one after another in the work directory, [global] under each."""

import pytest

from pytest_fsperf.fixture import Fsperf
from pytest_fsperf.options.config import Settings


def test_jobfile(fsperf: Fsperf, fsperf_settings: Settings) -> None:
    path = fsperf_settings.jobfile
    if path is None:
        pytest.skip("no job file: give --fsperf-jobfile=FILE (fsperf bench --fio FILE)")
    fsperf.fio(jobfile=path)
