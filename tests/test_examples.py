"""The example suite runs as a user would run it, here shrunk further by --fsperf-scale."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_example_suite_passes_on_the_embedded_default(tmp_path):
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (apt-get install fio)")
    out = subprocess.run(
        [sys.executable, "-m", "pytest", str(EXAMPLES), "--fsperf-scale=0.001", "-p",
         "no:cacheprovider", f"--fsperf-json={tmp_path / 'r.json'}"],
        capture_output=True, text=True, cwd=EXAMPLES, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "3 passed" in out.stdout
    for workload in ("seq_write", "seq_read", "seq_read_4j"):
        assert workload in out.stdout
