"""The `fsperf` command, run as a newcomer runs it: `python -m pytest_fsperf ...` in an empty
directory, on the embedded default, on an existing bindfs mount, on an rclone mount the
plugin makes; exit codes CI can act on; one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import need, ours

TIER = "fuse"  # every test here, unless one says otherwise (conftest.py)


def fsperf(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_fsperf", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=timeout, check=False)


def test_help_says_what_each_command_does_and_the_exit_codes(tmp_path):
    top = fsperf(tmp_path, "--help")
    assert top.returncode == 0
    for word in ("bench", "compare-runs", "baselines", "exit codes", "4  a usage error"):
        assert word in top.stdout
    bench = fsperf(tmp_path, "bench", "--help")
    assert bench.returncode == 0
    for word in ("MOUNT", "--backend", "--scale", "--baseline", "--html", "ossfs2", "ossfs1",
                 "fluid", "juicefs_bench", "CPU%", "0  every test passed"):
        assert word in bench.stdout, word


@pytest.mark.parametrize(("args", "needle"), [
    (("bench", "--suite", "nope"), "argument --suite: invalid choice: 'nope'"),
    (("bench", "/no/such/mount"), "MOUNT '/no/such/mount' is not a directory"),
    (("bench", "--scale", "200"), "--scale=200 must be above 0 and at most 100"),
    (("bench", "--backend", "bindfs", "--mount-options", "-o allow_other='x"),
     "--fsperf-mount-options=-o allow_other='x (command line): No closing quotation"),
    (("bench", "--gate"), "--gate needs --baseline NAME"),
    (("bench", "--scale", "0.001", "--baseline", "nope"), "unknown baseline 'nope'"),
    (("compare-runs", "a", "b"), "no saved run 'a'"),
    (("baselines", "nope"), "unknown baseline 'nope' (shipped: "),
    (("frobnicate",), "invalid choice: 'frobnicate'"),
])
def test_usage_errors_are_one_line_and_exit_4(tmp_path, args, needle):
    r = fsperf(tmp_path, *args)
    assert r.returncode == 4, r.stdout + r.stderr
    assert needle in r.stdout + r.stderr
    assert "Traceback" not in r.stderr


def test_bench_on_the_embedded_default_prints_the_figures_and_what_was_measured(tmp_path):
    need("fio")
    r = fsperf(tmp_path, "bench", "--scale", "0.001", "-k", "seq_write_1t or seq_read_1t",
               "--json", "r.json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "pytest --pyargs pytest_fsperf.suites.ossfs2" in r.stderr  # the command it ran
    assert "no MOUNT and no --backend" in r.stderr
    for line in ("filesystem:", "the embedded default", "machine:", "date:",
                 "scale:          0.001: sizes and file counts as written times 0.001", "seq_read_1t", "2 passed"):
        assert line in r.stdout, line
    doc = json.loads((tmp_path / "r.json").read_text())
    assert sorted(x["name"] for x in doc["results"]) == ["seq_read_1t", "seq_write_1t"]
    # As found: ids "::test_ossfs2[...]" with an empty file part (the suite is outside the
    # rootdir); the module's import name stands in for it
    assert {x["test"] for x in doc["results"]} == {
        "pytest_fsperf.suites.ossfs2::test_ossfs2[seq_write_1t]",
        "pytest_fsperf.suites.ossfs2::test_ossfs2[seq_read_1t]"}
    assert doc["environment"]["date"].endswith("UTC")
    assert not (tmp_path / ".pytest_cache").exists()  # nothing of ours left in the user's cwd


def test_bench_on_an_existing_bindfs_mount_names_its_daemon(tmp_path, bindfs):
    m = bindfs()
    r = fsperf(tmp_path, "bench", str(m.point), "--scale", "0.001", "-k", "seq_read_1t",
               "--suite", "ossfs2", "--html", "r.html")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"filesystem:     fuse at {m.point}" in r.stdout or f"fuse.bindfs at {m.point}" in r.stdout
    assert "backend:        an existing mount" in r.stdout
    assert f"(PID {m.pid})" in r.stdout
    page = (tmp_path / "r.html").read_text()
    assert f"(PID {m.pid})" in page and "scale" in page


def test_bench_on_rclone_without_a_bucket_says_it_measured_a_local_directory(tmp_path):
    """rclone given no bucket mounts a local directory: the header says so. Its write left
    a file rclone was still uploading, and removing the work dir failed with EIO (seen
    with this command); the plugin now waits for rclone's uploads and leaves nothing."""
    need("rclone")
    need("fio")
    r = fsperf(tmp_path, "bench", "--backend", "rclone", "--scale", "0.001", "-k",
               "seq_write_1t")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "backend:        rclone, mounted by the plugin" in r.stdout
    assert "a local directory, not object storage: rclone was given no bucket" in r.stdout
    assert "could not remove" not in r.stdout
    assert ours() == ([], [])


