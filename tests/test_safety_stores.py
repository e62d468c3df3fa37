"""The stores and mounts the plugin starts, against a local user (`nobody`): a port taken
before the store binds it, a store binary or library directory another user can change, a
link planted where the engines write (fake-gcs-server has no authentication: anyone may put
an object gcsfuse shows as a link)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pytest_fsperf.errors import MeasurementError
from pytest_fsperf.infra import leftovers, trust
from pytest_fsperf.infra.mountinfo import read_mounts
from tests.conftest import need
from tests.hostile import NOBODY, nobodys_http


def _taken_port(monkeypatch, module, port: int, per_start: int = 1) -> None:
    """Each start's first port is `port` (nobody listens there): what nobody achieves by
    reading the port from the store's command line and binding it first."""
    real, calls = module.free_port, []

    def chosen() -> int:
        calls.append(1)
        return port if len(calls) % per_start == 1 % per_start else real()
    monkeypatch.setattr(module, "free_port", chosen)


@pytest.mark.s3
def test_a_port_nobody_took_first_is_not_taken_for_minio(monkeypatch, clean):
    """As found: readiness took any HTTP answer, and root's signed set-up requests (then its
    daemons) went to nobody's server (4 of 4 MinIO starts)."""
    from pytest_fsperf.store import minio
    binary = minio.find_minio() or pytest.skip("MinIO is not installed")
    record = leftovers.start()
    try:
        with nobodys_http() as (port, got):
            _taken_port(monkeypatch, minio, port, per_start=2)  # its port, then its console's
            with pytest.raises(MeasurementError, match=rf"port {port} is also listened on by PID "
                                                        rf"\d+ \(uid {NOBODY}\)"):
                minio.start_minio(binary, timeout=10)
        assert not [r for r in got if r.startswith("AUTH")]  # no signed request reached nobody
    finally:
        leftovers.stop(record)


@pytest.mark.fio
def test_a_port_nobody_took_first_is_not_taken_for_fake_gcs(monkeypatch, clean):
    from pytest_fsperf.store import served
    binary = served.find("fake-gcs-server") or pytest.skip("fake-gcs-server is not installed")
    record = leftovers.start()
    try:
        with nobodys_http() as (port, got):
            _taken_port(monkeypatch, served, port)
            with pytest.raises(MeasurementError, match=f"port {port} is also listened on by"):
                served.start_fake_gcs(binary)
        assert not [r for r in got if "/storage/v1/b" in r]  # the bucket was not made at nobody's
    finally:
        leftovers.stop(record)


