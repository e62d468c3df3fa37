"""Files root writes: reports into what the user named and nothing else, no link followed, a full disk or a swapped path one line; a cache dir never emptied past the daemon's own part."""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest

from pytest_fsperf.errors import MeasurementError, UsageError
from pytest_fsperf.infra import outfile
from pytest_fsperf.mounts.mounter import MountedFs, MountPlan
from pytest_fsperf.mounts.registry import Registry
from pytest_fsperf.mounts.spec import Backend
from tests.conftest import need
from tests.hostile import (
    NOBODY,
    SECRETS,
    SYSTEM_PYTHON,
    as_nobody,
    current_umask,
    plant,
    unchanged,
)


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


def test_bad_output_targets_are_usage_errors_naming_the_flag(pytester, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "link.json").symlink_to(victim)
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-json={tmp_path / 'link.json'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--fsperf-json*link.json is a symlink; name the file it points to"])
    assert "Traceback" not in result.stderr.str() and victim.read_text() == "precious\n"


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


def test_a_config_error_leaves_no_private_dir(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    mine = Backend(name="myfs", binary="sh", install="", command=("myfs", "{nothing}"))
    with pytest.raises(UsageError, match="needs 'nothing'"):
        MountedFs(MountPlan(mine))
    assert list(tmp_path.iterdir()) == []


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


@pytest.mark.fio
@pytest.mark.parametrize("how", ["owned by nobody", "a link to nobody's"])
def test_a_worker_another_user_could_plant_is_never_run_as_root(sticky_dir, tmp_path, monkeypatch, how):
    """The small-file engine runs its compiled worker as root from a cache directory. A cache
    another user owns (or a link to one), with a binary planted under the worker's own name,
    is refused: nothing there runs, and the engine moves the files itself, saying why."""
    import hashlib

    from pytest_fsperf.engine import native
    from pytest_fsperf.engine.files import run_files

    theirs = sticky_dir / "cache"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, NOBODY, NOBODY)
    marker = tmp_path / "ran-as-root"
    planted = theirs / f"{native.NAME}-{hashlib.sha256(native.source()).hexdigest()[:16]}"
    planted.write_text(f"#!/bin/sh\ntouch {marker}\n")
    planted.chmod(0o755)
    os.chown(planted, NOBODY, NOBODY)
    cache = theirs
    if how == "a link to nobody's":
        cache = tmp_path / "cache"
        cache.symlink_to(theirs)
    monkeypatch.setattr(native, "CACHE", str(cache))
    native.worker.cache_clear()
    try:
        r = run_files([(str(tmp_path / "f"), 10)], write=True, threads=1)
    finally:
        native.worker.cache_clear()
    assert not marker.exists()
    assert r.generator.startswith("python (the worker's cache is not private: "), r.generator
    assert (tmp_path / "f").stat().st_size == 10


@pytest.mark.fio
def test_the_worker_runs_from_what_was_checked_and_built_with_the_systems_tools(tmp_path, monkeypatch):
    """As found: the cache path was checked resolved and run unresolved (nobody re-pointed a
    link on it), and with nobody's directory first on root's PATH, gcc ran nobody's `as`. Now
    the compiler and its tools come from /usr/bin, the worker from the real path checked, and
    a run checks the bytes it execs against those built."""
    from pytest_fsperf.engine import native

    need("cc")
    marker = tmp_path / "ran-as-root"
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    for tool in ("cc", "gcc", "as", "ld", "collect2"):
        (theirs / tool).write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
        (theirs / tool).chmod(0o755)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    link = tmp_path / "cache"
    link.symlink_to(private)
    monkeypatch.setenv("PATH", f"{theirs}:{os.environ['PATH']}")
    monkeypatch.setattr(native, "CACHE", str(link))
    native.worker.cache_clear()
    try:
        found, why = native.worker()
        assert found is not None, why
        assert not marker.exists()  # none of their tools ran
        assert found.path.startswith(str(private) + os.sep)  # the link resolved, once
        link.unlink()
        link.symlink_to(theirs)  # re-pointed after the check: not looked up again
        _s, moved, _t, _f = native.run([(str(tmp_path / "f"), 10)], bytes(1 << 20), 1, 1 << 20)
        assert moved == 10 and not marker.exists()
        os.chmod(found.path, 0o700)
        Path(found.path).write_bytes(f"#!/bin/sh\ntouch {marker}\n".encode())  # its bytes changed
        with pytest.raises(MeasurementError, match="changed since it was built: not run"):
            native.run([(str(tmp_path / "g"), 10)], bytes(1 << 20), 1, 1 << 20)
        assert not marker.exists()
    finally:
        native.worker.cache_clear()


@pytest.mark.fio
@pytest.mark.parametrize("planted", ["a link to a device", "a FIFO"])
def test_a_device_or_fifo_another_user_put_at_a_reports_name_is_never_written(
        pytester, sticky_dir, planted):
    """As found: `--fsperf-markdown=/tmp/r.md` with nobody's symlink there to root's pty:
    1,491-2,459 bytes of the report reached root's terminal (/dev/kmsg, /dev/watchdog or
    another user's tty the same way). A stream is written into only where no other user
    could have put it; this one is one usage line, and nothing is written."""
    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    target = sticky_dir / "r.md"
    as_nobody(f"import os; os.symlink('/dev/null', {str(target)!r})" if planted.startswith("a link")
              else f"import os; os.mkfifo({str(target)!r}, 0o666)")
    with pytest.raises(outfile.OutputError, match=rf"another user's \(owner uid {NOBODY}\)"):
        outfile.check(target)
    pytester.makepyfile("def test_x(): pass")
    for flag in ("--fsperf-markdown", "--fsperf-json", "--fsperf-html"):
        result = pytester.runpytest("-p", "no:cacheprovider", f"{flag}={target}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"*{flag}={target}*another user's (owner uid {NOBODY})*"])
    # root's own link to a device in its own directory is still written into (/dev/stdout)
    mine = pytester.path / "out"
    mine.symlink_to("/dev/null")
    outfile.write(mine, "x")


def test_the_daemons_part_of_a_shared_cache_another_user_can_change_is_kept(tmp_path, monkeypatch):
    """The family of the work root's hole: s3fs's part of a shared cache (use_cache=DIR: DIR/
    BUCKET) is emptied only where no other user can swap what is there; in a directory they
    own it is kept and named, whatever is inside."""
    if os.geteuid() != 0:
        pytest.skip("needs root to give a directory to nobody")
    monkeypatch.setattr("shutil.which", lambda name: "/bin/true")
    cache = tmp_path / "theirs"
    made = plant(cache / "b", ("obj1",))
    os.chown(cache, NOBODY, NOBODY)
    s3fs = MountedFs(MountPlan(Registry([]).get("s3fs", "test"), ("-o", f"use_cache={cache}"),
                               dict(SECRETS)))
    try:
        steps = s3fs.wipe_cache()
        assert f"kept {cache}/b (another user could change what is there: " in steps[0]
        assert unchanged(cache / "b", made)
    finally:
        s3fs.close()
