"""The HTML report opens offline and its charts are drawn, as a real headless browser sees it."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.integration


def browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no headless browser (apt-get install chromium)")


def test_report_charts_are_drawn_in_chromium(pytester, bindfs):
    chrome = browser()
    mount = bindfs()
    pytester.makepyfile("""
        def test_read(fsperf):
            fsperf.cold()
            fsperf.fio(rw="read", bs="1M", size="16M", direct=1, time_based=1, runtime="1s")
    """)
    report = pytester.path / "report.html"
    r = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-mount={mount.point}",
                           "--fsperf-rounds=3", f"--fsperf-html={report}")
    r.assert_outcomes(passed=1)
    text = report.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)  # nothing fetched: opens offline
    out = subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu",
                          "--virtual-time-budget=2000", "--dump-dom", report.as_uri()],
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    drawn = dict(re.findall(r'<svg class="chart"[^>]*aria-label="([^"]+)"[^>]*data-drawn="(\d+)"', out.stdout))
    assert drawn == {"bandwidth per workload and round": "3", "daemon CPU (100% = one core)": "1",
                     "daemon peak memory": "1"}, out.stdout[:3000]
    assert "test_read" in out.stdout and re.search(r"B/s \[[\d.]+", out.stdout)