@pytest.fixture
def nobodys_dir(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        pytest.skip("needs root to act for another user")
    place = tmp_path / "theirs"
    place.mkdir()
    os.chown(place, NOBODY, NOBODY)
    tmp_path.chmod(0o755)
    return place


@pytest.mark.fio
def test_a_program_a_script_interpreter_or_a_runpath_another_user_can_change_is_refused(
        tmp_path, nobodys_dir):
    """As found: `minio` from a PATH directory nobody owned ran as root; `azurite-blob` is
    `#!/usr/bin/env node`, a PATH lookup of its own; a library directory in a program's
    RUNPATH is code root loads."""
    theirs = nobodys_dir / "minio"
    shutil.copy("/bin/true", theirs)
    assert "can be changed by another user" in trust.program(str(theirs))[1]
    ours = tmp_path / "ours"
    ours.mkdir()
    script = ours / "azurite-blob"
    script.write_text("#!/usr/bin/env node\n")
    script.chmod(0o755)
    shutil.copy("/bin/true", nobodys_dir / "node")
    argv, why = trust.program(str(script), search=f"{nobodys_dir}:/usr/bin")
    assert "interpreter node" in why and "can be changed by another user" in why
    shutil.copy("/bin/true", ours / "node")
    argv, why = trust.program(str(script), search=f"{ours}:/usr/bin")
    assert (argv, why) == ([str(ours / "node"), str(script)], "")  # both by their real paths
    cc = shutil.which("cc") or pytest.skip("no C compiler")
    (ours / "p.c").write_text("int main(void) { return 0; }\n")
    subprocess.run([cc, "-o", str(ours / "p"), str(ours / "p.c"),
                    f"-Wl,--enable-new-dtags,-rpath,{nobodys_dir}:$ORIGIN/lib"], check=True)
    why = trust.program(str(ours / "p"))[1]
    assert f"loads libraries from {nobodys_dir}" in why and "can be changed" in why


@pytest.mark.s3
def test_fsperf_minio_or_a_home_of_another_user_is_not_run(monkeypatch, nobodys_dir, clean):
    from pytest_fsperf.store import minio
    fake = nobodys_dir / "minio"
    shutil.copy("/bin/true", fake)
    monkeypatch.setenv("FSPERF_MINIO", str(fake))
    with pytest.raises(MeasurementError, match=r"MinIO is not run: .*can be changed by another user"):
        minio.start_minio(minio.find_minio() or "")
    # `sudo -E` keeps the caller's HOME: the cache is root's own, whatever HOME says
    out = subprocess.run([sys.executable, "-c", "from pytest_fsperf.store import minio; "
                          "print(minio.CACHE_BIN)"], env={**os.environ, "HOME": str(nobodys_dir)},
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == os.path.join(os.path.expanduser("~root"), ".cache", "fsperf-bin")


@pytest.mark.fuse
def test_a_link_planted_where_an_engine_writes_is_never_followed(pytester, tmp_path):
    """As found: nobody put objects gcsfuse shows as links (`gcsfuse_symlink_target`) at the
    small-file engine's names; root truncated and rewrote a 0600 file of its own through them.
    On a mount the plugin makes, no link is followed (nosymfollow) by any engine, fio's
    included; the plugin's own engines open with O_NOFOLLOW as well."""
    need("bindfs")
    need("fio")
    victim = tmp_path / "victim"
    victim.write_bytes(b"root's own")
    victim.chmod(0o600)
    pytester.makepyfile(f"""
        import os
        def test_files(fsperf):
            os.makedirs(fsperf.workdir / "files", exist_ok=True)
            for i in range(4):  # the next names of the engine, planted ahead
                os.symlink({str(victim)!r}, fsperf.workdir / "files" / f"{{i}}.dat")
            fsperf.files(name="w", mode="write", count=4, size="4KiB", threads=1, subdir="files")

        def test_fio(fsperf):
            os.symlink({str(victim)!r}, fsperf.workdir / "planted")
            fsperf.fio(name="f", rw="write", bs="4k", size="8k", filename="planted")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--fsperf-backend=bindfs")
    result.assert_outcomes(failed=2)
    assert victim.read_bytes() == b"root's own"
    out = result.stdout.str()
    assert out.count("Too many levels of symbolic links") >= 2, out  # each refused, and why


@pytest.mark.fuse
@pytest.mark.parametrize("others_in", [True, False])
def test_a_hand_made_mount_whose_modes_let_everyone_write_is_refused(pytester, others_in):
    """As found: ossfs2's defaults (`allow_other`, every mode 0777, enforced by the kernel
    under default_permissions) let nobody write inside root's work root and fail its tests.
    The same mount without allow_other lets no other user in at all: measured as before."""
    binary = need("bindfs")
    need("fio")
    place = Path(tempfile.mkdtemp(prefix="fsperf-test-open-"))  # others may pass through it
    try:
        place.chmod(0o755)
        (place / "src").mkdir()
        (place / "mnt").mkdir()
        # (bindfs run by root adds allow_other of itself)
        options = ["-o", "allow_other,default_permissions"] if others_in else ["--no-allow-other"]
        proc = subprocess.Popen([binary, "-f", "--perms=a+rwx", "--chmod-ignore", *options,
                                 str(place / "src"), str(place / "mnt")])
        try:
            deadline = time.monotonic() + 10
            while not any(m.mount_point == str(place / "mnt") for m in read_mounts()):
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
            pytester.makepyfile("""
                def test_w(fsperf):
                    fsperf.fio(name="w", rw="write", bs="4k", size="64k")
            """)
            result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-mount={place / 'mnt'}")
        finally:
            subprocess.run([shutil.which("fusermount3") or "fusermount3", "-u", str(place / "mnt")],
                           check=False, capture_output=True)
            proc.wait(timeout=10)
        if others_in:
            result.assert_outcomes(errors=1)  # the work root is made as the test is set up
            result.stdout.fnmatch_lines(["*shows the work root as mode 777 whatever it is made "
                                         "with, and lets other users in (allow_other)*"])
            assert not list((place / "src").iterdir())  # the refused root is not left behind
        else:
            result.assert_outcomes(passed=1)
    finally:
        shutil.rmtree(place)  # the test's own directory


@pytest.mark.fio
def test_fio_from_a_path_directory_another_user_owns_is_not_run(monkeypatch, nobodys_dir):
    """The same rule for every program root runs from PATH: fio, sysbench, perf, the
    unmount helpers, git for bisect, ssh for the hosts' forwards."""
    from pytest_fsperf.engine import fio, sysbench
    for name in ("fio", "sysbench"):
        shutil.copy("/bin/true", nobodys_dir / name)
    monkeypatch.setenv("PATH", f"{nobodys_dir}:{os.environ['PATH']}")
    with pytest.raises(MeasurementError, match=r"fio is not run: .*can be changed by another user"):
        fio.fio_binary()
    assert sysbench.binary() is None
    assert trust.which("sysbench")[1].endswith("can be changed by another user than root or "
                                               "you (owner uid 65534, mode 755)")


@pytest.mark.fio
@pytest.mark.parametrize("entry", ["/tmp/fsperf-audit-$PLATFORM", "/tmp/fsperf-audit-${LIB}",
                                   "/tmp/fsperf-audit-missing-{n}", "$ORIGIN/" + "../" * 16 + "tmp/x-{n}"])
def test_a_runpath_token_or_a_missing_directory_another_user_may_create_is_refused(
        tmp_path, entry):
    """As found: trust.program expanded only $ORIGIN; a RUNPATH of /tmp/fsperf-audit-$PLATFORM
    was checked as that literal (missing) path and skipped, and nobody's
    /tmp/fsperf-audit-haswell/libz.so.1 ran as uid 0; a RUNPATH directory missing at the check
    and planted before a start-up retry's exec ran too. Every token now stands for any name
    (the directory it is looked up in must let no one else create one), a missing directory
    is refused where another user could create it, and each exec checks again."""
    cc = shutil.which("cc") or pytest.skip("no C compiler")
    n = os.urandom(4).hex()
    entry = entry.replace("{n}", n)
    ours = tmp_path / "ours"
    ours.mkdir()
    (ours / "p.c").write_text("int main(void) { return 0; }\n")
    subprocess.run([cc, "-o", str(ours / "p"), str(ours / "p.c"),
                    f"-Wl,--enable-new-dtags,-rpath,{entry}"], check=True)
    argv, why = trust.program(str(ours / "p"))
    assert "could be created in /tmp by another user" in why, why
    assert trust.again(argv) == why


@pytest.mark.fio
def test_a_library_directory_planted_after_the_check_is_refused_at_the_next_exec(tmp_path):
    cc = shutil.which("cc") or pytest.skip("no C compiler")
    ours = tmp_path / "ours"
    (ours / "lib").mkdir(parents=True)
    (ours / "p.c").write_text("int main(void) { return 0; }\n")
    subprocess.run([cc, "-o", str(ours / "p"), str(ours / "p.c"),
                    "-Wl,--enable-new-dtags,-rpath,$ORIGIN/lib"], check=True)
    argv, why = trust.program(str(ours / "p"))
    assert why == ""
    (ours / "lib").chmod(0o777)  # as if another user's since the first check
    assert "can be changed by another user" in trust.again(argv)


@pytest.mark.s3
def test_a_port_another_user_listens_on_is_passed_by_not_a_failed_test(monkeypatch, clean):
    """On a shared machine a port taken between the probe and the bind is most often someone's
    ordinary listener: the store starts on another port (nothing of root's reaches the
    listener), and only a port taken at every start fails it."""
    from pytest_fsperf.store import minio
    binary = minio.find_minio() or pytest.skip("MinIO is not installed")
    record = leftovers.start()
    try:
        with nobodys_http() as (port, got):
            real, calls = minio.free_port, []

            def first_is_theirs() -> int:
                calls.append(1)
                return port if len(calls) == 1 else real()
            monkeypatch.setattr(minio, "free_port", first_is_theirs)
            server = minio.start_minio(binary, timeout=30)
            try:
                assert not server.endpoint.endswith(f":{port}") and len(calls) > 2
            finally:
                server.stop()
        assert not [r for r in got if r.startswith("AUTH")]
    finally:
        leftovers.stop(record)


@pytest.mark.parametrize(("name", "value", "says"), [
    ("LD_LIBRARY_PATH", ":/usr/lib", "relative to the current directory"),
    ("LD_LIBRARY_PATH", "lib", "relative to the current directory"),
    ("LD_LIBRARY_PATH", "/tmp/fsperf-nowhere-$PLATFORM", "could be created in /tmp"),
    ("LD_PRELOAD", "./x.so", "relative to the current directory"),
    ("LD_PRELOAD", "/tmp/fsperf-nowhere.so", "/tmp can be changed by another user"),
    ("LD_AUDIT", "/tmp/fsperf-nowhere.so", "/tmp can be changed by another user"),
])
def test_a_loader_variable_that_reaches_another_users_library_refuses_the_program(
        monkeypatch, name, value, says):
    """Not tried by the audit, tried here: what the environment tells the dynamic loader is
    part of every program root runs (an empty LD_LIBRARY_PATH entry is the current
    directory: a work directory on a mount others write)."""
    monkeypatch.setenv(name, value)
    why = trust.program("/bin/true")[1]
    assert name in why and says in why, why
    monkeypatch.setenv(name, "/usr/lib" if name == "LD_LIBRARY_PATH" else "libc.so.6")
    assert trust.program("/bin/true")[1] == ""
