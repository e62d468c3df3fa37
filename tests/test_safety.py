"""The plugin runs as root on shared machines: each item of the safety audit, reproduced.

Where it applies the attacker is a local user without privileges (`nobody`), acting while
the plugin's mount is up.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_fsperf.engine.fio import build_job
from pytest_fsperf.engine.fio_options import JOB, WHY
from pytest_fsperf.errors import MeasurementError, UsageError
from pytest_fsperf.infra import outfile
from pytest_fsperf.infra.lock import machine_lock
from pytest_fsperf.mounts.builtin import BUILTIN
from pytest_fsperf.mounts.mounter import MountedFs, MountPlan
from pytest_fsperf.mounts.registry import Registry
from pytest_fsperf.mounts.spec import Backend, render
from tests.conftest import need, ours

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"  # our interpreter may live under /root, out of nobody's reach
SECRETS = {"endpoint": "http://127.0.0.1:9", "bucket": "b", "access_key": "AKIAEXAMPLEKEY",
           "secret_key": "s3cr3t-value", "meta_url": "redis://127.0.0.1/1",
           "meta_password": "meta-pw-value", "region": "us-east-1"}


def as_nobody(code: str) -> str:
    """Run Python code as user nobody; returns what it printed."""
    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    out = subprocess.run([SYSTEM_PYTHON, "-c", code], capture_output=True, text=True,
                         user=NOBODY, group=NOBODY, extra_groups=[], timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("backend", [b for b in BUILTIN if b.has_daemon], ids=lambda b: b.name)
def test_no_secret_on_any_builtin_command_line(backend: Backend):
    r = render(backend, SECRETS, ("--some", "option"), "/m", "/p")
    for part in r.argv:
        for secret in r.secrets:
            assert secret not in part, (backend.name, part)


def test_a_backend_that_puts_a_secret_on_its_command_line_is_refused():
    mine = Backend(name="myfs", binary="myfs", install="", command=("myfs", "--key={secret_key}"))
    with pytest.raises(UsageError, match=r"secret would be on the daemon's command line.*'--key=\*\*\*'"):
        render(mine, SECRETS, (), "/m", "/p")


@pytest.mark.integration
def test_rclone_remote_control_is_not_open_to_other_users(tmp_path):
    """As nobody: no rc password in any command line; rc without it answers 401; the
    plugin itself still asks rc for pending uploads."""
    need("rclone")
    fs = MountedFs(MountPlan(Registry([]).get("rclone", "test")))
    fs.start()
    try:
        token, port = str(fs.rendered.fields["token"]), fs.rendered.fields["port"]
        secret = tmp_path / "root-only"
        secret.write_text("root's secret\n")
        secret.chmod(0o600)
        found = as_nobody(f"""
import os, json, base64, urllib.request, urllib.error
seen = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if int(pid) != os.getpid():
            seen.append(open(f"/proc/{{pid}}/cmdline", "rb").read().decode(errors="replace"))
    except OSError:
        pass
stolen = [c.split("\\0")[c.split("\\0").index("--rc-pass") + 1] for c in seen if "\\0--rc-pass\\0" in c]
codes = []
for auth in [None, *("fsperf:" + t for t in stolen)] or [None]:
    req = urllib.request.Request("http://127.0.0.1:{port}/operations/copyfile", method="POST",
        data=json.dumps({{"srcFs": "{tmp_path}", "srcRemote": "root-only", "dstFs": "/tmp",
                          "dstRemote": "stolen-{port}"}}).encode(),
        headers={{"Content-Type": "application/json"}})
    if auth:
        req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        codes.append(urllib.request.urlopen(req, timeout=5).status)
    except urllib.error.HTTPError as exc:
        codes.append(exc.code)
print(json.dumps({{"token_seen": any({token!r} in c for c in seen), "codes": codes}}))
""")
        seen = json.loads(found)
        assert seen == {"token_seen": False, "codes": [401]}
        assert not os.path.exists(f"/tmp/stolen-{port}")
        assert fs.backend.settle is not None
        assert "unknown" not in fs.backend.settle(fs.rendered)  # the plugin's own rc call works
    finally:
        fs.close()


def plant(folder, files=("notes.txt", "sub/data.bin")) -> dict[str, bytes]:
    """Files of someone else's in a directory; returns their contents to compare later."""
    made = {}
    for name in files:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(64) + name.encode())
        made[name] = path.read_bytes()
    return made


def unchanged(folder, made: dict[str, bytes]) -> bool:
    return all((folder / n).is_file() and (folder / n).read_bytes() == b for n, b in made.items())


