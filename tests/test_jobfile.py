"""A team's own fio job file as workloads: fsperf.fio(jobfile=...)."""

from __future__ import annotations

import json

import pytest

from pytest_fsperf.engine.jobfile import parse
from pytest_fsperf.errors import UsageError
from tests.conftest import need

JOBS = """
; our nightly job
[global]
ioengine=psync
bs=1M
direct=1
size=4M
directory=/mnt/ossfs/bench

[seq-write]
rw=write

# the read after it
[seq-read]
rw=read
time_based
runtime=1s
"""


@pytest.mark.unit
def test_sections_are_workloads_with_global_under_each():
    write, read = parse(JOBS, "t")
    assert write.name == "seq-write" and read.name == "seq-read"
    assert write.options == {"ioengine": "psync", "bs": "1M", "direct": "1", "size": "4M",
                             "rw": "write"}
    assert read.options["time_based"] == "1" and read.options["runtime"] == "1s"
    assert write.dropped == ("directory=/mnt/ossfs/bench",)


@pytest.mark.unit
@pytest.mark.parametrize(("text", "needle"), [
    ("[a]\ninclude other.fio\n", "t line 2: include is not run"),
    ("bs=1M\n[a]\nrw=read\n", "t line 1: an option before any section"),
    ("[a]\nfilename=${HOME}/x\n", "t line 2: filename='${HOME}/x': $ expansions are not run"),
    ("[a]\nrw=read\n[global]\nbs=4k\n", "t line 3: [global] after a job section"),
    ("[a b]\n", "is not a section header"),
    ("[global]\nbs=1M\n", "t: no job section"),
])
def test_what_fio_would_not_read_or_the_plugin_will_not_run_is_one_line(text, needle):
    with pytest.raises(UsageError, match=None) as info:
        parse(text, "t")
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_a_job_file_runs_each_section_in_the_work_dir(pytester, tmp_path):
    need("bindfs")
    need("fio")
    (pytester.path / "nightly.fio").write_text(JOBS)
    (pytester.path / "bad.fio").write_text("[ok]\nrw=read\nsize=1M\n[evil]\nexec_prerun=id\n")
    pytester.makepyfile("""
        import os
        from pytest_fsperf import fsperf

        @fsperf(min_bw="1KB/s")
        def test_nightly(fsperf):
            last = fsperf.fio(jobfile="nightly.fio")
            assert last.name == "seq-read"
            assert [r.name for r in fsperf.results] == ["seq-write", "seq-read"]
            assert not os.path.exists("/mnt/ossfs/bench")

        def test_refused_before_anything_runs(fsperf):
            fsperf.fio(jobfile="bad.fio")
    """)
    out = pytester.path / "r.json"
    r = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-backend=bindfs",
                           f"--fsperf-json={out}")
    r.assert_outcomes(passed=1, failed=1)
    r.stdout.fnmatch_lines(["*job file 'bad.fio' [[]evil[]]: *exec_prerun*runs a program*"])
    doc = json.loads(out.read_text())
    rows = {x["name"]: x for x in doc["results"]}
    assert set(rows) == {"seq-write", "seq-read"}  # the bad file's first section never ran
    assert rows["seq-read"]["options"]["rw"] == "read" and rows["seq-read"]["verdict"] == "pass"
    assert any("from job file nightly.fio; run in the work dir, not directory=/mnt/ossfs/bench"
               in n for n in rows["seq-write"]["notes"])


@pytest.mark.fio
def test_fsperf_bench_runs_a_job_file(tmp_path):
    from tests.test_cli import fsperf

    need("fio")
    (tmp_path / "nightly.fio").write_text(JOBS)
    r = fsperf(tmp_path, "bench", "--fio", "nightly.fio", "--json", "r.json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "pytest_fsperf.suites.jobfile" in r.stderr and "--fsperf-scale=1 " in r.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [x["name"] for x in doc["results"]] == ["seq-write", "seq-read"]
    assert doc["results"][0]["options"]["size"] == "4M"  # not shrunk: scale 1 with --fio
    (tmp_path / "bad.fio").write_text("[a]\ninclude x.fio\n")
    r = fsperf(tmp_path, "bench", "--fio", "bad.fio")
    assert r.returncode == 4 and "Traceback" not in r.stderr
    assert "line 2: include is not run" in r.stdout + r.stderr
