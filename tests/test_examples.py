"""The example suite runs as a user would run it, here shrunk further by --fsperf-scale."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_fsperf.store.minio import find_minio
from tests.conftest import need

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

TIER = "fio"  # every test here, unless one says otherwise (conftest.py)


@pytest.fixture
def cpu_hog():
    """Both cores kept busy (two `yes > /dev/null`) while the examples run: the README's first
    command must pass on a loaded machine too (its assertions hold on any machine). Under two
    hogs every pair of the rclone A/B was once dropped as 'the machine changed'."""
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(2)]
    yield
    for hog in hogs:
        hog.kill()
        hog.wait()


def test_example_suite_passes_on_the_embedded_default(tmp_path, cpu_hog):
    need("fio")
    out = subprocess.run(
        # the A/B's outcome is checked here; its settling and profiled pair are tested elsewhere
        [sys.executable, "-m", "pytest", str(EXAMPLES), "--fsperf-scale=0.001", "-p",
         "no:cacheprovider", f"--fsperf-json={tmp_path / 'r.json'}", "--fsperf-settle=off",
         "--fsperf-profile=off"],
        capture_output=True, text=True, cwd=EXAMPLES, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    counts = dict((k, int(n)) for n, k in re.findall(r"(\d+) (passed|skipped|failed)", out.stdout))
    assert counts.get("passed", 0) + counts.get("skipped", 0) == 29, out.stdout
    assert counts.get("passed", 0) >= 24 and "failed" not in counts
    for workload in ("seq_write", "seq_read", "seq_read_4j", "files_read", "sysbench_rndrw",
                     "fluid_warmed_read", "jfs_bench_stat", "jfs_fio_rand_read"):
        assert workload in out.stdout
    assert "juicefs bench: " in out.stdout
    if shutil.which("s3fs") and shutil.which("rclone") and shutil.which("ossfs2") and find_minio():
        assert counts["passed"] == 29, out.stdout
        assert "A/B test_rclone_bwlimit_costs_bandwidth read on rclone" in out.stdout