@pytest.mark.integration
def test_cold_never_empties_a_cache_dir_the_user_named(pytester, tmp_path):
    """rclone --cache-dir DIR (as juicefs --cache-dir, which /var/jfsCache shares between
    volumes): cold() keeps DIR, says so, and labels the read not cold."""
    need("rclone")
    need("fio")
    shared = tmp_path / "shared-cache"
    made = plant(shared, ("notes.txt", "vfs/other-remote/file", "vfsMeta/other-remote/file"))
    pytester.makepyfile(f"""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("rclone", options=["--cache-dir", {str(shared)!r}])
        def test_kept(fsperf):
            fsperf.fio(name="write", rw="write", bs="1M", size="4M", judged=False)
            fsperf.cold()
            r = fsperf.fio(name="read", rw="read", bs="1M", size="4M")
            assert r.daemon_cache.startswith("not cold: remounted, but its disk cache was kept")
            assert any(s.startswith("kept " + {str(shared)!r}) for s in r.cold_steps), r.cold_steps

        @fsperf_mount("rclone")
        def test_private_cache_is_wiped(fsperf):
            fsperf.fio(name="write", rw="write", bs="1M", size="4M", judged=False)
            fsperf.cold()
            r = fsperf.fio(name="read", rw="read", bs="1M", size="4M")
            assert r.daemon_cache == "cold: remounted, disk cache wiped", r.cold_steps
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_kept*not cold: daemon disk cache kept*"])
    assert unchanged(shared, made)


def test_only_the_daemons_own_part_of_a_shared_cache_is_wiped(tmp_path, monkeypatch):
    """s3fs use_cache=DIR: only DIR/BUCKET (s3fs's layout) is emptied; a cache dir given
    through a symlink or of a backend without such a layout is kept."""
    monkeypatch.setattr("shutil.which", lambda name: "/bin/true")
    cache = tmp_path / "cache"
    made = plant(cache, ("notes.txt", "other-bucket/obj"))
    mine = plant(cache / "b", ("obj1", "dir/obj2"))
    cfg = dict(SECRETS)
    s3fs = MountedFs(MountPlan(Registry([]).get("s3fs", "test"), ("-o", f"use_cache={cache}"), cfg))
    try:
        steps = s3fs.wipe_cache()
        assert f"wiped {cache}/b" in steps and not s3fs.kept_caches
        assert unchanged(cache, made) and not any((cache / "b" / n).exists() for n in mine)
    finally:
        s3fs.close()
    link = tmp_path / "link"
    link.symlink_to(cache)
    plant(cache / "b", ("obj1",))
    via_link = MountedFs(MountPlan(Registry([]).get("s3fs", "test"), ("-o", f"use_cache={link}"), cfg))
    juicefs = MountedFs(MountPlan(Registry([]).get("juicefs", "test"), ("--cache-dir", str(cache)), cfg))
    try:
        assert via_link.wipe_cache() == [f"kept {link}/b (not a plain absolute path: it is relative "
                                         "or passes through a symlink)"] + [
            f"kept {link}/.b.{x} (not a plain absolute path: it is relative or passes through a symlink)"
            for x in ("stat", "mirror")]
        assert juicefs.wipe_cache() == [f"kept {cache} (a directory you named: the plugin deletes "
                                        "only what it created)"]
        assert unchanged(cache, made) and (cache / "b" / "obj1").exists()
    finally:
        via_link.close()
        juicefs.close()


# -- 3. report writers --------------------------------------------------------------------

def test_output_into_a_fifo_is_written_into_it_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    outfile.write(fifo, "{}\n")
    reader.join(10)
    assert got == [b"{}\n"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_output_into_a_character_device_leaves_the_device(tmp_path):
    outfile.write(Path("/dev/null"), "x" * 100)
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    link = tmp_path / "out"
    link.symlink_to("/dev/null")  # like /dev/stdout -> /proc/self/fd/1
    outfile.write(link, "x")
    assert link.is_symlink()


def test_a_symlink_to_a_file_or_a_directory_is_refused_with_one_line(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    link = tmp_path / "report.json"
    link.symlink_to(victim)
    with pytest.raises(outfile.OutputError, match=r"report.json is a symlink; name the file it points to"):
        outfile.write(link, "{}")
    with pytest.raises(outfile.OutputError, match="is a directory"):
        outfile.write(tmp_path, "{}")
    assert victim.read_text() == "precious\n" and link.is_symlink()


@pytest.fixture
def sticky_dir():
    """A sticky, world-writable directory like /tmp, reachable by other users."""
    path = Path(tempfile.mkdtemp(prefix="fsperf-sticky-", dir="/tmp"))
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path)


@pytest.mark.fio
def test_a_link_planted_by_another_user_at_a_temporary_name_is_not_followed(tmp_path, sticky_dir):
    """Root writes a report into a sticky, world-writable directory where nobody planted
    a link at the name the old writer used (PATH.tmp)."""
    shared = sticky_dir
    victim = tmp_path / "root-only"
    victim.write_text("root's\n")
    victim.chmod(0o600)
    as_nobody(f"import os; os.symlink({str(victim)!r}, {str(shared / 'report.json.tmp')!r})")
    outfile.write(shared / "report.json", '{"a": 1}\n')
    assert victim.read_text() == "root's\n"
    assert (shared / "report.json").read_text() == '{"a": 1}\n'
    assert oct(stat.S_IMODE(os.stat(shared / "report.json").st_mode)) == oct(0o666 & ~current_umask())


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_bad_output_targets_are_usage_errors_naming_the_flag(pytester, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "link.json").symlink_to(victim)
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-json={tmp_path / 'link.json'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--fsperf-json*link.json is a symlink; name the file it points to"])
    assert "Traceback" not in result.stderr.str() and victim.read_text() == "precious\n"


@pytest.fixture
def full_disk(tmp_path):
    """A 1 MiB tmpfs, filled up."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    point = tmp_path / "full"
    point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(point)], check=True)
    try:
        with open(point / "filler", "wb") as f, contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        yield point
    finally:
        subprocess.run(["umount", str(point)], check=True)


def test_a_full_disk_fails_the_session_with_one_line_and_leaves_no_temp_file(pytester, full_disk):
    pytester.makepyfile("""
        def test_measured(fsperf):
            fsperf.fio(rw="read", bs="64k", size="1M")
    """)
    need("fio")
    out = full_disk / "r.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-json={out}",
                                f"--fsperf-markdown={full_disk / 'r.md'}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"pytest-fsperf: cannot write {out}: No space left on device",
                                 f"pytest-fsperf: cannot write {full_disk / 'r.md'}: No space left on device"])
    assert "INTERNALERROR" not in result.stdout.str()
    assert sorted(p.name for p in full_disk.iterdir()) == ["filler"]


# -- 6. the machine lock ------------------------------------------------------------------

@pytest.mark.fio
def test_the_lock_root_made_can_be_taken_by_any_user(sticky_dir):
    path = sticky_dir / "pytest-fsperf.lock"
    with machine_lock(str(path)):
        pass
    path.chmod(0o600)  # as an older version left it
    with machine_lock(str(path)):
        pass
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert as_nobody(f"""
import fcntl, os
fd = os.open({str(path)!r}, os.O_RDONLY | os.O_NOFOLLOW)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked")
""").strip() == "locked"


@pytest.mark.fio
def test_a_link_planted_at_the_lock_is_not_followed(tmp_path, sticky_dir):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    victim.chmod(0o600)
    path = sticky_dir / "pytest-fsperf.lock"
    as_nobody(f"import os; os.symlink({str(victim)!r}, {str(path)!r})")
    with pytest.raises(MeasurementError, match=r"^cannot open the machine lock .*: it is a symlink \(remove it"), \
            machine_lock(str(path)):
        pass
    assert victim.read_text() == "precious\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600


# -- 9. the daemon's whole process tree is stopped --------------------------------------