def test_a_suite_with_no_documented_figures_says_so(tmp_path):
    need("fio")
    r = fsperf(tmp_path, "bench", "--suite", "ossfs1", "--scale", "0.001", "-k",
               "sysbench_seqrd", "--baseline", "ossfs-1.91.8")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "baseline ossfs-1.91.8" in r.stdout
    assert "no documented figure, not compared: sysbench_seqrd (ossfs-1.91.8)" in r.stdout
    assert "documented at full scale on ecs.g9i.48xlarge: 192 vCPU" in r.stdout


def test_a_saved_baseline_of_another_scale_is_not_compared(tmp_path):
    need("fio")
    saved = fsperf(tmp_path, "bench", "--scale", "0.001", "-k", "seq_write_1t", "--",
                   "--fsperf-save-baseline=mine")
    assert saved.returncode == 0, saved.stdout + saved.stderr
    r = fsperf(tmp_path, "bench", "--scale", "0.002", "-k", "seq_write_1t", "--baseline", "mine",
               "--gate")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "measured / saved" in r.stdout and "documented" not in r.stdout.split("baseline mine")[1]
    assert "saved at scale 0.001, measured at 0.002: not compared" in r.stdout


def _run(rounds: list[float], canary: float = 1.0) -> dict[str, object]:
    fingerprint = {"workload": "seq_read_1t", "scale": 0.01, "fs": "fuse.x", "mount_options": "m",
                   "kernel": "k", "machine": "m"}
    return {"schema": "pytest-fsperf/1", "results": [{"test": "t.py::test_read", "name": "seq_read_1t",
                         "total": {"bw_bytes": rounds[0], "io_bytes": 1, "ops_per_second": None},
                         "rounds": [{"bw": v, "ops": None} for v in rounds],
                         "fingerprint": fingerprint, "canary": [canary] * 3}]}


@pytest.mark.fio
@pytest.mark.parametrize(("new", "code", "outcome"), [
    ([80e6, 81e6, 79e6, 80e6, 82e6], 1, "regression"),
    ([100e6, 101e6, 99e6, 100e6, 102e6], 0, "pass"),
])
def test_compare_runs_judges_every_workload_and_exits_for_ci(tmp_path, new, code, outcome):
    runs_dir = tmp_path / ".fsperf" / "runs"
    runs_dir.mkdir(parents=True)
    (runs_dir / "base.json").write_text(json.dumps(_run([100e6, 101e6, 99e6, 100e6, 102e6])))
    (runs_dir / "new.json").write_text(json.dumps(_run(new)))
    r = fsperf(tmp_path, "compare-runs", "base", "new")
    assert r.returncode == code, r.stdout + r.stderr
    assert "t.py::test_read::seq_read_1t" in r.stdout and outcome in r.stdout
    assert "95% interval" in r.stdout and "1 workload:" in r.stdout
    by_path = fsperf(tmp_path, "compare-runs", str(runs_dir / "base.json"), str(runs_dir / "new.json"))
    assert by_path.returncode == code


@pytest.mark.fio
def test_compare_runs_says_when_the_machine_changed(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps(_run([100e6] * 5, canary=1.0)))
    (tmp_path / "b.json").write_text(json.dumps(_run([80e6] * 5, canary=0.8)))
    r = fsperf(tmp_path, "compare-runs", "./a.json", "./b.json")
    assert r.returncode == 1
    assert "machine changed" in r.stdout and "canary ran 0.800x as fast" in r.stderr
    warn = fsperf(tmp_path, "compare-runs", "./a.json", "./b.json", "--inconclusive", "warn")
    assert warn.returncode == 0


@pytest.mark.fio
def test_baselines_lists_the_shipped_ones_and_shows_one(tmp_path):
    r = fsperf(tmp_path, "baselines")
    assert r.returncode == 0
    assert "ossfs-2.0.4" in r.stdout and "fluid-zos-mem-cloud" in r.stdout
    one = fsperf(tmp_path, "baselines", "fluid-zos-mem-cloud")
    assert one.returncode == 0
    assert "193 MB/s" in one.stdout and "193MB/s-193MB/s" not in one.stdout
    assert "per job" in one.stdout and "conditions: " in one.stdout
    assert "ioengine psync" in one.stdout and "limits read service 2C4G" in one.stdout
    assert "the document's command: fio --name=seqread-single" in one.stdout
    assert "compared only at --fsperf-scale=1" in one.stdout
    small = fsperf(tmp_path, "baselines", "ossfs-2.0.4")
    assert "smallfile_read_128t: 128 threads read" in small.stdout
    assert "differs: the page cache is dropped and the mount restarted" in small.stdout


