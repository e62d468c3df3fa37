"""Object-store requests per workload, counted by the plugin's own MinIO (its v3 metrics),
read around the same window as bandwidth: s3fs and rclone over a real MinIO, known
workloads, exact where the daemon has no choice, and a mount option that moves them."""

from __future__ import annotations

import pytest

from pytest_fsperf.result.store import KINDS
from pytest_fsperf.store.requests import difference, parse, probe
from tests.conftest import need, run_json

TIER = "fuse"  # every test here, unless one says otherwise (conftest.py)

V3 = """# HELP minio_api_requests_total Total number of requests
# TYPE minio_api_requests_total counter
minio_api_requests_total{name="GetObject",server="x",type="s3"} {get}
minio_api_requests_total{name="HeadObject",server="x",type="s3"} 7
minio_api_requests_total{name="ListObjectsV2",server="x",type="s3"} 1
minio_api_requests_total{name="PutObjectPart",server="x",type="s3"} 2
minio_api_requests_total{name="Heal",server="x",type="admin"} 5
# HELP minio_api_requests_4xx_errors_total 4xx
# TYPE minio_api_requests_4xx_errors_total counter
minio_api_requests_4xx_errors_total{name="HeadObject",server="x",type="s3"} {e4}
"""


@pytest.mark.unit
def test_counters_are_parsed_by_kind_and_differenced():
    before = parse(V3.replace("{get}", "10").replace("{e4}", "1"))
    after = parse(V3.replace("{get}", "14").replace("{e4}", "3"))
    q = difference(before, after)
    assert q.by_api == {"getobject": 4}
    assert q.by_kind["GET"] == 4 and q.total == 4 and set(q.by_kind) == set(KINDS)
    assert q.errors_4xx == 2 and q.errors_5xx == 0
    assert parse(V3.replace("{get}", "1").replace("{e4}", "0")).requests["putobjectpart"] == 2
    assert "heal" not in parse(V3.replace("{get}", "1").replace("{e4}", "0")).requests  # admin API


@pytest.mark.unit
def test_a_store_without_readable_metrics_says_why():
    import http.server
    import threading

    meter, why = probe("http://127.0.0.1:9")  # nothing listens there
    assert meter is None and "could not be read" in why
    assert probe(None) == (None, "")  # no store behind the mount: nothing to say

    def answer(status: int, body: bytes) -> str:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(status)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            meter, why = probe(f"http://127.0.0.1:{server.server_port}")
        finally:
            server.shutdown()
        assert meter is None
        return why

    assert "answered HTTP 403: not MinIO, or its metrics need a token" in answer(
        403, b"<Error><Code>AccessDenied</Code></Error>")  # MinIO without public metrics
    assert "has no MinIO request counters" in answer(200, b"# another server\n")


run = run_json