@pytest.mark.integration
def test_a_daemon_that_never_mounts_is_stopped_with_its_children(pytester, tmp_path):
    need("fio")
    pids = tmp_path / "pids"
    pytester.makeconftest(f"""
        from pytest_fsperf import Backend

        def pytest_fsperf_backends():
            script = ("sleep 300 & echo $! >> {pids}; setsid sleep 301 & echo $! >> {pids}; "
                      "sleep 302")
            return [Backend(name="never", binary="sh", install="-",
                            command=("sh", "-c", script, "pytest-fsperf-never"))]
    """)
    pytester.makepyfile("""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("never")
        def test_timeout(fsperf):
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-mount-timeout=1")
    result.assert_outcomes(errors=1)
    helpers = [int(p) for p in pids.read_text().split()]
    assert len(helpers) == 2
    for pid in helpers:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_config_error_leaves_no_private_dir(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    mine = Backend(name="myfs", binary="sh", install="", command=("myfs", "{nothing}"))
    with pytest.raises(UsageError, match="needs 'nothing'"):
        MountedFs(MountPlan(mine))
    assert list(tmp_path.iterdir()) == []


# -- 5. fio options that run commands or write elsewhere ----------------------------------

DANGEROUS = ["exec_prerun", "exec_postrun", "server", "daemonize", "write_iolog", "write_bw_log",
             "write_lat_log", "write_iops_log", "write_hist_log", "read_iolog", "ioscheduler",
             "cgroup", "uid", "directory", "opendir", "output"]


def fio_job(**kw):
    return build_job(kw, 1.0, "t::test_x: fsperf.fio()")


@pytest.mark.parametrize("key", DANGEROUS)
def test_options_that_run_or_write_elsewhere_are_refused(key):
    with pytest.raises(UsageError, match=rf"^t::test_x: fsperf.fio\(\): {key} "):
        fio_job(**{key: "/tmp/x"})


@pytest.mark.parametrize("engine", ["exec", "external:/tmp/evil.so", "sg", "http", "rbd", "net"])
def test_engines_other_than_local_files_are_refused(engine):
    with pytest.raises(UsageError, match="is not one of the local-file engines"):
        fio_job(ioengine=engine)


@given(st.sampled_from(sorted(JOB | set(WHY))).flatmap(
    lambda name: st.tuples(st.just(name), st.integers(1, len(name) - 1))))
def test_a_prefix_of_an_option_name_never_passes(name_cut):
    """fio takes `directo` for `directory`: a shortened name must not get through."""
    name, cut = name_cut
    prefix = name[:cut]
    if prefix in JOB:  # a real option that is itself allowed (e.g. `bs` of `bssplit`)
        return
    with pytest.raises(UsageError):
        fio_job(**{prefix: "1"})


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=20))
def test_only_listed_names_pass(name):
    if not name[0].isalpha():
        return
    try:
        fio_job(**{name: "1"})
    except UsageError:
        assert name not in JOB or name in WHY
    else:
        assert name in JOB


@given(st.lists(st.sampled_from(["..", ".", "a", "b", "", "/", "x:y", "../.."]), min_size=1, max_size=5))
def test_file_names_stay_in_the_work_dir(parts):
    name = "/".join(parts)
    for key in ("filename", "filename_format"):
        try:
            fio_job(**{key: name})
        except UsageError:
            continue
        resolved = os.path.normpath(os.path.join("/w/d", *name.replace(":", "/").split("/")))
        assert resolved.startswith("/w/d/") or resolved == "/w/d", (key, name)


@pytest.mark.integration
def test_a_mount_path_with_a_colon_works(pytester, tmp_path):
    need("fio")
    mount = tmp_path / "a:b"
    mount.mkdir()
    pytester.makepyfile("""
        def test_colon(fsperf):
            r = fsperf.fio(rw="write", bs="64k", size="1M")
            assert r.write.io_bytes == 2**20
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-mount={mount}",
                                "--fsperf-plain-dir=1")
    result.assert_outcomes(passed=1)
    assert not (tmp_path / "a").exists()


# -- 7. a mount that stops answering --------------------------------------------------------

def ends_within(seconds: float, pytester, *args: str):
    """Run pytest in a subprocess; it must end (not hang in the kernel) within `seconds`."""
    t0 = time.monotonic()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=2 * seconds)
    assert time.monotonic() - t0 < seconds
    return result


@pytest.mark.integration
def test_an_existing_mount_whose_daemon_is_stopped_is_a_usage_error_not_a_hang(pytester, bindfs):
    mount = bindfs()
    pytester.makepyfile("def test_x(fsperf): pass")
    mount.proc.send_signal(signal.SIGSTOP)
    try:
        result = ends_within(30, pytester, f"--fsperf-mount={mount.point}", "--fsperf-mount-timeout=2")
    finally:
        mount.proc.send_signal(signal.SIGCONT)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--fsperf-mount={mount.point} (command line): {mount.point} did not "
                                 "answer within 2 s (its FUSE daemon may be stopped*"])


STOP_MID_RUN = """
import os, signal, threading, time
import psutil
from pytest_fsperf import fsperf_mount

def stop_later(fsperf):
    pid = fsperf.daemon.daemon.pid
    threading.Timer(1.0, os.kill, (pid, signal.SIGSTOP)).start()
    return pid

{marker}
def test_hangs(fsperf):
    fsperf.fio(name="lay", rw="write", bs="1M", size="8M", judged=False)
    pid = stop_later(fsperf)
    open({pidfile!r}, "w").write(str(pid))
    fsperf.fio(name="read", rw="read", bs="4k", size="8M", time_based=1, runtime="60s", direct=1)

def test_next_runs(tmp_path):
    assert True
"""


@pytest.mark.integration
def test_a_daemon_stopped_mid_workload_fails_that_test_naming_the_hang(pytester, bindfs, tmp_path):
    """An existing mount: fio is stopped at the deadline, the test fails naming the hang and
    the daemon's state, the session goes on and ends (no D-state wait)."""
    mount = bindfs()
    pidfile = tmp_path / "pid"
    pytester.makepyfile(STOP_MID_RUN.format(marker="", pidfile=str(pidfile)))
    try:
        result = ends_within(60, pytester, f"--fsperf-mount={mount.point}",
                             "--fsperf-workload-timeout=4", "--fsperf-mount-timeout=2")
    finally:
        mount.proc.send_signal(signal.SIGCONT)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"*read: fio did not finish within 4 s: the filesystem stopped answering "
                                 f"(daemon PID {mount.pid}: stopped)*",
                                 "*could not remove work directory*(the filesystem stopped answering during a workload*"])
    # a job process whose request the daemon had taken waits in the kernel for its answer
    # (SIGCONT above); then, its status report's stat lock held by its killed parent, fio's
    # job tries it for 5 s before it exits (fio's backend.c)
    deadline = time.monotonic() + 10
    while (left := [p for p in psutil.process_iter(["name", "cmdline"]) if p.info["name"] == "fio"
                    and str(mount.point) in " ".join(p.info["cmdline"] or [])]):
        assert time.monotonic() < deadline, left
        time.sleep(0.1)


