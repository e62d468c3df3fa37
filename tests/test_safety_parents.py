"""Every path root executes, obeys or lets pytest write is checked with its parents: a file
of root's in a directory `nobody` owns can be swapped after any check of the file alone."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_fsperf.errors import UsageError
from pytest_fsperf.options.config import BY_NAME
from pytest_fsperf.options.parse import Raw

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"  # reachable by nobody


@pytest.fixture
def nobodys_dir() -> Iterator[Path]:
    """/tmp/fsperf-parent-X/nobody: a directory nobody owns (they may rename what is in it),
    holding the files root is asked to use."""
    if os.geteuid() != 0:
        pytest.skip("needs root to give a directory to nobody")
    top = Path(tempfile.mkdtemp(prefix="fsperf-parent-", dir="/tmp"))
    theirs = top / "nobody"
    theirs.mkdir()
    os.chown(theirs, NOBODY, NOBODY)
    yield theirs
    shutil.rmtree(top)


def _root_file(path: Path, text: str, mode: int) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def _convert(option: str, path: Path):
    return BY_NAME[option].convert(Raw(str(path), f"--{option.replace('_', '-')} (command line)",
                                       path.parent))


@pytest.mark.parametrize("option, text, mode", [
    ("fsperf_ssh_config", "Host h\n  HostName 127.0.0.1\n", 0o600),
    ("fsperf_reference", "#!/bin/sh\nexit 0\n", 0o755),
    ("fsperf_candidate", "#!/bin/sh\nexit 0\n", 0o755),
    ("fsperf_backend_config", "[fsperf]\nbucket = b\n", 0o600),
])
def test_a_file_of_roots_in_a_directory_nobody_owns_is_refused(nobodys_dir, option, text, mode):
    """As found: after the check of the ssh config alone, nobody renamed its directory and
    root's ssh ran a ProxyCommand as uid 0; a build wrapper in such a directory ran as root."""
    f = _root_file(nobodys_dir / "f", text, mode)
    with pytest.raises(UsageError, match=rf"its directory {nobodys_dir} can be changed by another "
                                         rf"user than root or you \(owner uid {NOBODY}"):
        _convert(option, f)
    safe = nobodys_dir.parent / "mine"
    safe.mkdir(mode=0o755)
    f = _root_file(safe / "f", text, mode)
    assert _convert(option, f)  # the same file where only root can change it: taken
    os.chown(f, NOBODY, NOBODY)  # the file itself theirs
    with pytest.raises(UsageError, match=f"{f} can be changed by another user"):
        _convert(option, f)


def test_junitxml_is_checked_as_the_plugins_own_outputs(pytester, nobodys_dir):
    """As found: a symlink planted at the --junitxml path made pytest overwrite its target.
    Checked in a session that uses the plugin, whether it was asked for on the command line
    (before junitxml starts) or first used by a collected test (junitxml's writer made)."""
    pytester.makepyfile("def test_x(fsperf): pass")
    target = nobodys_dir.parent / "target"
    link = nobodys_dir.parent / "link.xml"
    link.symlink_to(target)
    for asked in ([], ["--fsperf-scale=1"]):
        result = pytester.runpytest("-p", "no:cacheprovider", f"--junitxml={link}", *asked)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"*--junitxml={link}: {link} is a dangling symlink*"])
        assert not target.exists()
    theirs = nobodys_dir / "report.xml"  # they could plant a link there later
    result = pytester.runpytest("-p", "no:cacheprovider", f"--junitxml={theirs}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--junitxml={theirs}: its directory {nobodys_dir} can be changed*"])
    ok = nobodys_dir.parent / "ok.xml"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--junitxml={ok}")
    result.assert_outcomes(passed=1)
    assert stat.S_ISREG(ok.lstat().st_mode)
    # a sticky directory (/tmp) still lets nobody add the name after start-up: where
    # fs.protected_symlinks=0, root's pytest then wrote through their link
    sticky = nobodys_dir.parent / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--junitxml={sticky}/x.xml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--junitxml={sticky}/x.xml: its directory {sticky} lets "
                                 "other users add names (mode 1777)*"])


