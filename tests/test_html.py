"""The HTML report opens offline and its charts are drawn, as a real headless browser sees it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from tests.conftest import need

TIER = "fuse"  # every test here, unless one says otherwise (conftest.py)


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


def test_the_report_is_the_record_of_a_decision(pytester, tmp_path):
    """Summary first, then what was measured (filesystem, daemon, machine, date, scale), then
    every outcome with its interval: thresholds, an A/B, a saved-run comparison, each in its
    own column or section; A/B runs out of the workloads table. Drawn at desktop and phone
    widths (the screenshots are kept in the test's directory to look at)."""
    chrome = browser()
    need("bindfs")
    need("fio")
    pytester.makepyfile("""
        from pytest_fsperf import fsperf

        @fsperf(min_bw="1KB/s")
        def test_fast(fsperf):
            fsperf.fio(rw="write", bs="1M", size="4M", direct=1)

        @fsperf(min_bw="1000GB/s")
        def test_slow(fsperf):
            fsperf.fio(rw="write", bs="1M", size="4M", direct=1)

        def test_ab(fsperf):
            fsperf.compare(dict(rw="read", bs="1M", size="4M"), a=[], b=["-o", "direct_io"],
                           rounds=2, max_rounds=2)
    """)
    # warn: the 2-pair A/B is there for the page, undecided (which would fail its test)
    base = ["-p", "no:cacheprovider", "--fsperf-backend=bindfs", "--fsperf-settle=off",
            "--fsperf-inconclusive=warn"]
    pytester.runpytest(*base, "--fsperf-save=base").assert_outcomes(passed=2, failed=1)
    report = pytester.path / "report.html"
    r = pytester.runpytest(*base, "--fsperf-compare=base", f"--fsperf-html={report}")
    r.assert_outcomes(passed=2, failed=1)
    out = subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu",
                          "--virtual-time-budget=2000", "--dump-dom", report.as_uri()],
                         capture_output=True, text=True, timeout=120, check=False)
    page = out.stdout
    summary = page.index('<section class="summary bad">')
    assert summary < page.index("What was measured") < page.index("Workloads")
    assert "FAIL: 2 workloads: 1 failing, " in page  # test_ab's runs are its comparison's
    assert "FAIL: test_slow write: bandwidth" in page
    assert re.search(r"A/B test_ab read: bandwidth B/A [\d.]+, [\d.]+% interval", page)
    for fact in ("filesystem", "fuse at ", "bindfs, mounted by the plugin", "daemon",
                 "(PID ", "machine", "date", "UTC", "scale"):
        assert fact in page, fact
    assert "<th>vs saved run</th>" in page  # saved-run outcomes in their own column
    assert "against saved run 'base'" in page
    workloads = page[page.index("Workloads"):page.index("4 runs of A/B comparisons: in their sections")]
    assert "read[A1]" not in workloads and "test_fast" in workloads
    # As found: bars carried no threshold line and a failing bar looked like a passing one;
    # the A/B chart drew A #1-2 then B #1-2, not pairs.
    bandwidth = page[page.index('aria-label="bandwidth per workload and round"'):]
    bandwidth = bandwidth[:bandwidth.index("</svg>")]
    assert re.search(r'<rect class="mark failing"[^>]*fill="#8b0000"[^>]*><title>test_slow write',
                     bandwidth), bandwidth
    assert re.search(r'<rect class="mark" [^>]*fill="#3a7bd5"[^>]*><title>test_fast write', bandwidth)
    assert "<title>min_bw 1000GB/s</title>" in bandwidth and "<title>min_bw 1KB/s</title>" in bandwidth
    assert "\u2026" not in bandwidth  # labels not truncated
    pairs = page[page.index('aria-label="bandwidth per pair, A (blue) beside B (red)"'):]
    marks = re.findall(r"<title>(pair \d [AB]):", pairs[:pairs.index("</svg>")])
    assert marks == ["pair 1 A", "pair 1 B", "pair 2 A", "pair 2 B"], marks
    for width in (1280, 420):
        shot = tmp_path / f"report-{width}.png"
        subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--window-size={width},1600", f"--screenshot={shot}", report.as_uri()],
                       capture_output=True, timeout=120, check=False)
        assert shot.stat().st_size > 10_000