@pytest.mark.parametrize("args", [(), ("bench",), ("compare-runs",), ("baselines",)])
def test_every_help_renders(tmp_path, args):
    """As found: `pytest --help` crashed on the bare % of --fsperf-tolerance's help, and
    `fsperf bench --help` printed CPU%%."""
    r = fsperf(tmp_path, *args, "--help")
    assert r.returncode == 0, r.stderr
    assert "%%" not in r.stdout and "Traceback" not in r.stderr


def test_pytest_help_renders_every_fsperf_option(pytester):
    result = pytester.runpytest("--help")
    assert result.ret == 0
    out = result.stdout.str()
    assert "--fsperf-tolerance=PERCENT" in out and "default 10%;" in out and "%%" not in out
    from pytest_fsperf.options.table import OPTIONS
    assert all(opt.flag in out for opt in OPTIONS)


@pytest.mark.fio
def test_a_single_round_compare_decides_nothing(tmp_path):
    """As found: one round against one run said `pass 1.012x` with no interval, while the
    README says a single round can never show significance."""
    (tmp_path / "a.json").write_text(json.dumps(_run([100e6])))
    (tmp_path / "b.json").write_text(json.dumps(_run([101.2e6])))
    r = fsperf(tmp_path, "compare-runs", "./a.json", "./b.json")
    assert r.returncode == 1, r.stdout
    line = next(ln for ln in r.stdout.splitlines() if "seq_read_1t" in ln)
    assert line.split()[-1] == "inconclusive" and " - " in line and "1.012x" in line
    assert "one round cannot show a difference" in r.stderr
    assert fsperf(tmp_path, "compare-runs", "./a.json", "./b.json",
                  "--inconclusive=warn").returncode == 0


@pytest.mark.fio
def test_baselines_lists_saved_ones_too(tmp_path):
    saved = tmp_path / ".fsperf" / "baselines"
    saved.mkdir(parents=True)
    (saved / "mine.json").write_text(json.dumps({"scale": 0.01, "entries": {
        "seq_read_1t": {"bw": {"printed": "1 GB/s", "value": 1e9}}}}))
    r = fsperf(tmp_path, "baselines")
    assert r.returncode == 0
    assert any(ln.split()[:5] == ["mine", "saved", "at", "scale", "0.01"]
               for ln in r.stdout.splitlines()), r.stdout


@pytest.mark.integration
def test_a_non_editable_install_runs_without_an_assertion_rewrite_warning(tmp_path):
    """As found: a fresh non-editable install printed PytestAssertRewriteWarning on every
    `fsperf bench`: the command imports the package before pytest marks it for rewriting."""
    need("fio")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    root = Path(__file__).resolve().parent.parent
    installed = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(root)],
                               capture_output=True, text=True, timeout=600, check=False)
    if installed.returncode != 0:
        pytest.skip(f"could not install into a venv: {installed.stderr.strip()[-200:]}")
    work = tmp_path / "work"
    work.mkdir()
    r = subprocess.run([str(venv / "bin" / "fsperf"), "bench", "--scale", "0.001", "-k",
                        "seq_write_1t"], cwd=work, capture_output=True, text=True, timeout=300,
                       check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PytestAssertRewriteWarning" not in r.stdout + r.stderr


@pytest.mark.fio
@pytest.mark.parametrize("autoload", ["", "1"])
def test_python_m_pytest_help_from_the_repository_works(autoload):
    """The first thing a new user types, from the checkout, with its conftest and config. As
    found: with PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 (an installed plugin's entry point not
    loaded) the help had no word of the plugin, exit 0: the conftest took the entry point's
    existence for the plugin loaded."""
    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
    if autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = autoload
    r = subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=root, capture_output=True,
                       text=True, timeout=120, check=False, env=env)
    assert r.returncode == 0, r.stderr
    assert "filesystem performance (pytest-fsperf)" in r.stdout
    assert "--fsperf-tolerance=PERCENT" in r.stdout
    assert "Traceback (most recent call last)" not in r.stdout + r.stderr