@pytest.mark.integration
def test_an_owned_mount_that_stops_answering_is_aborted_and_removed(pytester, tmp_path):
    need("bindfs")
    need("fio")
    pidfile = tmp_path / "pid"
    pytester.makepyfile(STOP_MID_RUN.format(marker='@fsperf_mount("bindfs")', pidfile=str(pidfile)))
    result = ends_within(60, pytester, "--fsperf-workload-timeout=4")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*read: fio did not finish within 4 s: the filesystem stopped answering "
                                 "(daemon PID *: stopped); killed its daemon *"])
    pid = int(pidfile.read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert ours()[0] == []


# -- Low: bad input is one line, never a traceback ------------------------------------------

def refused_in_one_line(pytester, folder: str, name: str, doc: str, flag: str, says: str) -> None:
    """A file of the wrong shape where the plugin reads saved data: a usage error naming the
    flag and the file, no traceback."""
    where = pytester.path / ".fsperf" / folder
    where.mkdir(parents=True)
    (where / f"{name}.json").write_text(doc)
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider", f"{flag}={name}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{flag}={name} (command line): {says}"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize("doc", ["[]", '{"results": null}', '{"results": [1]}',
                                 '{"results": [{"test": "t", "name": "w", "total": "x"}]}',
                                 '{"results": [{"test": "t", "name": "w", "rounds": [{"bw": "fast"}]}]}'])
def test_a_wrong_shape_saved_run_is_one_line(pytester, doc):
    refused_in_one_line(pytester, "runs", "base", doc, "--fsperf-compare",
                        "*base.json is not a saved run: *")


@pytest.mark.parametrize("doc", ["[]", '{"entries": []}', '{"entries": {"x": {"bw": {"value": "1"}}}}'])
def test_a_wrong_shape_baseline_is_one_line(pytester, doc):
    refused_in_one_line(pytester, "baselines", "mine", doc, "--fsperf-baseline", "baseline *mine.json: *")


@pytest.mark.parametrize(("kw", "needle"), [
    ('min_iops=10**400', "is too large"), ('min_bw="1e308GB/s"', "is too large"),
    ('max_p99="1e300s"', "is too large")])
