"""Your own fio job file (--fsperf-jobfile=FILE, or `fsperf bench --fio FILE`): each job
section a workload, run one after another in the work directory, [global] under each."""

import pytest

from pytest_fsperf.fixture import Fsperf


def test_jobfile(fsperf: Fsperf) -> None:
    path = fsperf.settings.jobfile
    if path is None:
        pytest.skip("no job file: give --fsperf-jobfile=FILE (fsperf bench --fio FILE)")
    fsperf.fio(jobfile=path)
