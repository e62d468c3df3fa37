"""The HTML page as a reader sees it at 1400 px, laid out by a real headless browser: no axis
label clipped at the left edge, no chart for a figure that was not measured, every threshold
line labelled, the verdict column in view."""

from __future__ import annotations

import copy
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_fsperf.report import html, view
from tests.results import read_doc
from tests.test_html import browser

TIER = "fio"  # starts a browser

DATA = Path(__file__).parent / "data"
PROBE = """
<script>
const out = {};
out.ticks = [...document.querySelectorAll('svg text.tick')].map(
  t => t.getBoundingClientRect().left - t.ownerSVGElement.getBoundingClientRect().left);
const head = [...document.querySelectorAll('table.results th')].pop();
out.verdict_right = head ? head.getBoundingClientRect().right : -1;
out.width = document.documentElement.clientWidth;
document.body.setAttribute('data-probe', JSON.stringify(out));
</script>
"""


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((DATA / "canned-results.json").read_text())
    doc = copy.deepcopy(doc)
    slow = doc["results"][0]  # a timeline of tiny rates (axis labels such as 0.00032) and no daemon
    slow["timeline"] = {"interval": 1.0, "t": [0, 1, 2, 3], "moved": [320, 310, 330],
                        "bw": [320.0, 310.0, 330.0],
                        "rss": [None, None, None], "cpu": [0.0, 0.0, 0.0], "threads": [None] * 3,
                        "fds": [None] * 3, "disk": [None] * 3}
    slow["daemon"] = None
    # a parametrized suite's ids are long: the table is wider than the window
    doc["results"][1]["test"] += "[oss_cn_hangzhou_internal_bucket_with_a_long_name_and_the_ossfs2_options_readdir_optimize_direct_read_max_cached_mem_mb_4096_parallel_count_64]"
    for r in doc["results"]:  # thresholds as a run with @fsperf(min_bw=...) records them
        if r.get("verdict") in ("pass", "FAIL") and r["total"].get("io_bytes"):
            r["limits"] = {"bw": {"bound": "min", "limit": 0.8 * r["total"]["bw_bytes"],
                                  "text": "min_bw 1MB/s"}}
    return doc


def _laid_out(tmp_path: Path, page: str, width: int = 1400) -> tuple[str, dict[str, Any]]:
    path = tmp_path / "report.html"
    path.write_text(page.replace("</body>", PROBE + "</body>"))
    out = subprocess.run([browser(), "--headless", "--no-sandbox", "--disable-gpu",
                          f"--window-size={width},1200", "--virtual-time-budget=2000",
                          "--dump-dom", path.as_uri()],
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    found = re.search(r"data-probe=\"([^\"]+)\"", out.stdout)
    assert found, out.stdout[-2000:]
    return out.stdout, json.loads(found.group(1).replace("&quot;", '"'))


def test_at_1400_px_nothing_is_clipped_and_the_verdict_is_in_view(tmp_path: Path) -> None:
    doc = _doc()
    page = html.document(view.build(*read_doc(doc), False))
    dom, probe = _laid_out(tmp_path, page)
    assert probe["ticks"] and min(probe["ticks"]) >= 0, probe["ticks"]  # labels like 0.00032
    assert 0 < probe["verdict_right"] <= probe["width"], probe
    timeline = dom[dom.index('class="chart timeline"'):]
    timeline = timeline[:timeline.index("</svg>")]
    assert "MB/s" in timeline and "daemon RSS" not in timeline  # no daemon: no memory panel
    limits = re.findall(r'<line class="limit"', dom)
    labels = re.findall(r'<text class="limit-label"[^>]*>([^<]+)</text>', dom)
    # each threshold line has its tooltip; its label is drawn once, not over every bar
    assert limits and len(labels) == len(set(labels)) >= 1, (limits, labels)
    assert any("min_bw" in label for label in labels)


@pytest.mark.parametrize("width", [420])
def test_on_a_phone_the_verdict_column_stays_in_view(tmp_path: Path, width: int) -> None:
    doc = _doc()
    page = html.document(view.build(*read_doc(doc), False))
    _dom, probe = _laid_out(tmp_path, page, width)
    assert 0 < probe["verdict_right"] <= probe["width"], probe