def test_absurd_thresholds_are_usage_errors(pytester, kw, needle):
    pytester.makepyfile(f"""
        from pytest_fsperf import fsperf

        @fsperf({kw})
        def test_x(fsperf):
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*usage error*{needle}*"])


@pytest.mark.parametrize(("call", "needle"), [
    ("fsperf.sysbench(files=-1)", "files=-1 must be a whole number from 1 to 1000000"),
    ("fsperf.sysbench(seconds=float('nan'))", "seconds=nan must be a number of seconds"),
    ("fsperf.sysbench(threads=0)", "threads=0 must be a whole number")])
def test_sysbench_bounds(pytester, call, needle):
    pytester.makepyfile(f"""
        def test_x(fsperf):
            {call}
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*{needle}*"])
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize(("ini", "needle"), [
    (b"[backend x]\ncommand =\n", "`command` is empty"),
    (b"[backend x]\ncommand = sh -c {port:>99999999999}\n", "without indexing, attributes, conversions or format specs"),
    (b"[fsperf]\nbucket = caf\xe9\n", "not UTF-8 text")])
def test_bad_backend_config_is_one_line(pytester, ini, needle):
    cfg = pytester.path / "b.ini"
    cfg.write_bytes(ini)
    pytester.makepyfile("""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("x")
        def test_x(fsperf):
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-backend-config={cfg}")
    out = result.stdout.str() + result.stderr.str()
    assert needle in out and "Traceback" not in out and "MemoryError" not in out


def test_secrets_in_user_options_and_tokens_never_reach_ids_or_messages():
    from pytest_fsperf.infra.redact import redact_text
    from pytest_fsperf.mounts.request import option_id

    test_id = option_id(["--sas", "https://a.blob.core.windows.net/c?sv=2021&sig=AbCdEf%3D",
                         "--header", "Authorization: Bearer eyJsecret", "-o", "passwd=hunter2"])
    for secret in ("AbCdEf", "eyJsecret", "hunter2"):
        assert secret not in test_id
    log = "error: meta redis://:pw-in-url@127.0.0.1/1 failed; passwd=hunter2 token: abc123"
    assert not any(s in redact_text(log) for s in ("pw-in-url", "hunter2", "abc123"))


def test_the_s3_fixture_repr_never_shows_the_secret():
    from pytest_fsperf.store.minio import S3Server
    server = S3Server("http://127.0.0.1:1", "b", "AK", "the-secret-value", "us-east-1",
                      None, "/nonexistent")  # type: ignore[arg-type]
    assert "the-secret-value" not in repr(server)


def test_markdown_escapes_html_in_test_ids(pytester):
    need("fio")
    pytester.makepyfile("""
        import pytest

        @pytest.mark.parametrize("x", ["<img src=x onerror=alert(1)>"])
        def test_x(fsperf, x):
            fsperf.fio(name="w", rw="write", bs="64k", size="256k")
    """)
    out = pytester.path / "s.md"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-markdown={out}")
    result.assert_outcomes(passed=1)
    text = out.read_text()
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text


@pytest.mark.integration
def test_an_in_process_engine_stuck_on_an_owned_mount_is_freed_by_the_abort(pytester):
    need("bindfs")
    need("fio")
    pytester.makepyfile("""
        import os, signal
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("bindfs")
        def test_stuck(fsperf):
            pid = fsperf.daemon.daemon.pid

            def run():
                os.kill(pid, signal.SIGSTOP)
                open(os.path.join(fsperf.workdir, "new"), "w")  # waits on the stopped daemon
                raise AssertionError("the stopped daemon answered")

            fsperf._runner.measure_engine("stuck", True, "meta", {}, run)

        def test_next():
            pass
    """)
    result = ends_within(60, pytester, "--fsperf-workload-timeout=3")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*stuck: did not finish within 3 s: the filesystem stopped answering "
                                 "(daemon PID *: stopped); killed its daemon *"])
    assert ours()[0] == []


@pytest.mark.fio
@pytest.mark.parametrize("where", ["note_process", "wait4"])
def test_an_interrupt_while_fio_starts_leaves_no_fio(tmp_path, monkeypatch, where):
    """Ctrl-C can land between fio's start and the wait that would stop it (seen once on a
    slow start: a 60 s fio kept the mount busy after the session ended). It must stop fio
    and its job processes wherever it lands."""
    need("fio")
    from pytest_fsperf.engine import fio as fio_engine

    def interrupt(*_args, **_kw):
        raise KeyboardInterrupt

    if where == "note_process":
        monkeypatch.setattr(fio_engine.leftovers, "note_process", interrupt)
    else:
        monkeypatch.setattr(fio_engine.os, "wait4", interrupt)
    job = build_job({"rw": "write", "bs": "64k", "size": "4M", "time_based": 1,
                     "runtime": "60s"}, 1.0, "test")
    proc = fio_engine.FioProcess(fio_engine.command(job, "fsperf", str(tmp_path),
                                                    str(tmp_path / "out.json")),
                                 str(tmp_path / "fio.log"))
    with pytest.raises(KeyboardInterrupt):
        proc.start()
        proc.wait(30)
    monkeypatch.undo()
    left = [p for p in psutil.process_iter(["cmdline"])
            if str(tmp_path) in " ".join(p.info["cmdline"] or [])]
    assert left == []


# -- second round (issue 22) ------------------------------------------------------------
# 22.1 fio servers: a fio server runs any job any client sends it, so a server of the
# plugin's (root) must be out of every other user's reach.

FIO_SERVER_PROBE = r'''
import json, os, socket
found = {"socks": [], "tcp": []}
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        argv = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace").split("\0")
    except OSError:
        continue
    for a in argv:
        if not a.startswith("--server="):
            continue
        spec = a[len("--server="):]
        if spec.startswith("sock:"):
            with socket.socket(socket.AF_UNIX) as s:
                try:
                    s.connect(spec[5:])
                    found["socks"].append("connected")
                except OSError as exc:
                    found["socks"].append(exc.errno)
        else:
            port = int(spec.rpartition(",")[2] or 8765)
            with socket.socket() as s:
                found["tcp"].append("connected" if s.connect_ex(("127.0.0.1", port)) == 0 else "no")
print(json.dumps(found))
'''


@pytest.mark.integration
def test_no_other_user_reaches_the_fio_servers_of_many_clients(pytester):
    """During a clients=2 bindfs run: no fio process of the session listens on a TCP port,
    and `nobody` can connect to none of the servers it finds on `ps`."""
    need("bindfs")
    need("fio")
    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    pytester.makepyfile(f"""
        import json, subprocess, threading, time
        import psutil
        from pytest_fsperf import fsperf_mount

        PROBE = {FIO_SERVER_PROBE!r}

        def probe():
            me = psutil.Process()
            servers = []
            for _ in range(600):
                servers = [p for p in me.children() if "--server=" in " ".join(p.cmdline())]
                if len(servers) == 2:
                    break
                time.sleep(0.05)
            listening = [c.laddr.port for p in servers
                         for c in p.net_connections(kind="inet") if c.status == "LISTEN"]
            out = subprocess.run([{SYSTEM_PYTHON!r}, "-c", PROBE], user={NOBODY}, group={NOBODY},
                                 extra_groups=[], capture_output=True, text=True, cwd="/")
            with open("probe.json", "w") as f:
                json.dump({{"servers": len(servers), "listening": listening,
                           "nobody": json.loads(out.stdout or "null"), "err": out.stderr}}, f)

        @fsperf_mount("bindfs")
        def test_two(fsperf):
            t = threading.Thread(target=probe)
            t.start()
            fsperf.fio(name="w", clients=2, rw="write", bs="64k", size="8M", time_based=1,
                       runtime="3s")
            t.join()
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    seen = json.loads((pytester.path / "probe.json").read_text())
    assert seen["servers"] == 2, seen
    assert seen["listening"] == [], seen  # no TCP port at all
    assert seen["nobody"]["tcp"] == [], seen
    assert seen["nobody"]["socks"] and set(seen["nobody"]["socks"]) == {13}, seen  # EACCES
    assert ours() == ([], [])


# 22.3 option values that name a file, and 22.4 control characters: refused before fio runs

@pytest.mark.parametrize("options", [
    {"iomem": "mmapshared:{victim}"}, {"mem": "mmap:{victim}"}, {"mem": "mmaphuge:{victim}"},
    {"buffer_pattern": "'{secret}'"}, {"verify_pattern": "0xab'{secret}'", "verify": "pattern"},
    {"filename": "${{HOME}}"}, {"filename_format": "${{HOME}}/x"},
], ids=["iomem-mmapshared", "mem-mmap", "mem-mmaphuge", "buffer_pattern", "verify_pattern",
        "filename-env", "filename_format-env"])
def test_option_values_that_name_a_file_elsewhere_are_refused(pytester, tmp_path, options):
    """As found: iomem=mmapshared:/path overwrote a file with fio's buffer, mem=mmap:/path
    grew one, buffer_pattern="'/root/secret'" copied a root-only file into the work dir."""
    need("fio")
    victim, secret = tmp_path / "victim", tmp_path / "secret"
    victim.write_bytes(b"precious\n")
    secret.write_bytes(b"root-only-secret\n")
    secret.chmod(0o600)
    given = {k: v.format(victim=victim, secret=secret) for k, v in options.items()}
    pytester.makepyfile(f"""
        def test_it(fsperf):
            fsperf.fio(rw="write", bs="4k", size="64k", **{given!r})
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(failed=1)
    key = next(iter(given))
    result.stdout.fnmatch_lines([f"*test_it: fsperf.fio(): {key}=*"])
    assert "Traceback" not in result.stdout.str()
    assert victim.read_bytes() == b"precious\n"
    assert b"root-only-secret" not in b"".join(
        p.read_bytes() for p in pytester.path.rglob("*") if p.is_file() and p != secret)


@pytest.mark.fio
def test_every_string_option_is_placed_by_whether_it_names_a_file():
    """Each allow-listed option that fio 3.33 takes as a string is either checked for a file
    form (PATHS, MEMORY, PATTERNS) or known to be plain text: a new one fails here."""
    need("fio")
    from pytest_fsperf.engine import fio_options as fo
    strings = set()
    for name in sorted(JOB):
        out = subprocess.run(["fio", f"--cmdhelp={name}"], capture_output=True, text=True,
                             check=False).stdout
        if "type: string (opt=bla)" in out:
            strings.add(name)
    assert strings == fo.PATHS | fo.MEMORY | fo.PATTERNS | fo.TEXT


CONTROL = ["\n", "\r", "\x00", "\x1b", "\t", "\x7f"]


@pytest.mark.parametrize("char", CONTROL, ids=repr)
def test_control_characters_in_option_values_are_refused_for_every_engine(char):
    with pytest.raises(UsageError, match=r"rw='write.*holds a control character"):
        build_job({"rw": f"write{char}exec_prerun=/tmp/x.sh"}, 1.0, "t")
    with pytest.raises(UsageError, match="is not a fio option name"):
        build_job({f"rw{char}": "write"}, 1.0, "t")
    from pytest_fsperf.scenarios import steps
    for kind, key in ((steps.FilesJob, "mode"), (steps.MetaJob, "op"), (steps.SysbenchJob, "mode"),
                      (steps.CheckpointJob, "subdir"), (steps.MdtestJob, "subdir")):
        with pytest.raises(UsageError, match="holds a control character"):
            steps.job(kind, {key: f"x{char}y"}, "t")
        with pytest.raises(UsageError, match="must be letters, digits"):
            steps.job(kind, {}, "t", name=f"n{char}")


@pytest.mark.integration
def test_a_newline_in_a_value_of_a_many_client_job_runs_nothing(pytester, tmp_path):
    """As found: with clients=2, rw="write\\nexec_prerun=/tmp/x.sh" ran the script as root
    (the job file was written k=v verbatim)."""
    need("bindfs")
    need("fio")
    ran = tmp_path / "ran"
    script = tmp_path / "x.sh"
    script.write_text(f"#!/bin/sh\nid > {ran}\n")
    script.chmod(0o755)
    pytester.makepyfile(f"""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("bindfs")
        def test_it(fsperf):
            fsperf.fio(name="w", clients=2, rw="write\\nexec_prerun={script}", bs="64k", size="1M")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*rw='write\\nexec_prerun=*holds a control character (\\n)*"])
    assert not ran.exists()
    assert ours() == ([], [])


@pytest.mark.parametrize("size", ["-1M", "0", "1M-", "-", "1M:2M:3M", "0%", "150%"])
def test_sizes_below_one_byte_are_refused(size):
    """As found: size="-1M" was accepted (fio took it as a range and ran 256k I/Os)."""
    with pytest.raises(UsageError, match=rf"size={size!r}"):
        build_job({"rw": "write", "size": size}, 1.0, "t")
    with pytest.raises(UsageError, match=rf"size={size!r}"):
        build_job({"rw": "write", "size": size}, 0.5, "t")


@pytest.mark.parametrize("size", ["1M", "4k-8k", "10%", "1g:2g", "100%"])
def test_good_sizes_still_pass(size):
    assert build_job({"rw": "write", "size": size}, 1.0, "t")["size"] == size


# 22.2 the watchdog and every helper interpreter run isolated, from "/"

@pytest.mark.fio
def test_a_package_planted_in_the_working_directory_never_runs_in_the_watchdog(
        tmp_path, sticky_dir, monkeypatch):
    """As found: pytest ran from a world-writable directory where nobody planted
    pytest_fsperf/__init__.py; after pytest died the watchdog imported it, as root."""
    from pytest_fsperf.infra import leftovers
    pwned = sticky_dir / "pwned"
    as_nobody(f"""
import os
os.mkdir({str(sticky_dir / 'pytest_fsperf')!r})
with open({str(sticky_dir / 'pytest_fsperf' / '__init__.py')!r}, "w") as f:
    f.write("import os\\nopen({str(pwned)!r}, 'w').write(str(os.getuid()))\\n")
""")
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    record = leftovers.Record.create(str(folder))
    record.add("dir", path=str(tmp_path / "gone"))  # something left: the watchdog imports
    monkeypatch.chdir(sticky_dir)
    monkeypatch.setenv("PYTHONPATH", str(sticky_dir))  # ignored too (-I)
    watchdog = leftovers.start_watchdog(record)
    assert watchdog.stdin is not None
    watchdog.stdin.close()  # as when pytest dies
    assert watchdog.wait(timeout=60) == 0
    assert not pwned.exists()
    assert not os.path.exists(record.path)  # it settled the record with the installed package
    assert watchdog.args[1] == "-I"


@pytest.mark.fio
def test_helper_interpreters_run_isolated_from_root_dir(monkeypatch, tmp_path):
    """Every `python` the plugin starts gets -I and cwd "/" (the watchdog, the removal and
    the mount probe helpers)."""
    import pytest_fsperf
    seen: list[tuple[list[str], str | None]] = []
    real = subprocess.Popen

    def spy(args, *a, **kw):
        if args and args[0] == __import__("sys").executable:
            seen.append((list(args), kw.get("cwd")))
        return real(args, *a, **kw)

    monkeypatch.setattr(subprocess, "Popen", spy)
    from pytest_fsperf.infra.probe import probe
    probe("/", 30)
    from pytest_fsperf.infra import leftovers
    leftovers._remove_dir("/nonexistent/pytest-fsperf-x-0123456789ab")
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    watchdog = leftovers.start_watchdog(leftovers.Record.create(str(folder)))
    assert watchdog.stdin is not None
    watchdog.stdin.close()
    watchdog.wait(timeout=60)
    assert len(seen) >= 3
    for args, cwd in seen:
        assert args[1] == "-I" and cwd == "/", args
    assert pytest_fsperf.__file__


# 22.7 the machine lock: a holder is named, a deadline ends the wait, another user's lock fails

def hold_lock(path: Path, user: int | None) -> subprocess.Popen[str]:
    code = (f"import fcntl, os, sys, time\nfd = os.open({str(path)!r}, os.O_RDONLY)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(60)\n")
    kw = {"user": user, "group": user, "extra_groups": []} if user is not None else {}
    holder = subprocess.Popen([SYSTEM_PYTHON, "-c", code], stdout=subprocess.PIPE, text=True,
                              cwd="/", **kw)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


def fails_at_once(path: Path, match: str) -> None:
    """Taking the lock at `path` fails within 5 s (not after its 600 s timeout), saying `match`."""
    began = time.monotonic()
    with pytest.raises(MeasurementError, match=match), machine_lock(str(path), timeout=600):
        pass
    assert time.monotonic() - began < 5


def test_a_lock_another_user_holds_fails_at_once_naming_the_holder(sticky_dir, monkeypatch,
                                                                     pytester):
    """As found: `flock $TMPDIR/pytest-fsperf.lock sleep 40` as nobody blocked root's pytest
    with no message until killed."""
    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    path = sticky_dir / "pytest-fsperf.lock"
    with machine_lock(str(path)):
        pass
    holder = hold_lock(path, NOBODY)
    try:
        fails_at_once(path, rf"held by another user: PID {holder.pid} "
                            r"\(user nobody, .*python3.*running since")
        # a whole session: the test fails in one line, the session ends, nothing hangs
        monkeypatch.setenv("TMPDIR", str(sticky_dir))
        pytester.makepyfile("""
            def test_one(fsperf):
                fsperf.fio(rw="write", bs="4k", size="64k")

            def test_two(fsperf):
                fsperf.fio(rw="write", bs="4k", size="64k")
        """)
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
        result.assert_outcomes(errors=2)
        result.stdout.fnmatch_lines([f"*the machine lock {path} is held by another user: "
                                     f"PID {holder.pid} (user nobody*"])
        assert "Traceback" not in result.stdout.str()
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.fio
def test_a_lock_this_user_holds_is_waited_for_until_the_deadline(sticky_dir):
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs {SYSTEM_PYTHON}")
    path = sticky_dir / "pytest-fsperf.lock"
    with machine_lock(str(path)):
        pass
    holder = hold_lock(path, None)
    said: list[str] = []
    try:
        began = time.monotonic()
        with pytest.raises(MeasurementError, match=rf"gave up after 1.5 s waiting for the machine "
                                                   rf"lock {path}, held by PID {holder.pid} "
                                                   r"\(user root.*\(--fsperf-lock-timeout\)"), \
                machine_lock(str(path), timeout=1.5, say=said.append):
            pass
        assert 1.5 <= time.monotonic() - began < 5
        assert len(said) == 1 and said[0].startswith(
            f"pytest-fsperf: waiting for the machine lock {path}, held by PID {holder.pid} "
            "(user root, ")
    finally:
        holder.kill()
        holder.wait()
    with machine_lock(str(path), timeout=1.5, say=said.append):  # free again: taken at once
        assert len(said) == 1


@pytest.mark.fio
def test_a_lock_whose_holder_cannot_be_named_fails_at_once_and_is_waited_for_once(sticky_dir):
    """As found: nobody took the lock, passed the descriptor into an unread unix socket and
    exited; every test waited the full --fsperf-lock-timeout, the holder shown as 'user ?'."""
    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    path = sticky_dir / "pytest-fsperf.lock"
    with machine_lock(str(path)):
        pass
    code = (f"import fcntl, os, socket, sys, time\nfd = os.open({str(path)!r}, os.O_RDONLY)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\na, b = socket.socketpair()\n"
            "if os.fork() == 0:\n    a.close()\n    print(os.getpid(), flush=True)\n"
            "    time.sleep(60)\n    os._exit(0)\n"
            "socket.send_fds(a, [b'x'], [fd])\nos._exit(0)\n")  # the locker is gone; its fd lives on
    keeper = subprocess.Popen([SYSTEM_PYTHON, "-c", code], stdout=subprocess.PIPE, text=True,
                              cwd="/", user=NOBODY, group=NOBODY, extra_groups=[])
    assert keeper.stdout is not None
    child = int(keeper.stdout.readline())
    keeper.wait()
    try:
        fails_at_once(path, r"held by a process that cannot be named \(PID \d+, which is gone")
    finally:
        os.kill(child, signal.SIGKILL)
    with machine_lock(str(path), timeout=1):  # let go with its keeper: taken at once
        pass


@pytest.mark.fio
def test_a_session_waits_out_the_lock_once_not_once_per_test(sticky_dir):
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs {SYSTEM_PYTHON}")
    path = sticky_dir / "pytest-fsperf.lock"
    with machine_lock(str(path)):
        pass
    holder = hold_lock(path, None)
    try:
        with pytest.raises(MeasurementError, match="gave up after 1 s"), \
                machine_lock(str(path), timeout=1):
            pass
        began = time.monotonic()
        with pytest.raises(MeasurementError, match="already waited its --fsperf-lock-timeout once"), \
                machine_lock(str(path), timeout=600):
            pass
        assert time.monotonic() - began < 1
    finally:
        holder.kill()
        holder.wait()


# 22.8 an output path swapped by another user after the start-up check

SWAP_SUITE = """
import os, subprocess
def test_it(fsperf):
    fsperf.fio(rw="write", bs="4k", size="64k")
    subprocess.run([{python!r}, "-c", {code!r}], user={nobody}, group={nobody}, extra_groups=[],
                   check=True, cwd="/")
"""


@pytest.mark.parametrize("swap", ["fifo", "symlink"])
def test_an_output_swapped_mid_run_is_one_red_line(pytester, sticky_dir, swap):
    """As found (fs.protected_fifos=0, protected_symlinks=0): nobody made a FIFO at the
    not-yet-existing --fsperf-json path mid-run and pytest hung at the final write, then
    printed a traceback; a symlink rep.json -> /dev/null planted mid-run was followed and
    the report silently lost, rc 0."""
    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    need("fio")
    target = sticky_dir / "rep.json"
    code = (f"import os; os.mkfifo({str(target)!r}, 0o666)" if swap == "fifo" else
            f"import os; os.symlink('/dev/null', {str(target)!r})")
    pytester.makepyfile(SWAP_SUITE.format(python=SYSTEM_PYTHON, code=code, nobody=NOBODY))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--fsperf-json={target}",
                                           timeout=60)
    result.assert_outcomes(passed=1)
    kind = "a device or FIFO" + (" behind a symlink" if swap == "symlink" else "")
    result.stdout.fnmatch_lines([f"pytest-fsperf: {target} changed since pytest started (it was "
                                 f"absent, now {kind}); not written"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert os.path.islink(target) if swap == "symlink" else stat.S_ISFIFO(os.lstat(target).st_mode)


def test_a_fifo_no_one_reads_fails_in_one_line_not_a_hang(tmp_path, monkeypatch):
    monkeypatch.setattr(outfile, "READER_WAIT", 0.5)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    began = time.monotonic()
    with pytest.raises(outfile.OutputError, match=r"no process reads this FIFO \(waited 0.5 s\)"):
        outfile.write(fifo, "{}\n")
    assert time.monotonic() - began < 5


# 22.9 template fields are plain names: no indexing, attributes or conversions

@pytest.mark.parametrize("option", ["{token[0]}{token[1]}{token[2]}", "{token.__class__.__mro__}",
                                    "{secret_key[0]}", "{token!r}", "{token:>40}",
                                    "{files[passwd].__class__}"])
def test_a_template_field_that_is_not_a_plain_name_is_refused(option):
    rclone = next(b for b in BUILTIN if b.name == "rclone")
    with pytest.raises(UsageError, match="fields are plain names") as caught:
        render(rclone, SECRETS, (option,), "/m", "/p")
    r = render(rclone, SECRETS, (), "/m", "/p")
    token = str(r.fields["token"])
    assert token[:3] not in str(caught.value).replace(option, "")


@pytest.mark.integration
def test_a_secret_is_not_handed_out_a_character_at_a_time(pytester):
    """As found: --fsperf-mount-options="{token[0]}{token[1]}{token[2]}" expanded onto
    bindfs's argv and into an unmasked error."""
    need("bindfs")
    need("fio")
    pytester.makepyfile("""
        def test_it(fsperf):
            fsperf.fio(rw="write", bs="4k", size="64k")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-backend=bindfs",
                                "--fsperf-mount-options={token[0]}{token[1]}{token[2]}")
    result.assert_outcomes(errors=1)
    assert ("usage error: backend 'bindfs' option: bad template '{token[0]}{token[1]}{token[2]}': "
            "fields are plain names") in result.stdout.str()
    assert ours() == ([], [])


# 22.10 hostile files: one line naming the file or value, never a traceback or a hang

HOSTILE_RUNS = {
    "nested": lambda p: p.write_text("[" * 100_000 + "]" * 100_000),
    "nan": lambda p: p.write_text('{"results": [{"test": "t", "name": "w", '
                                  '"total": {"bw_bytes": NaN}}]}'),
    "infinite": lambda p: p.write_text('{"results": [{"test": "t", "name": "w", '
                                       '"total": {"bw_bytes": 1e999}}]}'),
    "huge-int": lambda p: p.write_text('{"results": [], "x": ' + "9" * 5000 + "}"),
    "dangling": lambda p: p.symlink_to(p.parent / "missing"),
    "directory": lambda p: p.mkdir(),
    "fifo": lambda p: os.mkfifo(p),
}
SAYS = {"nested": "is not JSON this plugin reads: nested too deeply", "nan": "holds NaN, which no measurement gives",
        "infinite": "holds 1e999, which no measurement gives", "huge-int": "is not JSON: Exceeds",
        "dangling": "does not exist (a dangling symlink)", "directory": "is a directory, not a file",
        "fifo": "is a FIFO, not a file"}


@pytest.mark.parametrize("kind", sorted(HOSTILE_RUNS))
@pytest.mark.parametrize("name", ["base", "latest"])
def test_a_hostile_saved_run_is_one_line(pytester, kind, name):
    """As found: deeply nested JSON -> INTERNALERROR (RecursionError); a dangling symlink or
    a directory named *.json with --fsperf-compare=latest -> FileNotFoundError /
    IsADirectoryError; a FIFO named *.json hangs; NaN gave the verdict `bw nanx`."""
    folder = pytester.path / ".fsperf" / "runs"
    folder.mkdir(parents=True)
    HOSTILE_RUNS[kind](folder / "base.json")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--fsperf-compare={name}",
                                           timeout=60)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([f"*--fsperf-compare={name} (command line): saved run "
                                 f"*base.json {SAYS[kind]}*"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert len([ln for ln in result.stderr.lines if ln.strip()]) == 1


@pytest.mark.parametrize("kind", ["nested", "huge-int", "fifo", "dev-zero", "directory"])
def test_a_hostile_price_list_is_one_line(pytester, kind):
    """As found: a 5000-digit integer or deeply nested TOML -> INTERNALERROR; a FIFO or
    /dev/zero hung pytest at configure."""
    path = pytester.path / "prices.toml"
    if kind == "nested":
        path.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    elif kind == "huge-int":
        path.write_text("[mine]\nx = " + "9" * 5000 + "\n")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    says = {"nested": "nested too deeply", "huge-int": "is not TOML: Exceeds", "fifo": "is a FIFO",
            "dev-zero": "is a device", "directory": "is a directory"}[kind]
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--fsperf-prices={path}",
                                           timeout=60)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([f"*--fsperf-prices={path} (command line)*{says}*"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-Inf", "-5"])
def test_juicefs_stats_that_are_not_counts_are_not_measured(value):
    """As found: JuiceFS .stats with NaN/Inf raised an uncaught OverflowError; negative
    counters were taken as they were."""
    from pytest_fsperf.store import juicefs
    good = "# TYPE juicefs_object_request_durations_histogram_seconds_GET counter\n" \
           "juicefs_object_request_durations_histogram_seconds_GET_total 3\n"
    bad = good.replace(" 3\n", f" {value}\n")
    with pytest.raises(ValueError, match="not a count"):
        juicefs.parse(bad)
    before, after = juicefs.parse(good), juicefs.parse(good.replace(" 3\n", " 1\n"))
    with pytest.raises(ValueError, match="went down from 3 to 1"):
        juicefs.difference(before, after)
    assert juicefs.difference(after, before).by_kind["GET"] == 2


def test_a_saved_run_is_never_written_into_a_device_or_fifo(pytester):
    """A saved run's name is the plugin's own: a link to /dev/null planted there is one red
    line, not a report silently lost."""
    need("fio")
    runs = pytester.path / ".fsperf" / "runs"
    runs.mkdir(parents=True)
    (runs / "mine.json").symlink_to("/dev/null")
    pytester.makepyfile("""
        def test_it(fsperf):
            fsperf.fio(rw="write", bs="4k", size="64k")
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--fsperf-save=mine",
                                           timeout=60)
    result.stdout.fnmatch_lines([f"pytest-fsperf: {runs / 'mine.json'} is a device or FIFO behind "
                                 "a symlink, not a file; not written"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert (runs / "mine.json").is_symlink()