def test_s3fs_small_files_and_a_cold_read_count_exactly(pytester, minio):
    need("s3fs")
    pytester.makepyfile("""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("s3fs")
        def test_s3(fsperf):
            fsperf.files(mode="write", count=40, size="64KiB", threads=4)
            fsperf.cold()
            fsperf.files(mode="read", count=40, size="64KiB", threads=4)
            fsperf.fio(name="big", rw="write", bs="1M", size="16M", direct=1, end_fsync=1)
            fsperf.cold()
            fsperf.fio(name="big_read", rw="read", bs="1M", size="16M", direct=1)
    """)
    md, html = pytester.path / "r.md", pytester.path / "r.html"
    result, doc = run(pytester, f"--fsperf-markdown={md}", f"--fsperf-html={html}")
    for page in (md.read_text(), html.read_text()):  # the cost table in every report
        assert "Object-store requests" in page and "cost USD" in page and "aws-s3-standard" in page
    result.assert_outcomes(passed=1)
    rows = {r["name"]: r for r in doc["results"]}
    write, read = rows["files_write"]["requests"], rows["files_read"]["requests"]
    assert write["by_kind"]["PUT"] == 40  # one PUT per small file, nothing else stores data
    assert read["by_kind"]["GET"] == 40 and read["by_kind"]["PUT"] == 0  # cold: one GET each
    big = rows["big_read"]["requests"]
    assert 1 <= big["by_kind"]["GET"] <= 16 and big["by_kind"]["PUT"] == 0
    assert rows["big"]["requests"]["by_kind"]["MULTIPART"] + rows["big"]["requests"]["by_kind"]["PUT"] >= 1
    # amplification, the server's TTFB, the mean GET, cost at the default price list
    assert rows["files_read"]["stats"]["req_per_file"]["median"] == read["total"] / 40
    assert read["ttfb_at_most"]["p50"] <= read["ttfb_at_most"]["p99"]
    assert read["get_bytes_mean"] == read["sent_bytes"] / 40 and read["sent_bytes"] >= 40 * 65536
    cost = rows["files_write"]["cost"]
    assert cost["price"] == "aws-s3-standard" and cost["currency"] == "USD"
    kinds = write["by_kind"]  # $0.005 per 1,000 PUT and LIST, $0.0004 per 1,000 GET and HEAD
    expected = (kinds["PUT"] + kinds["LIST"] + kinds["MULTIPART"] + kinds["COPY"]) * 5e-6 + (
        kinds["GET"] + kinds["HEAD"] + kinds["OTHER"]) * 4e-7
    assert abs(cost["requests"] - expected) < 1e-12
    assert doc["environment"]["price"]["source"].startswith("https://aws.amazon.com/s3/pricing/")
    result.stdout.fnmatch_lines([
        "*files_read: object-store requests*store sent 2.6* MB*GETs of 65.* kB on average*"
        "TTFB p50 <=*",
        "*Object-store requests*", "*cost at Amazon S3 Standard*",
        "*test_s3 *files_read * 80 * 40 * 40 *"])  # requests, 40 GET, 40 HEAD


def test_rclone_read_chunk_size_moves_the_gets(pytester, minio):
    """Halving rclone's read chunk (its size fixed, not doubling) doubles the GETs of one
    cold sequential read: the kind of change the counters exist to prove."""
    need("rclone")
    pytester.makepyfile("""
        import pytest
        from pytest_fsperf import fsperf_mount

        def chunk(size):
            return pytest.param(size, marks=fsperf_mount("rclone", config="fsperf_s3", options=[
                "--vfs-read-chunk-size", size, "--vfs-read-chunk-size-limit", size]))

        @pytest.mark.parametrize("size", [chunk("8M"), chunk("2M")])
        def test_read(fsperf, size):
            fsperf.fio(name="w", rw="write", bs="1M", size="32M", end_fsync=1)
            fsperf.cold()
            fsperf.fio(name="r", rw="read", bs="1M", size="32M", direct=1)
    """)
    result, doc = run(pytester)
    result.assert_outcomes(passed=2)
    gets = {r["test"].split("[")[1].rstrip("]"): r["requests"]["by_kind"]["GET"]
            for r in doc["results"] if r["name"] == "r"}
    assert gets["8M"] >= 4 and gets["2M"] >= 16  # at least 32M / chunk
    assert gets["2M"] >= 3 * gets["8M"], gets


def test_an_existing_mount_has_no_request_figures_and_says_why(pytester, bindfs):
    m = bindfs()
    pytester.makepyfile("""
        def test_w(fsperf):
            fsperf.fio(rw="write", bs="1M", size="4M", direct=1)
    """)
    result, doc = run(pytester, f"--fsperf-mount={m.point}")
    result.assert_outcomes(passed=1)
    (row,) = doc["results"]
    assert row["requests"] is None
    assert "existing mount" in row["requests_note"]


def test_request_thresholds_judge_the_counts_and_never_pass_unmeasured(pytester, minio, bindfs):
    need("s3fs")
    pytester.makepyfile("""
        from pytest_fsperf import fsperf, fsperf_mount

        @fsperf(max_puts=20, max_gets=0, max_cost="$0.01", max_cost_per_tb=10000)
        @fsperf_mount("s3fs")
        def test_writes(fsperf):
            fsperf.files(mode="write", count=10, size="4KiB", threads=2)

        @fsperf(max_puts=5, max_requests_per_file=3)
        @fsperf_mount("s3fs")
        def test_too_many(fsperf):
            fsperf.files(mode="write", count=10, size="4KiB", threads=2)
    """)
    result, doc = run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*files_write: PUT and multipart requests 10 > max_puts 5*"])
    result.stdout.fnmatch_lines(["*files_write: requests per file * > max_requests_per_file 3*"])
    m = bindfs()
    pytester.makepyfile(test_existing="""
        from pytest_fsperf import fsperf

        @fsperf(max_requests=100)
        def test_w(fsperf):
            fsperf.fio(rw="write", bs="1M", size="4M", direct=1)
    """)
    result, doc = run(pytester, "test_existing.py", f"--fsperf-mount={m.point}")
    result.assert_outcomes(passed=1)
    (row,) = doc["results"]
    assert row["verdict"] == "partial"  # not "pass": nothing was counted