@pytest.mark.slow
def test_timelines_are_drawn_a_and_b_overlaid(pytester, tmp_path):
    """A run of 6 s has a timeline: bandwidth and daemon RSS per second, drawn; an A/B draws
    its first A and first B on one axis. The terminal table has a sparkline per workload."""
    chrome = browser()
    need("bindfs")
    need("fio")
    pytester.makepyfile("""
        def test_long(fsperf):
            fsperf.fio(rw="write", bs="128k", size="64M", direct=1, time_based=1, runtime=6,
                       rate="8m")

        def test_ab(fsperf):
            fsperf.compare(dict(rw="write", bs="128k", size="32M", direct=1, time_based=1,
                                runtime=5, rate="6m"), a=[], b=["-o", "direct_io"],
                           rounds=2, max_rounds=2)
    """)
    report = pytester.path / "report.html"
    r = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-backend=bindfs",
                           "--fsperf-settle=off", f"--fsperf-html={report}")
    r.assert_outcomes(passed=2)
    assert re.search(r"test_long +write .*MB/s +[▁▂▃▄▅▆▇█]{4,}", r.stdout.str()), r.stdout.str()
    out = subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu",
                          "--virtual-time-budget=2000", "--dump-dom", report.as_uri()],
                         capture_output=True, text=True, timeout=120, check=False)
    drawn = dict(re.findall(r'<svg class="chart timeline"[^>]*aria-label="([^"]+)"[^>]*'
                            r'data-drawn="(\d+)"', out.stdout))
    long = next(int(n) for label, n in drawn.items() if label.startswith("test_long"))
    ab = next(int(n) for label, n in drawn.items() if "A and B" in label)
    assert long >= 2 * 5 and ab >= 2 * 2 * 4, drawn  # bw and RSS marks per second; A and B
    # As found: the y axis had two labels, the top one clipped and in e-notation (2e+03).
    ticks = re.findall(r'<text class="tick"[^>]*>([^<]+)</text>', out.stdout)
    assert len(ticks) >= 5 * 2 and not any("e+" in t or "e-" in t for t in ticks), ticks
    assert all(re.fullmatch(r"[\d,.]+", t) for t in ticks), ticks
    shot = tmp_path / "timeline.png"
    subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1280,2400", f"--screenshot={shot}", report.as_uri()],
                   capture_output=True, timeout=120, check=False)
    assert shot.stat().st_size > 10_000
    shutil.copy(shot, "/tmp/fsperf-timeline.png") if os.environ.get("FSPERF_KEEP_SHOTS") else None


@pytest.mark.unit
def test_a_session_where_nothing_ran_says_so_not_none_cpus():
    """As found: `machine: ?: None CPUs (None), ?, kernel None` and `tools: fio -` when no
    workload ran."""
    from pytest_fsperf.report.view import header

    said = dict(header(None))
    assert said == {"measured": "nothing: no workload ran, so no machine, mount or tools to show"}
    assert "None" not in " ".join(said.values())


@pytest.mark.unit
def test_the_cache_column_says_a_kept_store_in_the_how_tos_words():
    """As found: the report said `cold: remount+fadvise (the store's cache kept)` where the
    gate's how-to says `cold: FUSE only, the store's cache kept`."""
    from pytest_fsperf.report.cells import cache_cell
    from pytest_fsperf.vocab import DaemonCache, PageCache
    from tests.results import row as made

    for page in (PageCache.STORE_KEPT, PageCache.STORE_KEPT_GATE):
        row = made(cache=page, daemon_cache=DaemonCache.REMOUNTED)
        assert cache_cell(row) == "cold: FUSE only, the store's cache kept (daemon remounted)"
    plain = made(cache=PageCache.DROPPED, daemon_cache=DaemonCache.REMOUNTED)
    assert cache_cell(plain) == "cold: remount+drop_caches"