def test_junitxml_goes_where_it_was_checked_not_through_a_link_re_pointed_later(pytester,
                                                                                nobodys_dir):
    """As found: --junitxml under a parent that is a symlink nobody owns in a sticky
    directory, re-pointed after start-up: root overwrote the file at the new target."""
    top = nobodys_dir.parent
    sticky, mine, victim = top / "sticky", top / "mine", top / "victim"
    for d in (sticky, mine, victim):
        d.mkdir()
    sticky.chmod(0o1777)
    (victim / "report.xml").write_text("root's own file\n")
    link = sticky / "out"
    link.symlink_to(mine)
    os.lchown(link, NOBODY, NOBODY)
    pytester.makepyfile(f"""
        import os
        def test_x(fsperf):  # nobody re-points their link while the session runs
            os.unlink({str(link)!r})
            os.symlink({str(victim)!r}, {str(link)!r})
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--junitxml={link}/report.xml")
    result.assert_outcomes(passed=1)
    assert (victim / "report.xml").read_text() == "root's own file\n"
    assert "<testsuites" in (mine / "report.xml").read_text()


def test_a_work_root_swapped_by_another_user_does_not_redirect_roots_writes(pytester, nobodys_dir):
    """As found: with --fsperf-mount at a directory nobody could write (no sticky bit), nobody
    swapped the work directory for one of symlinks and the engines overwrote root's files.
    JuiceFS's root is such a directory (0777): the work root is reached by its descriptor."""
    nobodys_dir.parent.chmod(0o755)  # nobody may pass through to it
    mount = nobodys_dir.parent / "open"
    mount.mkdir()
    mount.chmod(0o777)  # root's, but anyone may rename what is in it
    victim = nobodys_dir.parent / "victim"
    victim.write_text("root's own\n")
    swap = (f"import os, sys\nroot = sys.argv[1]\nos.rename(root, root + '.moved')\n"
            f"os.makedirs(os.path.join(root, sys.argv[2]))\n"
            f"os.symlink({str(victim)!r}, os.path.join(root, sys.argv[2], 'f'))\n")
    pytester.makepyfile(f"""
        import os, subprocess, sys
        def test_x(fsperf):
            test_dir = os.path.basename(str(fsperf.workdir))
            root = fsperf._runner.target.logical(os.path.dirname(str(fsperf.workdir)))
            subprocess.run([{SYSTEM_PYTHON!r}, "-c", {swap!r}, root, test_dir], check=True,
                           user={NOBODY}, group={NOBODY}, extra_groups=[])
            r = fsperf.fio(rw="write", bs="64k", size="1M", filename="f")
            assert r.write.io_bytes == 1 << 20
            assert os.path.getsize(os.path.join(root + ".moved", test_dir, "f")) == 1 << 20
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-mount={mount}",
                                "--fsperf-plain-dir=1")
    result.assert_outcomes(passed=1)
    assert victim.read_text() == "root's own\n"
    # nobody's directory at the old name is not the plugin's to remove; its own work root,
    # moved, is emptied through its descriptor and named as left behind
    (theirs,) = [p for p in mount.iterdir() if not p.name.endswith(".moved")]
    assert (theirs / "test_x-1" / "f").is_symlink()
    (moved,) = [p for p in mount.iterdir() if p.name.endswith(".moved")]
    assert list(moved.iterdir()) == []
    result.stdout.fnmatch_lines(["*the name no longer holds the plugin's work root; not removed*"])


def test_a_mount_in_a_directory_another_user_can_change_is_refused(pytester, nobodys_dir):
    """As found: nobody renamed a mount that lay in their directory and put a link of theirs
    at its name: the next test's work went where they chose, and the session said passed."""
    mount = nobodys_dir / "mnt"
    mount.mkdir()
    pytester.makepyfile("def test_x(fsperf):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-mount={mount}",
                                "--fsperf-plain-dir=1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--fsperf-mount={mount}*: its directory {nobodys_dir} can be "
                                 "changed by another user*the tests' work would go where they chose"])


def test_the_work_root_is_private(pytester, tmp_path):
    pytester.makepyfile(f"""
        import os, stat
        def test_x(fsperf):
            root = os.path.dirname(fsperf.workdir)
            assert stat.S_IMODE(os.stat(root).st_mode) == 0o700
            assert os.path.dirname(root) == {str(tmp_path)!r}
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-mount={tmp_path}",
                                "--fsperf-plain-dir=1")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("option, text, mode", [
    ("fsperf_candidate", "#!/bin/sh\nexit 0\n", 0o755),
    ("fsperf_backend_config", "[fsperf]\nbucket = b\n", 0o600),
])
def test_a_link_flipping_under_a_path_root_uses_never_yields_the_other_users_file(
        nobodys_dir, monkeypatch, option, text, mode):
    """As found: the check resolved the link, the use resolved it again; a link flipping
    between root's file and nobody's won 94 of 3,000 races. Here it flips at the worst
    moment, right after the check: what is used is what was checked, or it is refused."""
    from pytest_fsperf.infra import trust

    top = nobodys_dir.parent
    mine = top / "mine"
    mine.mkdir(mode=0o755)
    good = _root_file(mine / "f", text, mode)
    bad = _root_file(nobodys_dir / "f", text.replace("bucket = b", "bucket = theirs"), mode)
    os.chown(bad, NOBODY, NOBODY)
    link = top / "link"
    link.symlink_to(good)
    checked = trust.resolved

    def flip_after(path: str, exists: bool = True) -> tuple[str, str]:
        got = checked(path, exists)
        link.unlink()
        link.symlink_to(bad)  # nobody's file from now on
        return got

    monkeypatch.setattr(trust, "resolved", flip_after)
    got = _convert(option, link)
    if option == "fsperf_candidate":
        assert got == str(good)
    else:  # the config read is root's
        assert got.values.get("bucket") == "b", got


@pytest.mark.fuse
def test_a_daemon_found_on_path_in_a_directory_another_user_can_change_is_not_run(
        pytester, nobodys_dir, monkeypatch):
    """As found (noticed in issue 50's work): a backend's daemon found on PATH ran as root
    with no check of where it lay; a PATH directory another user can change is theirs to fill."""
    ran = nobodys_dir.parent / "ran"
    fake = nobodys_dir / "bindfs"
    fake.write_text(f"#!/bin/sh\ntouch {ran}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{nobodys_dir}:{os.environ['PATH']}")
    pytester.makepyfile("""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("bindfs")
        def test_x(fsperf):
            pass
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*bindfs: its directory {nobodys_dir} can be changed by another "
                                 "user*it would run as you*"])
    assert not ran.exists()


def test_a_directory_moved_to_the_work_roots_name_is_never_removed(pytester, nobodys_dir):
    """As found: on a mount whose root is 0777 and not sticky, nobody renamed the session's
    work root away and moved a root-owned directory to its name; the session said "not
    removed" but its record kept the name, and the watchdog's settling at exit ran `rm -rf`
    on it: root's directory was gone. A directory is now removed only as the very one made
    (its device and inode recorded once made), held by descriptor while it is emptied."""
    from pytest_fsperf.infra.leftovers import state_dir
    nobodys_dir.parent.chmod(0o755)
    mount = nobodys_dir.parent / "open"
    mount.mkdir()
    mount.chmod(0o777)
    precious = mount / "precious"  # root's, in a directory anyone may rename entries of
    precious.mkdir()
    (precious / "keep").write_text("root's own\n")
    swap = ("import os, sys\nroot, precious = sys.argv[1:]\nos.rename(root, root + '.moved')\n"
            "os.rename(precious, root)\n")
    pytester.makepyfile(f"""
        import os, subprocess
        def test_x(fsperf):
            root = fsperf._runner.target.logical(os.path.dirname(str(fsperf.workdir)))
            subprocess.run([{SYSTEM_PYTHON!r}, "-c", {swap!r}, root, {str(precious)!r}],
                           check=True, user={NOBODY}, group={NOBODY}, extra_groups=[])
    """)
    records = set(Path(state_dir()).glob("*.jsonl"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--fsperf-mount={mount}",
                                           "--fsperf-plain-dir=1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*the name no longer holds the plugin's work root; not removed*"])
    deadline = time.monotonic() + 30  # the watchdog settles the record after the exit
    while set(Path(state_dir()).glob("*.jsonl")) - records and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not set(Path(state_dir()).glob("*.jsonl")) - records  # settled
    (named,) = [p for p in mount.iterdir() if p.name.startswith("fsperf-work-")
                and not p.name.endswith(".moved")]
    assert (named / "keep").read_text() == "root's own\n"  # root's directory, untouched


@pytest.mark.fio
def test_a_recorded_directory_is_removed_only_as_the_one_made(tmp_path):
    """The settling itself: the directory made is emptied and removed; a directory of the
    same name that is not it (moved there later) is kept; without a recorded identity (a
    kill between making it and noting it) only an empty one is removed."""
    from pytest_fsperf.infra import leftovers
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    made = tmp_path / "fsperf-work-0123abcd"
    made.mkdir()
    (made / "sub").mkdir()
    (made / "sub" / "f").write_text("x")
    st = made.stat()
    other = tmp_path / "fsperf-work-4567abcd"
    other.mkdir()
    (other / "keep").write_text("keep")
    bare = tmp_path / "fsperf-work-89abcdef"
    bare.mkdir()
    (folder / "1-dead.jsonl").write_text(
        '{"owner": 1, "started": 1.0}\n'
        f'{{"id": 1, "kind": "dir", "path": "{made}"}}\n'
        f'{{"id": 1, "kind": "dir", "path": "{made}", "dev": {st.st_dev}, "ino": {st.st_ino}}}\n'
        f'{{"id": 2, "kind": "dir", "path": "{other}", "dev": {st.st_dev}, "ino": {st.st_ino}}}\n'
        f'{{"id": 3, "kind": "dir", "path": "{other}"}}\n'
        f'{{"id": 4, "kind": "dir", "path": "{bare}"}}\n')
    report = leftovers.sweep(str(folder))
    assert not made.exists() and not bare.exists()
    assert (other / "keep").read_text() == "keep"
    assert f"kept {other} (not the directory the plugin made there)" in report[0]
    assert f"kept {other} (its identity was not recorded and it is not empty)" in report[0]
