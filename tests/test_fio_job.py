import json
import subprocess
from pathlib import Path

import pytest

from pytest_fsperf.engine.fio import build_job, command, is_reading, parse_output, percentile
from pytest_fsperf.errors import UsageError
from tests.conftest import need


def job(scale=1.0, **kw):
    return build_job(kw, scale, "t::test_x: fsperf.fio()")


def test_documented_job_scaled():
    j = job(0.01, rw="read", bs="1M", size="100G", numjobs=4, direct=1, time_based=True)
    assert j == {"rw": "read", "bs": "1M", "size": str(1024 * 2**20), "numjobs": "4",
                 "direct": "1", "time_based": "1"}


def test_small_file_job_keeps_file_size_scales_count():
    j = job(0.01, rw="read", nrfiles=100000, filesize="128k", size="12800m")
    assert j["filesize"] == "128k" and j["nrfiles"] == "1000"


@pytest.mark.parametrize(
    ("kw", "needle"),
    [({"directory": "/x"}, "directory is set by the plugin"),
     ({"group_reporting": 0}, "group_reporting is set by the plugin"),
     ({"filename": "/etc/passwd"}, "would leave the test's work directory"),
     ({"filename": "../x"}, "would leave"),
     ({"filename_format": "../$jobname"}, "would leave"),
     ({"size": "lots"}, "'lots' is not a fio size"),
     ({"rw": None}, "must be a string, number or bool"),
     ({"Bad-Key": 1}, "is not a fio option name")],
)
def test_bad_options(kw, needle):
    with pytest.raises(UsageError) as exc:
        job(0.5, **kw)
    assert needle in str(exc.value) and str(exc.value).startswith("t::test_x: fsperf.fio()")


@pytest.mark.fio  # names fio's path
def test_command_owns_directory_output_and_grouping():
    args = command({"rw": "read", "thread": "1"}, "fsperf", "/mnt/w", "/tmp/o.json")
    assert args[1:] == ["--name=fsperf", "--directory=/mnt/w", "--group_reporting",
                        "--output-format=json", "--output=/tmp/o.json", "--rw=read", "--thread=1"]


@pytest.mark.parametrize(("rw", "reads"), [("read", True), ("randrw", True), ("write", False),
                                           ("randwrite", False)])
def test_reading(rw, reads):
    assert is_reading({"rw": rw}) is reads


@pytest.mark.parametrize(("runtime", "scale", "expected"), [
    ("120s", 0.001, "5000ms"), ("30", 0.01, "5000ms"), ("2m", 0.5, "60000ms"),
    ("3s", 0.01, "3000ms"), ("120s", 1, "120s"),
])
def test_time_based_runtime_shrinks_to_no_less_than_5_s(runtime, scale, expected):
    job = build_job({"rw": "read", "time_based": 1, "runtime": runtime}, scale, "t")
    assert job["runtime"] == expected


def test_unflushed_writes_on_a_fuse_mount_are_noted():
    from pytest_fsperf.mounts.daemon import Daemon, Lookup
    from pytest_fsperf.runner.fio_run import _unflushed

    fuse = Lookup(Daemon(1, 1, ("s3fs",), "fdinfo"), "found")
    assert _unflushed({"rw": "write"}, fuse)[0].startswith("writes not flushed")
    assert _unflushed({"rw": "randrw"}, fuse)
    assert _unflushed({"rw": "write", "end_fsync": "1"}, fuse) == ()
    assert _unflushed({"rw": "write", "fsync_on_close": "1"}, fuse) == ()
    assert _unflushed({"rw": "read"}, fuse) == ()
    assert _unflushed({}, fuse) == ()
    assert _unflushed({"rw": "write"}, Lookup(None, "no daemon: ext4")) == ()


# -- jobs reported apart (per_job): fio's own sums, exactly ----------------------------------

def run_apart(tmp_path, jobs: int = 3) -> str:
    out = str(tmp_path / "out.json")
    args = command({"rw": "randread", "bs": "4k", "size": "4M", "numjobs": str(jobs),
                    "ioengine": "psync"}, "fsperf", str(tmp_path), out, grouped=False)
    assert "--group_reporting" not in args and "--output-format=json+" in args
    subprocess.run(args, check=True, capture_output=True)
    return out


@pytest.mark.fio
def test_percentiles_from_bins_are_fios_own(tmp_path):
    need("fio")
    data = json.loads(Path(run_apart(tmp_path, 1)).read_text())
    clat = data["jobs"][0]["read"]["clat_ns"]
    bins = {int(k): int(v) for k, v in clat["bins"].items()}
    for p, value in clat["percentile"].items():
        assert percentile(bins, float(p)) == value, p