@pytest.mark.unit
def test_costs_are_priced_per_kind_and_failed_requests_only_where_billed():
    from pytest_fsperf.result.store import Requests
    from pytest_fsperf.store import cost

    kinds = dict.fromkeys(KINDS, 0) | {"GET": 1000, "HEAD": 500, "LIST": 10, "PUT": 100}
    q = Requests(kinds, {}, 500, 0, 2 * 10**9, 0, errors_by_kind={"HEAD": 500})
    table = cost.load(None)
    aws = table["aws-s3-standard"].cost(q)
    assert aws.requests == pytest.approx(1500 * 0.0004 / 1000 + 110 * 0.005 / 1000)
    assert aws.egress == pytest.approx(2 * 0.09)
    oss = table["aliyun-oss-standard"].cost(q)  # OSS bills no 4xx: the 500 failed HEADs are free
    assert oss.currency == "CNY" and oss.requests == pytest.approx(1110 * 0.01 / 10000)
    assert table["cloudflare-r2-standard"].cost(q).egress == 0.0
    assert table["self-hosted"].cost(q).requests == 0.0
    for price in table.values():  # every shipped entry says where it comes from and when
        assert price.source and price.checked and set(price.per_1000) == set(KINDS)


@pytest.mark.unit
def test_a_price_file_of_ones_own_extends_the_table_and_bad_ones_say_where(tmp_path):
    from pytest_fsperf.errors import UsageError
    from pytest_fsperf.options.config import settings_from
    from pytest_fsperf.options.parse import Raw

    per = ", ".join(f"{k} = 0.001" for k in KINDS)
    good = tmp_path / "prices.toml"
    good.write_text(f'[mine]\ntitle = "our contract"\ncurrency = "EUR"\nsource = "contract 7"\n'
                    f'checked = "2026-11-01"\nper_1000 = {{ {per} }}\n')
    given = {"prices_file": Raw(str(good), "--fsperf-prices=prices.toml (command line)", tmp_path),
             "price": Raw("mine", "--fsperf-price=mine (command line)", tmp_path)}
    settings = settings_from(given, tmp_path)
    assert settings.price_list is not None and settings.price_list.currency == "EUR"
    assert settings.price_list.origin == str(good)
    with pytest.raises(UsageError, match=r"--fsperf-price=nope \(command line\): no price list "
                                         r"'nope'; known: .*aws-s3-standard"):
        settings_from({"price": Raw("nope", "--fsperf-price=nope (command line)", tmp_path)},
                      tmp_path)
    bad = tmp_path / "bad.toml"
    bad.write_text('[x]\ntitle = "t"\ncurrency = "USD"\nsource = "s"\nchecked = "d"\n'
                   'per_1000 = { GET = -1 }\n')
    with pytest.raises(UsageError, match=r"fsperf_prices = bad.toml \(ini file t.ini\): .*\[x\]: "
                                         r"per_1000 needs exactly the kinds .*missing: COPY"):
        settings_from({"prices_file": Raw("bad.toml", "fsperf_prices = bad.toml (ini file t.ini)",
                                          tmp_path)}, tmp_path)
    bad.write_text("[x\n")
    with pytest.raises(UsageError, match="not TOML"):
        settings_from({"prices_file": Raw("bad.toml", "w", tmp_path)}, tmp_path)