@pytest.mark.unit
def test_a_flame_graph_of_a_stripped_daemon_says_why_its_frames_are_unknown():
    from pytest_fsperf.report.flame import svg

    stripped = [("ossfs2;[unknown];[unknown]", 90), ("ossfs2;read", 10)]
    named = [("ossfs2;main;read_loop", 90), ("ossfs2;[unknown]", 10)]
    assert "has no symbols (stripped" in svg(named, stripped, "t")
    assert "has no symbols" not in svg(stripped, named, "t")


@pytest.mark.unit
def test_a_gated_workloads_bandwidth_bars_show_the_reference_beside_the_candidate():
    """As found: the top bandwidth chart showed only the candidate's rounds of a gate."""
    from pytest_fsperf.report.charts import bar_charts
    from tests.results import row

    b = row("t.py::test_read", "read", bw=2e8)
    a = row("t.py::test_read", "read[reference]", "-", bw=3e8, judged=False)
    bw, _cpu, _mem = bar_charts([b], {("t.py::test_read", "read"): a})
    assert [(bar.label.rsplit(" ", 1)[-1], bar.side, bar.value) for bar in bw.bars] == [
        ("A", "a", 3e8), ("B", "b", 2e8)]
    assert "reference A blue" in bw.title
    alone, _c, _m = bar_charts([b])
    assert [bar.side for bar in alone.bars] == ["now"]


@pytest.mark.unit
def test_the_header_names_the_store_conditions_the_plugins_mounts_ran_under():
    """Issue 73.3: `--fsperf-store-rtt=10ms` printed no round trip anywhere but the echoed
    option."""
    import dataclasses

    from pytest_fsperf.report.view import store_fact
    from pytest_fsperf.result.machine import Mounted
    from tests.results import row as made

    under = Mounted("s3fs", (), ("s3fs",), "rtt 10 ms, over TLS")
    rows = [dataclasses.replace(made(), mount=under) for _ in range(2)]
    assert store_fact(rows) == (("store", "rtt 10 ms, over TLS"),)
    bare = dataclasses.replace(made(), mount=dataclasses.replace(under, store=""))
    (said,) = store_fact([*rows, bare])
    assert said[1] == "rtt 10 ms, over TLS (2 rows); none (1 row)"
    assert store_fact([made()]) == ()  # an existing mount: its store is not the plugin's to say
    assert store_fact([bare]) == ()  # no conditions anywhere: nothing to say


@pytest.mark.unit
def test_a_long_cell_wraps_so_the_workloads_table_fits_the_window():
    """Issue 74.3, as found: at 1,400 px the workloads table scrolled sideways and cut cells
    (`2641 MB (started at 2634 M`): a cell longer than a figure wraps, a figure does not."""
    from pytest_fsperf.report.html import STYLE, _cell

    assert _cell("2641 MB (started at 2634 MB)") == '<td class="long">2641 MB (started at 2634 MB)</td>'
    assert _cell("524 MB/s") == "<td>524 MB/s</td>" and _cell("FAIL") == '<td class="bad">FAIL</td>'
    assert "td.long{white-space:normal" in STYLE and ":not(.long){white-space:nowrap}" in STYLE


@pytest.mark.unit
def test_a_table_wider_than_the_terminal_is_stacked_row_by_row():
    """Issue 74.3: the workloads table at 80 columns: each row its test and workload, then its
    figures wrapped to the width; wide enough, the aligned columns as before."""
    from pytest_fsperf.report.model import Table
    from pytest_fsperf.report.terminal import table

    t = Table(("test", "workload", "bandwidth", "daemon peak mem", "cache", "verdict"),
              (("test_write", "files_write", "12.0 MB/s", "2641 MB (started at 2634 MB)",
                "cold: FUSE only, the store's cache kept (daemon remounted)", "FAIL"),),
              frozenset({2, 3}))
    wide = table(t, "", 200)
    assert len(wide) == 2 and max(map(len, wide)) > 80
    narrow = table(t, "", 80)
    assert narrow[0] == "test_write  files_write" and all(len(line) <= 80 for line in narrow)
    said = " ".join(line.strip() for line in narrow[1:])
    assert "daemon peak mem 2641 MB (started at 2634 MB)" in said and "verdict FAIL" in said
    assert table(t) == wide  # no width (a pipe, a log): never stacked
