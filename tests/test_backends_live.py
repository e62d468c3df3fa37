"""Backends the plugin mounts itself, live: s3fs and rclone over a real MinIO, bindfs, local.

Every test checks that nothing is left behind: no mount under a pytest-fsperf directory,
no daemon or server process started for it.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import interrupt_pytest, need

TIER = "fuse"  # every test here, unless one says otherwise (conftest.py)


def run(pytester, *args):
    out = pytester.path / "fsperf.json"
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-json={out}",
                                f"--junitxml={junit}", *args)
    doc = json.loads(out.read_text()) if out.exists() else None
    texts = result.stdout.str() + result.stderr.str() + (junit.read_text() if junit.exists() else "")
    texts += out.read_text() if out.exists() else ""
    return result, doc, texts


def test_s3fs_write_read_and_remount_cold_is_really_cold(pytester, minio, clean):
    need("s3fs")
    pytester.makepyfile(f"""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("s3fs", options=["-o", "use_cache={{private}}/cache"])
        def test_cold(fsperf, fsperf_s3):
            open({str(pytester.path / 'secret')!r}, "w").write(fsperf_s3.secret_key)
            fsperf.fio(name="write", rw="write", bs="1M", size="32M", direct=1, end_fsync=1)
            before = fsperf_s3.served_bytes()
            warm = fsperf.fio(name="warm", rw="read", bs="1M", size="32M", direct=1)
            served_warm = fsperf_s3.served_bytes() - before
            fsperf.cold()
            before = fsperf_s3.served_bytes()
            cold = fsperf.fio(name="cold", rw="read", bs="1M", size="32M", direct=1)
            served_cold = fsperf_s3.served_bytes() - before
            print("SERVED", served_warm, served_cold)
            assert served_warm < 2**20          # s3fs answered from its disk cache
            assert served_cold >= 32 * 2**20     # after the remount the server sent it all again
            assert warm.daemon_cache == "warm"
            assert cold.daemon_cache == "cold: remounted, disk cache wiped"
            assert any(s.startswith("wiped ") and s.endswith("/cache/" + fsperf_s3.bucket)
                       for s in cold.cold_steps)
            assert cold.mount.backend == "s3fs"
            assert cold.daemon.pid != warm.daemon.pid  # a new daemon served the cold read
            assert cold.cold_read == "verified", cold.cold_evidence  # s3fs replies with write(2)
            assert cold.cache_disk_peak_bytes >= 32 * 2**20  # s3fs staged the file in use_cache
            assert warm.cache_disk_peak_bytes >= 32 * 2**20
    """)
    result, doc, texts = run(pytester, "-s")
    result.assert_outcomes(passed=1)
    result.stdout.re_match_lines([r"test_cold\s+cold\s+.*cold: remount\+wipe\+drop_caches"])
    secret = (pytester.path / "secret").read_text()
    assert len(secret) >= 20 and secret not in texts
    (write, _warm, cold) = doc["results"]
    assert write["mount"]["command"][0] == "s3fs"
    assert cold["cache"] == "cold: drop_caches"


@pytest.mark.slow
def test_rclone_ab_bwlimit_shows_b_slower(pytester, minio, clean):
    need("rclone")
    pytester.makepyfile("""
        import re

        from pytest_fsperf import fsperf_mount

        @fsperf_mount("rclone", config="fsperf_s3")
        def test_ab(fsperf, fsperf_s3):
            rendered = fsperf._runner.target.owned.rendered
            open("secrets", "w").write(str(rendered.fields["token"]) + " " + fsperf_s3.secret_key)
            ab = fsperf.compare(dict(rw="read", bs="1M", size="32M", direct=1),
                                a=[], b=["--bwlimit", "10M"], rounds=2, max_rounds=6)
            m = ab.metrics["bw"]
            assert 2 <= len(m.a) == len(m.b) <= 6
            assert ab.ratio("bw") < 0.5, ab        # 10 MiB/s against an unthrottled rclone
            assert m.outcome == "B worse" and m.ratio < 0.5 and m.ci_high < 1
            assert all(10e6 < b < 12e6 for b in m.b), m.b
            # A B, then B A (a pair the machine canary drops shows as an x)
            assert re.match(r"(ABx)*ABBA", ab.order) and ab.stopped.startswith("decided after")
    """)
    result, doc, texts = run(pytester)
    result.assert_outcomes(passed=1)
    assert doc["environment"]["daemon"]["cmdline"][0] == "rclone"
    for secret in (pytester.path / "secrets").read_text().split():
        assert len(secret) >= 20 and secret not in texts
    (c,) = doc["comparisons"]
    assert c["b_options"] == ["--bwlimit", "10M"] and c["backend"] == "rclone"
    names = [r["name"] for r in doc["results"]]
    assert names[:4] == ["read[A1]", "read[B1]", "read[B2]", "read[A2]"]
    assert all(r["daemon_cache"].startswith("cold: remounted") for r in doc["results"])
    b_rounds = [r for r in doc["results"] if "[B" in r["name"]]
    assert all("--bwlimit" in r["mount"]["options"] for r in b_rounds)
    result.stdout.fnmatch_lines(["A/B test_ab read on rclone: * pairs, order ABBA*",
                                 "  B: --bwlimit 10M", "*bandwidth*"])


@pytest.mark.slow
def test_s3fs_ab_parallel_upload_matters_for_flushed_writes(pytester, minio, clean):
    need("s3fs")
    pytester.makepyfile("""
        import pytest
        from pytest_fsperf import mount_params

        @pytest.mark.parametrize("opts", mount_params("s3fs", []))
        def test_ab(fsperf, opts):
            ab = fsperf.compare(dict(rw="write", bs="1M", size="64M", direct=1, end_fsync=1),
                                a=[], b=["-o", "parallel_count=1", "-o", "multipart_size=5"],
                                rounds=3)
            print("RATIO", ab.ratio("bw"))
            assert ab.ratio("bw") < 0.9
    """)
    result, _, _ = run(pytester, "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_ab?defaults?*"])


def test_backend_from_conftest_and_from_the_command_line(pytester, clean):
    need("bindfs")
    need("fio")
    pytester.makeconftest("""
        from pytest_fsperf import Backend

        def pytest_fsperf_backends():
            return [Backend(name="mybind", binary="bindfs", install="apt-get install bindfs",
                            command=("bindfs", "-f", "{options}", "{source}", "{mountpoint}"),
                            defaults={"source": ("{private}/src",)}, secrets=())]
    """)
    pytester.makepyfile("""
        import os
        PIDS = []

        def test_one(fsperf):
            r = fsperf.fio(rw="write", bs="1M", size="8M", direct=1)
            assert r.mount.backend == "mybind" and r.daemon is not None
            PIDS.append(r.daemon.pid)

        def test_two(fsperf):
            r = fsperf.fio(rw="write", bs="1M", size="8M", direct=1)
            assert r.daemon.pid == PIDS[0]       # one mount for the whole session
            assert "-r" not in r.mount.options
            assert r.mount.options == ("--no-allow-other",)
    """)
    result, doc, _ = run(pytester, "--fsperf-backend=mybind", "--fsperf-mount-options=--no-allow-other")
    result.assert_outcomes(passed=2)
    assert doc["environment"]["daemon"]["cmdline"][0] == "bindfs"


def test_backend_defined_in_a_config_file(pytester, clean):
    need("bindfs")
    need("fio")
    pytester.makefile(".ini", fsperf="""
        [backend inibind]
        binary = bindfs
        command = bindfs -f {options} {source} {mountpoint}
        default.source = {private}/data
        install = apt-get install bindfs
    """)
    pytester.makepyfile("""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("inibind", options="-o kernel_cache")
        def test_x(fsperf):
            r = fsperf.fio(rw="write", bs="1M", size="8M", direct=1)
            assert r.mount.backend == "inibind"
            assert r.mount.command[:4] == ("bindfs", "-f", "-o", "kernel_cache")
            assert r.daemon is not None
    """)
    result, _, _ = run(pytester, "--fsperf-backend-config=fsperf.ini")
    result.assert_outcomes(passed=1)


def test_mount_failure_shows_the_daemons_error_without_the_secret(pytester, minio, clean):
    need("s3fs")
    pytester.makeconftest("""
        import pytest

        @pytest.fixture(scope="session")
        def wrong_secret(fsperf_s3):
            return {**fsperf_s3.config(), "secret_key": "Wr0ngSecretWr0ngSecretWr0ng"}
    """)
    pytester.makepyfile("""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("s3fs", config="wrong_secret")
        def test_x(fsperf):
            pass

        def test_after(fsperf):
            pass
    """)
    result, _, texts = run(pytester)
    result.assert_outcomes(errors=1, passed=1)
    result.stdout.fnmatch_lines(["*s3fs mount failed (exit *invalid credentials*"])
    assert "Wr0ngSecret" not in texts
    assert "Traceback" not in result.stdout.str()


def test_mount_timeout_and_missing_binary(pytester, clean):
    need("fio")
    pytester.makeconftest("""
        from pytest_fsperf import Backend

        def pytest_fsperf_backends():
            return [Backend(name="never", binary="sh", install="-",
                            command=("sh", "-c", "sleep 30", "pytest-fsperf-never")),
                    Backend(name="absent", binary="fsperf-absent-daemon", command=("x",),
                            install="install it from https://example.com/absent")]
    """)
    pytester.makepyfile("""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("never")
        def test_timeout(fsperf):
            pass

        @fsperf_mount("absent")  # (goofys, here before, is among the peers on PATH now)
        def test_missing(fsperf):
            pass
    """)
    t0 = time.monotonic()
    result, _, _ = run(pytester, "--fsperf-mount-timeout=1", "-rs")
    assert time.monotonic() - t0 < 20
    # issue 64: a daemon not installed fails its test (it skipped: a job that measured
    # nothing was green), with its install line; a suite may ask to skip
    result.assert_outcomes(errors=2)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*never: not mounted within 1 s*",
                                 "*fsperf-absent-daemon is not installed (install it from*"
                                 "--fsperf-missing-backend=skip skips it instead)*"])
    result, _, _ = run(pytester, "--fsperf-mount-timeout=1", "-rs", "-k", "test_missing",
                       "--fsperf-missing-backend=skip")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*fsperf-absent-daemon is not installed (install it from*"])


def test_daemon_killed_mid_run_then_the_session_goes_on(pytester, minio, clean):
    need("s3fs")
    pytester.makepyfile("""
        import os, signal, threading, time
        from pytest_fsperf import fsperf_mount

        ROOTS = []

        @fsperf_mount("s3fs")
        def test_killed(fsperf):
            ROOTS.append(fsperf.workdir.parent.name)
            pid = fsperf._runner.target.owned.daemon.daemon.pid
            threading.Timer(2.0, os.kill, (pid, signal.SIGKILL)).start()
            fsperf.fio(name="long", rw="write", bs="1M", size="8M", direct=1, time_based=1,
                       runtime="30s")

        @fsperf_mount("s3fs")
        def test_next(fsperf):
            fsperf.fio(rw="write", bs="1M", size="8M", direct=1)
            root = fsperf.workdir.parent.parent
            assert ROOTS[0] not in os.listdir(root)  # the killed test's files were removed
    """)
    t0 = time.monotonic()
    result, _, _ = run(pytester)
    assert time.monotonic() - t0 < 60
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*FUSE daemon PID * exited during long*"])


def test_a_daemon_that_dies_is_named_with_the_last_words_of_its_log(pytester, clean):
    """rclone told to stop mid-run says in its log what it did; the failure quotes it."""
    need("rclone")
    need("fio")
    pytester.makepyfile("""
        import os, signal, threading
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("rclone")
        def test_stopped(fsperf):
            pid = fsperf._runner.target.owned.daemon.daemon.pid
            threading.Timer(2.0, os.kill, (pid, signal.SIGTERM)).start()
            fsperf.fio(name="long", rw="write", bs="1M", size="8M", time_based=1,
                       runtime="30s")
    """)
    result, _, _ = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*FUSE daemon PID * exited during long; its log ends: *"
                                 "Failed to unmount*"])


def test_ctrl_c_unmounts_and_stops_the_daemon(pytester, clean):
    need("bindfs")
    need("fio")
    pytester.makepyfile("""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("bindfs")
        def test_long(fsperf):
            open("started", "w").close()
            fsperf.fio(rw="write", bs="1M", size="16M", direct=1, time_based=1, runtime="60s")
    """)
    interrupt_pytest(pytester.path, [], (pytester.path / "started").exists, 1.0)


def test_local_backend_and_usage_errors(pytester, clean):
    need("fio")
    pytester.makepyfile("""
        def test_x(fsperf):
            r = fsperf.fio(rw="write", bs="1M", size="4M", direct=1)
            assert r.daemon is None and r.mount.backend == "local"
            fsperf.compare(dict(rw="read", bs="1M", size="4M"))
    """)
    result, _, _ = run(pytester, "--fsperf-backend=local")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*fsperf.compare(): needs a backend the plugin mounts*"])
    for args, message in [
        (["--fsperf-backend=nfs"], "*--fsperf-backend=nfs (command line): unknown backend 'nfs'*"),
        (["--fsperf-backend=local", f"--fsperf-mount={pytester.path}"], "*conflicts with --fsperf-mount*"),
        (["--fsperf-mount-options=-o x"], "*needs --fsperf-backend*"),
        (["--fsperf-backend=s3fs", "--fsperf-backend-config=nope.ini"], "*nope.ini (command line): cannot read*"),
    ]:
        result = pytester.runpytest(*args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([message])


def test_rows_that_ran_on_a_mount_of_their_own_are_named_in_the_header(pytester, clean):
    """Issue 62: the header named the session's filesystem (the local disk) while rows of the
    run were measured on mounts the plugin made for their tests; it says so now."""
    need("bindfs")
    need("fio")
    pytester.makepyfile("""
        from pytest_fsperf import fsperf_mount

        def test_local(fsperf):
            fsperf.fio(name="here", rw="write", bs="1M", size="4M")

        @fsperf_mount("bindfs")
        def test_fuse(fsperf):
            fsperf.fio(name="there", rw="write", bs="1M", size="4M")
            fsperf.fio(name="again", rw="write", bs="1M", size="4M")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["filesystem: *", "also ran on: *bindfs (2 rows): mounted by the "
                                 "plugin for their tests*"])