def test_an_s3fs_option_that_adds_heads_is_proved_by_an_ab(pytester, minio):
    """ls -l of 100 files, each run on a cold remount: s3fs fills its stat cache from the
    listing's HEADs; with the cache cut to one entry every stat asks again. The A/B says
    so from the counts, interleaved like any other figure."""
    need("s3fs")
    pytester.makepyfile("""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("s3fs")
        def test_ab(fsperf):
            ab = fsperf.compare(lambda f: f.meta(op="list_stat", entries=100),
                                a=[], b=["-o", "max_stat_cache_size=1"], rounds=3, max_rounds=3)
            heads = ab.metrics["req_head"]
            print("HEADS", heads.a, heads.b, heads.outcome)
            assert heads.outcome == "B worse" and min(heads.b) > max(heads.a)
            assert ab.metrics["req_per_file"].outcome == "changed"  # a request shape (issue 72)
    """)
    result, doc = run(pytester, "-s")
    result.assert_outcomes(passed=1)
    (c,) = doc["comparisons"]  # the record says it too: JSON, and so Markdown and HTML
    assert c["metrics"]["req_head"]["outcome"] == "B worse"


def test_an_existing_juicefs_mount_counts_its_own_requests(pytester, juicefs_mount):
    """No store the plugin knows, but JuiceFS's .stats counts its client's requests: a 16 MiB
    write is four 4 MiB block PUTs, and the server saw them too."""
    from pytest_fsperf.store.requests import RequestMeter

    server = RequestMeter(juicefs_mount.server.endpoint)
    before = server.read()
    pytester.makepyfile("""
        def test_w(fsperf):
            fsperf.fio(name="w", rw="write", bs="1M", size="16M", end_fsync=1)
    """)
    result, doc = run(pytester, f"--fsperf-mount={juicefs_mount.point}")
    result.assert_outcomes(passed=1)
    seen = difference(before, server.read())
    (row,) = doc["results"]
    q = row["requests"]
    assert q["source"] == "JuiceFS .stats" and q["by_kind"]["PUT"] == 4, q
    assert q["received_bytes"] == 16 * 2**20
    assert seen.by_kind["PUT"] >= 4  # the server's count of the whole run, layout included
    result.stdout.fnmatch_lines(["*counted by JuiceFS .stats around each measured window*"])


@pytest.mark.slow
def test_rclone_lays_out_every_file_and_server_modtime_drops_the_heads(pytester, minio):
    """rclone's ls -l asks a HEAD per file for the modtime it keeps in metadata;
    --use-server-modtime takes the store's. Each run lays 300 new files out through the
    mount and remounts cold: a listing that misses one (uploads still queued at unmount,
    which rclone 1.60's vfs/stats does not show) fails the run."""
    need("rclone")
    pytester.makepyfile("""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("rclone", config="fsperf_s3")
        def test_ab(fsperf):
            ab = fsperf.compare(lambda f: f.meta(op="list_stat", entries=300),
                                a=[], b=["--use-server-modtime"], rounds=2, max_rounds=2)
            heads = ab.metrics["req_head"]
            assert all(n == 300 for n in heads.a) and all(n == 0 for n in heads.b), heads
            assert heads.outcome == "B better"
    """)
    result, _ = run(pytester)
    result.assert_outcomes(passed=1)


@pytest.mark.unit
def test_lookups_of_names_not_there_are_said_apart_from_errors():
    """Issue 74.3, as found: `2000 answered with errors: 2000 4xx` for the HEADs s3fs sends
    for names it is about to create: expected lookups, worded as failures."""
    import dataclasses

    from pytest_fsperf.report.view import requests_line
    from pytest_fsperf.result.machine import Mounted
    from pytest_fsperf.result.store import Requests
    from tests.results import row as made

    def line(by_kind: dict[str, int], e4: int, e5: int) -> str:
        q = Requests(dict.fromkeys(KINDS, 0) | {"HEAD": 2000, "PUT": 2000}, {}, e4, e5, 0, 0,
                     errors_by_kind=by_kind)
        return requests_line(dataclasses.replace(made(), requests=q,
                                                 mount=Mounted("s3fs", (), ("s3fs",))))

    said = line({"HEAD": 2000}, 2000, 0)
    assert "2000 lookups of names not there (HEAD answered 4xx)" in said
    assert "answered with errors" not in said
    said = line({"HEAD": 2000, "PUT": 3}, 2003, 1)
    assert "2000 lookups" in said and "4 answered with errors: 3 4xx, 1 5xx" in said