@pytest.mark.fio
def test_jobs_reported_apart_sum_as_fios_group_line(tmp_path):
    need("fio")
    out = run_apart(tmp_path, 3)
    read, write, _raw, jobs = parse_output(out)
    blocks = [j["read"] for j in json.loads(Path(out).read_text())["jobs"]]
    assert write is None and len(jobs) == 3
    assert [j.read.bw_bytes for j in jobs] == [float(b["bw_bytes"]) for b in blocks]
    assert read.io_bytes == sum(b["io_bytes"] for b in blocks) == 3 * (4 << 20)
    runtime = max(b["runtime"] for b in blocks)
    assert read.bw_bytes == float(read.io_bytes * 1000 // runtime)  # fio's agg, to the byte
    assert read.total_ios == sum(b["total_ios"] for b in blocks)
    p99s = [b["clat_ns"]["percentile"]["99.000000"] for b in blocks]
    assert min(p99s) <= read.lat_p99_ns <= max(p99s)


@pytest.mark.fio
@pytest.mark.parametrize("shape", [
    {"size": "8M", "numjobs": "2"}, {"size": "8M", "nrfiles": "4", "thread": "1"},
    {"filesize": "1M", "nrfiles": "3", "size": "3M"}, {"offset": "1M", "size": "4M"},
    {"size": "6M", "numjobs": "2", "offset_increment": "6M", "filename": "one"}])
def test_the_direct_layout_makes_the_files_fios_own_layout_would(tmp_path, shape):
    """A read job's files written first as a direct write job (fio_run.lay_out): fio's own
    create_only then finds every one in place, the same names and sizes, and rewrites none."""
    from pytest_fsperf.runner.fio_run import layout_job

    need("fio")
    read = {"rw": "read", "bs": "4k", "ioengine": "libaio", "iodepth": "8", "time_based": "1",
            "runtime": "5000ms", **shape}
    fast = layout_job(read)
    assert fast is not None and fast["direct"] == "1" and "time_based" not in fast
    subprocess.run(command(fast, "fsperf", str(tmp_path), str(tmp_path / "w.json")), check=True,
                   capture_output=True)
    made = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in tmp_path.iterdir()
            if not p.name.endswith(".json")}
    assert made
    subprocess.run(command({**read, "create_only": "1"}, "fsperf", str(tmp_path),
                           str(tmp_path / "r.json")), check=True, capture_output=True)
    after = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in tmp_path.iterdir()
             if not p.name.endswith(".json")}
    assert after == made, (made, after)


@pytest.mark.unit
def test_a_layout_that_direct_writes_cannot_make_is_left_to_fio():
    from pytest_fsperf.runner.fio_run import layout_job

    assert layout_job({"rw": "read", "size": "9M", "nrfiles": "2"}) is None  # 4.5 MiB files
    assert layout_job({"rw": "read", "size": "10%"}) is None  # of the device
    assert layout_job({"rw": "read", "filesize": "1M-2M", "size": "8M"}) is None  # a range
    assert layout_job({"rw": "read", "size": "1000k"}) is None  # not whole MiB
    assert layout_job({"rw": "read", "nrfiles": "2"}) is None  # no size: fio decides
    assert layout_job({"rw": "read", "size": "2000000", "kb_base": "1000"}) is None


@pytest.mark.fio
def test_files_a_write_left_are_never_rewritten_by_the_layout(tmp_path, monkeypatch):
    """As found: the direct layout rewrote the files an earlier write of the test had left
    (a write, then a warm read of them): s3fs uploaded them again and served the 'warm' read
    from the store. Only an empty work dir gets the direct pass; fio's own finds the rest."""
    import os
    from types import SimpleNamespace

    from pytest_fsperf.runner import fio_run

    need("fio")
    (tmp_path / "fsperf.0.0").write_bytes(b"x" * (1 << 20))
    os.utime(tmp_path / "fsperf.0.0", ns=(1, 1))
    ran: list[list[str]] = []
    ws = SimpleNamespace(workdir=tmp_path, deadline=lambda job: None, on_hang=lambda: "",
                         recold=lambda: None)

    def run_fio(args, output, timeout=None, on_hang=None):
        ran.append(args)
        subprocess.run(args, check=True, capture_output=True)

    monkeypatch.setattr(fio_run.fio_engine, "run_fio", run_fio)  # fio itself still runs
    fio_run.lay_out(ws, {"rw": "read", "size": "1M"}, str(tmp_path / "out"))  # type: ignore[arg-type]
    assert len(ran) == 1 and "--create_only=1" in ran[0], ran  # no direct pass
    assert os.stat(tmp_path / "fsperf.0.0").st_mtime_ns == 1  # found in place, not rewritten