@pytest.mark.integration
def test_python_m_pytest_help_in_a_checkout_not_installed_yet_shows_the_plugin(tmp_path):
    """A new user's checkout before `pip install`: pytest's help had no word of the plugin
    (exit 0). The checkout's conftest loads it from there, or says what to install."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    got = subprocess.run([*pip, "pytest>=8"], capture_output=True, text=True, timeout=600,
                         check=False)
    if got.returncode != 0:
        pytest.skip(f"could not install into a venv: {got.stderr.strip()[-200:]}")
    # the checkout as cloned: no build metadata (an installed checkout's egg-info would
    # register the plugin by its entry point)
    repo, root = Path(__file__).resolve().parent.parent, tmp_path / "checkout"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(repo / "pytest_fsperf", root / "pytest_fsperf", ignore=skip)
    (root / "tests").mkdir()
    for name in ("conftest.py", "pyproject.toml", "tests/conftest.py", "tests/__init__.py"):
        shutil.copy(repo / name, root / name)

    # a new user's shell: nothing on PYTHONPATH (a checkout there with build metadata would
    # register the plugin by its entry point) and no pytest settings of this session
    env = {k: v for k, v in os.environ.items()
           if k != "PYTHONPATH" and not k.startswith("PYTEST_")}

    def help_(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", *args], cwd=root,
                              env=env, capture_output=True, text=True, timeout=120, check=False)

    said = ("fsperf: pytest-fsperf is not installed in this Python, and the checkout's copy "
            "needs psutil, prometheus_client, dacite, jsonschema: pip install -e '.[test]'")
    r = help_("--help")  # without the plugin's dependencies: its last line says what to install
    assert r.returncode == 0
    assert "filesystem performance (pytest-fsperf)" not in r.stdout
    assert r.stdout.splitlines()[-1] == said, r.stdout[-600:]  # was: no word of it (exit 0)
    r = help_("-q")  # a run stops on that line, not on tests/conftest.py's import of psutil
    assert r.returncode == pytest.ExitCode.USAGE_ERROR
    assert said.removeprefix("fsperf: ") in r.stdout + r.stderr and "psutil'" not in r.stdout
    subprocess.run([*pip, "psutil", "prometheus_client", "dacite", "jsonschema"], check=True,
                   timeout=600)
    r = help_("--help")
    assert r.returncode == 0, r.stderr
    assert "filesystem performance (pytest-fsperf)" in r.stdout
    assert "--fsperf-tolerance=PERCENT" in r.stdout
    assert "Warning" not in r.stdout.split("to see available fixtures")[-1], r.stdout[-600:]
    r = help_("-q")  # without the test extras: one line, not a traceback per test file
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout[-600:]
    assert ("ERROR: the plugin's own tests need its test extras (hypothesis, fusepy "
            "missing): pip install -e '.[test]'") in r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr


def test_help_and_markers_check_nothing_and_touch_nothing(pytester, monkeypatch):
    """As found: a bad fsperf value in the ini file made `pytest --help` exit 4 with only
    the error, and every `pytest --help` swept what dead sessions left (unmounting, killing)
    and started a watchdog. A real run still refuses the value."""
    from pytest_fsperf.infra import leftovers
    called: list[str] = []
    monkeypatch.setattr(leftovers, "sweep", lambda *a, **k: called.append("sweep") or [])
    monkeypatch.setattr(leftovers, "start", lambda *a, **k: called.append("start"))
    pytester.makeini("[pytest]\nfsperf_rounds = many\n")
    pytester.makepyfile("def test_x(): pass")
    r = pytester.runpytest("--help")
    assert r.ret == 0 and "--fsperf-tolerance=PERCENT" in r.stdout.str()
    r = pytester.runpytest("--markers")
    assert r.ret == 0
    r.stdout.fnmatch_lines(["@pytest.mark.fsperf(*"])
    assert called == []
    r = pytester.runpytest()
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["*fsperf_rounds = many (ini file *): not a whole number*"])


def test_bench_passes_mount_options_and_saves_a_baseline(tmp_path):
    """As asked: fsperf bench takes the common flags itself (--mount-options, --backend-config,
    --save-baseline, --candidate) rather than only after `--`."""
    need("bindfs")
    need("fio")
    r = fsperf(tmp_path, "bench", "--backend", "bindfs", "--mount-options=--multithreaded",
               "--scale", "0.001", "-k", "seq_write_1t", "--save-baseline", "mine",
               "--json", "r.json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "--fsperf-mount-options=--multithreaded" in r.stderr
    assert "--fsperf-save-baseline=mine" in r.stderr
    (row,) = json.loads((tmp_path / "r.json").read_text())["results"]
    assert "--multithreaded" in row["mount"]["command"]
    assert list((tmp_path / ".fsperf").rglob("mine*")), "the baseline was not saved"


def test_bench_puts_rclone_over_the_plugins_minio_when_asked(tmp_path, minio):
    """As found: `fsperf bench --backend rclone` given no bucket measured a local directory;
    --store minio puts it over the plugin's own MinIO, as the marker's config="fsperf_s3"."""
    need("rclone")
    need("fio")
    r = fsperf(tmp_path, "bench", "--backend", "rclone", "--store", "minio", "--scale", "0.001",
               "-k", "seq_write_1t", "--json", "r.json")
    assert r.returncode == 0, r.stdout + r.stderr
    (row,) = json.loads((tmp_path / "r.json").read_text())["results"]
    assert any(str(w).startswith("fsperf:") for w in row["mount"]["command"]), row["mount"]
    assert row["requests"] and row["requests"]["total"] >= 1  # the store saw the write
