"""fio as root: no option that runs a command or writes elsewhere, no engine but local files, no control character, its servers out of other users' reach, none left after an interrupt."""

from __future__ import annotations

import json
import os
import subprocess

import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_fsperf.engine.fio import build_job
from pytest_fsperf.engine.fio_options import JOB, WHY
from pytest_fsperf.errors import UsageError
from tests.conftest import need, ours
from tests.hostile import (
    NOBODY,
    SYSTEM_PYTHON,
)

# -- 3. report writers --------------------------------------------------------------------


# -- 6. the machine lock ------------------------------------------------------------------


# -- 9. the daemon's whole process tree is stopped --------------------------------------


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

        def command(p):
            try:
                return " ".join(p.cmdline())
            except psutil.Error:  # a child that ended meanwhile (a zombie of a mount helper)
                return ""

        def probe():
            me = psutil.Process()
            servers = []
            for _ in range(600):
                servers = [p for p in me.children() if "--server=" in command(p)]
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