def test_a_daemon_is_started_as_a_service_starts_it(pytester, clean):
    """Issue 72.3: stdin /dev/null, no terminal, a session of its own and a minimal environment
    (never the test run's): a daemon that serves differently when started from a shell is
    measured as deployed. The wrapper says what it met, then is bindfs."""
    need("bindfs")
    need("fio")
    report = pytester.path / "met.txt"
    wrapper = pytester.path / "svcfs"
    wrapper.write_text(f"""#!/bin/sh
read -r pid comm state ppid pgrp sid tty rest < /proc/$$/stat
met=service
[ "$sid" = "$$" ] || met="no session of its own ($sid)"
[ "$tty" = 0 ] || met="a terminal ($tty)"
[ "$(readlink /proc/$$/fd/0)" = /dev/null ] || met="stdin $(readlink /proc/$$/fd/0)"
[ -z "$PYTEST_CURRENT_TEST$FSPERF_FROM_SHELL" ] || met="the test run's environment"
echo "$met $(env | cut -d= -f1 | sort | tr '\\n' ' ')" > {report}
exec bindfs "$@"
""")
    wrapper.chmod(0o755)
    pytester.makefile(".ini", fsperf=f"""
        [backend svcfs]
        command = {wrapper} -f {{options}} {{source}} {{mountpoint}}
        default.source = {{private}}/data
        env.SVCFS_LEVEL = 2
    """)
    pytester.makepyfile("""
        from pytest_fsperf import fsperf_mount

        @fsperf_mount("svcfs")
        def test_x(fsperf):
            fsperf.fio(rw="write", bs="1M", size="4M")
    """)
    import os
    os.environ["FSPERF_FROM_SHELL"] = "1"
    try:
        result, _, _ = run(pytester, "--fsperf-backend-config=fsperf.ini")
    finally:
        del os.environ["FSPERF_FROM_SHELL"]
    result.assert_outcomes(passed=1)
    met = report.read_text().split()
    assert met[0] == "service", met
    assert "SVCFS_LEVEL" in met and "PATH" in met  # the backend's own, and the basics
    assert not any(name.startswith(("PYTEST", "FSPERF")) for name in met), met
