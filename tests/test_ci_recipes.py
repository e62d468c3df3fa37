"""The CI recipes (`fsperf ci github|gitlab`): they pass the checkers, and the GitHub gate
job's own shell steps, run here against two rclone builds of a small repository (the pull
request's slower), fail the job and write a comment that names the regression."""

from __future__ import annotations

import base64
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from pytest_fsperf.store.minio import MINIO_VERSION
from pytest_fsperf.version import __version__
from tests.conftest import need, ours

TIER = "fio"

RECIPES = resources.files("pytest_fsperf").joinpath("ci")


def recipe(name: str) -> Path:
    return Path(str(RECIPES.joinpath(name)))


def tool(name: str) -> str:
    """A checker on PATH, or where .ci/run installs it (~/.cache/fsperf-bin)."""
    found = shutil.which(name) or shutil.which(name, path=os.path.expanduser("~/.cache/fsperf-bin"))
    if not found:
        pytest.skip(f"{name} is not installed (.ci/run installs it)")
    return found


RELEASE = Path(__file__).resolve().parent.parent / ".github" / "workflows" / "release.yml"


@pytest.mark.parametrize("path", [recipe("github.yml"), RELEASE], ids=["recipe", "release"])
def test_the_github_workflows_pass_actionlint(path) -> None:
    config = RELEASE.parent.parent / "actionlint.yaml"  # the recipe's runner labels
    done = subprocess.run([tool("actionlint"), "-no-color", "-config-file", str(config), str(path)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_release_publishes_only_the_tag_of_the_packages_version() -> None:
    """Trusted publishing from a tag: no token stored; a tag that is not the version fails."""
    from pytest_fsperf.version import __version__

    workflow = yaml.safe_load(RELEASE.read_text())
    assert workflow[True] == {"push": {"tags": ["v*"]}} and workflow["permissions"] == {}
    assert workflow["jobs"]["publish"]["permissions"] == {"id-token": "write"}
    assert "secrets." not in RELEASE.read_text()
    step = next(s for s in workflow["jobs"]["build"]["steps"] if s.get("name", "").startswith("The tag"))
    root = RELEASE.parent.parent.parent
    for tag, ok in ((f"v{__version__}", True), ("v99.0.0", False)):
        done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=root, capture_output=True,
                              env={**os.environ, "TAG": tag}, check=False)
        assert (done.returncode == 0) is ok, (tag, done.stdout)


@pytest.mark.parametrize("name, schema", [("github.yml", "vendor.github-workflows"),
                                          ("gitlab-ci.yml", "vendor.gitlab-ci")])
def test_the_recipes_pass_their_schemas(name, schema) -> None:
    done = subprocess.run([tool("check-jsonschema"), "--builtin-schema", schema, str(recipe(name))],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_expression_is_pasted_into_a_script() -> None:
    """${{ }} inside a run: script is a script injection (a branch name, a title); the
    recipes pass every expression through env: instead."""
    workflow = yaml.safe_load(recipe("github.yml").read_text())
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            assert "${{" not in step.get("run", ""), step.get("name")


BUILD = """#!/bin/sh
# the 'filesystem': a build of rclone, held to a bandwidth limit where slow.txt says one
set -eu
mkdir -p out
limit=$(cat slow.txt 2>/dev/null || true)
printf '#!/bin/sh\\nexec %s "$@" %s\\n' "$(command -v rclone)" "${limit:+--bwlimit $limit}" > out/rclone
chmod 755 out/rclone
"""

READ = """
def test_read(fsperf):
    fsperf.fio(rw="read", bs="1M", size="12M", direct=1)
"""

FAKE_GH = """#!/bin/sh
# gh, as the comment step calls it: lists no earlier comment, records every call
echo "$*" >> "$FSPERF_GH_LOG"
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                           *args], capture_output=True, text=True, check=True).stdout.strip()


def a_filesystem(where: Path) -> tuple[Path, str]:
    """A repository whose base commit builds a plain rclone and whose head a slower one."""
    repo = where / "fs"
    (repo / "perf").mkdir(parents=True)
    (repo / "build.sh").write_text(BUILD)
    (repo / "perf" / "test_read.py").write_text(READ)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "slow.txt").write_text("8M\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "the pull request: slower")
    return repo, base


def test_a_forks_code_runs_only_for_the_commit_a_maintainer_labelled() -> None:
    """As found: the `perf` label survived `synchronize` (each later push of the fork's author
    ran as root without another approval), `pull_request` took the workflow from the pull
    request itself, checkout left the token in .git/config for the build, and
    cancel-in-progress also cancelled main's history runs."""
    workflow = yaml.safe_load(recipe("github.yml").read_text())
    on = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert "pull_request" not in on and on["pull_request_target"] == {"types": ["labeled"]}
    jobs = workflow["jobs"]
    assert "label.name == 'perf'" in jobs["approved"]["if"]
    assert "DELETE" in jobs["approved"]["steps"][0]["run"] and "/labels/perf" in \
        jobs["approved"]["steps"][0]["run"]
    assert jobs["gate"]["needs"] == "approved"
    assert workflow["permissions"] == {}
    for name, job in jobs.items():
        self_hosted = "self-hosted" in job["runs-on"]
        writes = {k for k, v in (job.get("permissions") or {}).items() if v == "write"}
        checkout = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout")]
        assert all(s["with"]["persist-credentials"] is False for s in checkout), name
        if self_hosted and name != "history":  # runs the pull request's code
            assert not writes and not any("github.token" in str(s.get("env")) for s in job["steps"]), name
    # the gate's runner is its own, never the history job's (which pushes)
    assert "fsperf-gate" in jobs["gate"]["runs-on"] and "fsperf-history" in jobs["history"]["runs-on"]
    assert "fsperf-gate" not in jobs["history"]["runs-on"]
    posted = "\n".join(s.get("run", "") for s in jobs["comment"]["steps"])
    assert "fsperf comment" in posted and "$FSPERF_OUT/comment.md" not in posted  # made here
    gate_checkout = next(s for s in jobs["gate"]["steps"] if "uses" in s)
    assert "pull_request.head.sha" in gate_checkout["with"]["ref"]  # the commit labelled
    cancel = workflow["concurrency"]["cancel-in-progress"]
    assert cancel == "${{ github.event_name == 'pull_request_target' }}"
    assert "github.run_id" in workflow["concurrency"]["group"]  # main's runs: a group each


def test_the_runner_is_provisioned_and_a_config_secret_becomes_a_private_file(tmp_path) -> None:
    """The recipe installs what the runner needs (FSPERF_PACKAGES), the plugin's own store
    (FSPERF_STORE=local: MinIO at the plugin's pinned version) or the user's endpoint from a
    secret (FSPERF_STORE=config), written 0600 and passed to every pytest run."""
    workflow = yaml.safe_load(recipe("github.yml").read_text())
    install = "Install pytest-fsperf (a virtual environment of its own)"
    for job in ("gate", "history"):
        names = [s.get("name", s.get("uses", "")) for s in workflow["jobs"][job]["steps"]]
        assert names[1].startswith("Root") and names.index(
            "Provision the runner (packages)") < names.index(install)
        assert any(str(n).startswith("The plugin's object store") for n in names)
        runs = "\n".join(s.get("run", "") for s in workflow["jobs"][job]["steps"])
        assert "${FSPERF_CONFIG:-}" in runs
    step = next(s for s in workflow["jobs"]["gate"]["steps"]
                if s.get("name", "").startswith("Your endpoint's backend config"))
    assert step["if"] == "env.FSPERF_STORE == 'config'"
    env_file = tmp_path / "github-env"
    secret = "[fsperf]\nendpoint = https://oss.example\naccess_key = env:OSS_AK\n"
    done = subprocess.run(["bash", "-e", "-c", step["run"]], check=False, capture_output=True,
                          env={**os.environ, "CONFIG": secret, "RUNNER_TEMP": str(tmp_path),
                               "GITHUB_ENV": str(env_file)})
    assert done.returncode == 0, done.stderr
    written = tmp_path / "fsperf-backend.ini"
    assert written.read_text() == secret + "\n" and (written.stat().st_mode & 0o777) == 0o600
    assert env_file.read_text() == f"FSPERF_CONFIG=--fsperf-backend-config={written}\n"


def test_the_plugin_and_the_store_are_pinned_and_the_store_built_once() -> None:
    """As found: a system `pip install` (refused on Debian 12: externally managed) of an
    unpinned package, `setup-go` at whatever Go was newest, MinIO built with it on every run.
    Now: a virtual environment and the package's own version; one Go named once; MinIO kept
    in the CI's cache, saved by main's history job alone and only restored by the gates."""
    github = yaml.safe_load(recipe("github.yml").read_text())
    gitlab = yaml.safe_load(recipe("gitlab-ci.yml").read_text())
    pinned = f"pip install 'pytest-fsperf[history]=={__version__}'"
    assert github["env"]["FSPERF_INSTALL"] == gitlab["variables"]["FSPERF_INSTALL"] == pinned
    assert "python3-venv" in github["env"]["FSPERF_PACKAGES"].split()
    assert "python3-venv" in gitlab["variables"]["FSPERF_PACKAGES"].split()
    assert re.fullmatch(r"1\.\d+\.\d+", github["env"]["FSPERF_GO"])
    assert gitlab["variables"]["FSPERF_GO"] == github["env"]["FSPERF_GO"]
    uses = {job: [st["uses"].split("@")[0] for st in github["jobs"][job]["steps"] if "uses" in st]
            for job in ("gate", "history")}
    assert "actions/cache/restore" in uses["gate"] and "actions/cache/save" not in uses["gate"]
    assert "actions/cache" not in uses["gate"]  # restore-and-save
    assert "actions/cache/save" in uses["history"]
    for job in ("gate", "history"):
        go = next(st for st in github["jobs"][job]["steps"] if "setup-go" in st.get("uses", ""))
        assert go["with"]["go-version"] == "${{ env.FSPERF_GO }}"
        assert "cache-hit != 'true'" in go["if"]
    key = f"fsperf-minio-{MINIO_VERSION}-go{gitlab['variables']['FSPERF_GO']}"  # a literal there
    assert gitlab[".fsperf-runner"]["cache"]["key"] == key
    assert key in [c["key"] for c in gitlab["fsperf-history"]["cache"]]


def test_a_runner_that_is_not_root_stops_at_the_first_step_in_one_line(tmp_path) -> None:
    """As found: provisioning ran under sudo and the gate's pytest did not, so on a non-root
    runner every mount failed (`option allow_other only allowed if 'user_allow_other' is
    set`) after the builds. Each job's first step says it, as the runner's user."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to run a step as nobody")
    github = yaml.safe_load(recipe("github.yml").read_text())
    gitlab = yaml.safe_load(recipe("gitlab-ci.yml").read_text())
    scripts = [github["jobs"][job]["steps"][1]["run"] for job in ("gate", "history")]
    scripts.append(gitlab[".fsperf-runner"]["before_script"][0])
    for script in scripts:
        as_nobody = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                    "bash", "-e", "-c", script], cwd=tmp_path, capture_output=True,
                                   text=True, check=False)
        assert as_nobody.returncode == 1, script
        said = (as_nobody.stdout + as_nobody.stderr).strip()
        assert len(said.splitlines()) == 1 and "as root" in said and "nobody" in said, said
        as_root = subprocess.run(["bash", "-e", "-c", script], capture_output=True, check=False)
        assert as_root.returncode == 0


def test_the_gitlab_token_reaches_only_the_job_that_writes_the_note() -> None:
    jobs = yaml.safe_load(recipe("gitlab-ci.yml").read_text())
    holders = [n for n, j in jobs.items() if isinstance(j, dict) and "FSPERF_GITLAB_TOKEN" in
               str(j.get("script", ""))]
    assert holders == ["fsperf-note"]
    note = jobs["fsperf-note"]
    assert note["environment"]["name"] == "fsperf-note" and note["tags"] == ["$FSPERF_NOTE_TAG"]
    # three runners: the gate's root code never reaches main's history or the token
    assert jobs["fsperf-gate"]["tags"] == ["fsperf-gate"]
    assert jobs["fsperf-history"]["tags"] == ["fsperf-history"]
    assert "fsperf comment" in str(note["script"]) and "comment.md" not in str(note["script"])
    assert "$FSPERF_BUILD" not in str(note["script"]) and "-m pytest" not in str(note["script"])
    assert jobs["fsperf-gate"]["rules"][0]["when"] == "manual"
    assert jobs["fsperf-history"]["interruptible"] is False


EXPR = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")


def run_steps(job: dict[str, Any], workflow_env: dict[str, str], context: dict[str, str],
              repo: Path, temp: Path) -> list[tuple[str, int]]:
    """Each `run:` step of the job as the runner runs it (bash -e, in the checkout), its
    ${{ }} expressions from `context` and the steps' outputs; (name, exit status) each."""
    outputs: dict[str, dict[str, str]] = {}
    done = []
    path_file = temp / "github-path"
    for step in job["steps"]:
        if "run" not in step:
            continue  # actions/checkout (the repository is checked out), upload-artifact, cache
        if not wanted(str(step.get("if", "always()")), workflow_env, outputs):
            continue  # a step for another setting (FSPERF_STORE=config), a cache hit
        out_file = temp / f"output-{len(done)}"
        out_file.write_text("")

        def value(m: re.Match[str]) -> str:
            expr = m.group(1)
            if expr.startswith("steps."):
                _, sid, _, key = expr.split(".")
                return outputs.get(sid, {}).get(key, "")
            return context[expr]  # an expression this test does not know fails it: add it

        added = path_file.read_text().split() if path_file.exists() else []
        base = {**os.environ, **workflow_env}
        env = {**base, "GITHUB_OUTPUT": str(out_file),  # GITHUB_PATH's lines first, the last added first
               "PATH": ":".join([*reversed(added), base["PATH"]]),
               "GITHUB_PATH": str(path_file), "GITHUB_ENV": str(temp / "github-env"),
               **{k: EXPR.sub(value, str(v)) for k, v in (step.get("env") or {}).items()}}
        status = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=repo, env=env,
                                check=False).returncode
        if "id" in step:
            outputs[step["id"]] = dict(line.split("=", 1) for line in out_file.read_text().splitlines())
        done.append((step["name"], status))
    return done


def wanted(condition: str, workflow_env: dict[str, str], outputs: dict[str, dict[str, str]]) -> bool:
    """A step's `if:` as the runner reads it, for the forms the recipes use (&& of always(),
    env.X == 'V', steps.S.outputs.K != 'V'); any other form fails the test: add it here."""
    for term in condition.split(" && "):
        if term == "always()":
            continue
        if m := re.fullmatch(r"env\.(\w+) == '(.*)'", term):
            ok = workflow_env.get(m.group(1)) == m.group(2)
        elif m := re.fullmatch(r"steps\.(\w+)\.outputs\.([\w-]+) != '(.*)'", term):
            ok = outputs.get(m.group(1), {}).get(m.group(2), "") != m.group(3)
        else:
            raise AssertionError(f"a step condition this test does not read: {condition}")
        if not ok:
            return False
    return True


@pytest.mark.fuse
def test_the_gitlab_gate_jobs_script_fails_a_slower_merge_request(tmp_path) -> None:
    """The GitLab gate job as its runner runs it (before_script, then script, each line
    stopping the job where it fails) in a merge request's checkout: MinIO as the cache left
    it, the virtual environment made beforehand (here over this Python's packages); the
    slower change fails the job and its note names the regression."""
    need("rclone")
    need("fio")
    repo, base = a_filesystem(tmp_path)
    jobs = yaml.safe_load(recipe("gitlab-ci.yml").read_text())
    job = jobs["fsperf-gate"]
    lines = [*jobs[job["extends"]]["before_script"], *job["script"]]
    bin_dir = repo / ".fsperf-bin"  # what the cache restores: MinIO and the versions it was built at
    bin_dir.mkdir()
    minio = shutil.which("minio") or shutil.which("minio", path=os.path.expanduser("~/.cache/fsperf-bin"))
    if not minio:
        pytest.skip("MinIO is not installed")
    (bin_dir / "minio").symlink_to(minio)
    variables = {k: str(v) for k, v in jobs["variables"].items()}
    (bin_dir / "minio.version").write_text(f"{MINIO_VERSION} go{variables['FSPERF_GO']}\n")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(repo / ".fsperf-venv")], check=True)
    env = {**os.environ, **variables, "FSPERF_INSTALL": "true", "FSPERF_PACKAGES": "",
           "FSPERF_BUILD": "sh build.sh", "FSPERF_BINARY": "out/rclone", "FSPERF_BACKEND": "rclone",
           "FSPERF_TESTS": "perf/test_read.py -p no:cacheprovider",
           "FSPERF_ARGS": "--fsperf-ab-max-rounds=6 --fsperf-settle=off --fsperf-profile=off",
           "CI_PROJECT_DIR": str(repo), "CI_MERGE_REQUEST_DIFF_BASE_SHA": base,
           "CI_JOB_URL": "https://gitlab.example/acme/fs/-/jobs/7"}
    done = subprocess.run(["bash", "-e", "-c", "\n".join(lines)], cwd=repo, env=env,
                          capture_output=True, text=True, check=False)
    said = done.stdout + done.stderr
    assert done.returncode != 0, said  # the last line: pytest and fsperf comment both 0, or fail
    assert re.search(r"pytest ended with 1; fsperf comment with 1", said), said[-3000:]
    note = (repo / "fsperf-out" / "comment.md").read_text()
    row = next(line for line in note.splitlines() if line.startswith("| test_read read |"))
    assert "**B worse**" in row and "gitlab.example/acme/fs/-/jobs/7" in note, note
    assert ours() == ([], [])


class GitServer(http.server.BaseHTTPRequestHandler):
    """A private repository's smart HTTP (git http-backend) that answers 401 to any request
    without the token's Basic credentials, as a private GitHub repository does."""
    root = ""
    token = ""
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.serve()

    def do_POST(self) -> None:
        self.serve()

    def serve(self) -> None:
        basic = base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
        if self.headers.get("Authorization", "") != f"basic {basic}":
            self.seen.append(f"401 {self.path}")
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="repo"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.seen.append(f"200 {self.path}")
        path, _, query = self.path.partition("?")
        body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
        cgi = subprocess.run(["git", "http-backend"], input=body, capture_output=True, check=False, env={
            "GIT_PROJECT_ROOT": self.root, "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
            "QUERY_STRING": query, "REQUEST_METHOD": self.command, "REMOTE_USER": "ci",
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)), "PATH": os.environ["PATH"]})
        head, _, rest = cgi.stdout.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        status = next((int(x.split()[1]) for x in lines if x.startswith("Status:")), 200)
        self.send_response(status)
        for line in lines:
            if ":" in line and not line.startswith("Status:"):
                self.send_header(*(x.strip() for x in line.split(":", 1)))
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.fuse
def test_the_history_jobs_steps_keep_mains_runs_on_a_branch(tmp_path) -> None:
    """Two pushes to main: main measured alone (its build first on PATH), each run saved with
    its commit on the branch fsperf-runs of a private origin (it answers nothing without the
    job's token), the second beside the first; change points over the runs kept. As found:
    the history job fetched without credentials, a failed fetch read as 'no branch yet', and
    the second run's push was refused."""
    need("rclone")
    need("fio")
    need("git")
    repo, _ = a_filesystem(tmp_path)
    origin = tmp_path / "git" / "fs.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    git(origin, "config", "http.receivepack", "true")
    git(repo, "push", "-q", str(origin), "main")
    GitServer.root, GitServer.token, GitServer.seen = str(origin.parent), "t0ken", []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), GitServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    git(repo, "remote", "add", "origin", f"{url}/fs.git")  # as checkout leaves it: no credentials
    (repo / "slow.txt").unlink()  # main's build: plain rclone, quick
    workflow = yaml.safe_load(recipe("github.yml").read_text())
    history = workflow["jobs"]["history"]
    try:
        for run in (1, 2):
            temp = tmp_path / f"runner-temp-{run}"
            temp.mkdir()
            venv(temp)
            summary = tmp_path / "summary.md"
            git(repo, "commit", "-q", "--allow-empty", "-m", f"main {run}")
            sha = git(repo, "rev-parse", "HEAD")
            env = {**{k: str(v) for k, v in workflow["env"].items()},
                   "FSPERF_INSTALL": "true", "FSPERF_PACKAGES": "", "FSPERF_BUILD": "sh build.sh",
                   "FSPERF_BINARY": "out/rclone", "FSPERF_BACKEND": "rclone",
                   "FSPERF_TESTS": "perf/test_read.py -p no:cacheprovider",
                   "FSPERF_ARGS": "--fsperf-settle=off", "RUNNER_TEMP": str(temp),
                   "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_SHA": sha,
                   "GITHUB_SERVER_URL": url}
            steps = dict(run_steps(history, env, {"github.token": "t0ken"}, repo, temp))
            assert set(steps.values()) == {0}, steps
            assert not (temp / "fsperf-runs").exists()  # its worktree removed
        saved = git(origin, "ls-tree", "-r", "--name-only", "fsperf-runs").splitlines()
        assert len(saved) == 2 and all(n.startswith("runs/main-") for n in saved), saved
        assert git(origin, "rev-list", "--count", "fsperf-runs") == "2"  # one line of history
        assert (repo / "fsperf-out" / "history.txt").read_text() in summary.read_text()
        assert "t0ken" not in git(repo, "config", "--list")  # never kept in .git/config
        assert any(x.startswith("200 ") and "receive-pack" in x for x in GitServer.seen)
        GitServer.token = "another"  # a token the origin refuses: the job says so, never starts anew
        temp = tmp_path / "runner-temp-3"
        temp.mkdir()
        fetch = next(st for st in history["steps"] if st.get("name") == "Check out the saved runs")
        done = dict(run_steps({"steps": [fetch]}, env, {"github.token": "t0ken"}, repo, temp))
        assert done["Check out the saved runs"] != 0
    finally:
        server.shutdown()
    assert ours() == ([], [])


def venv(temp: Path) -> None:
    """The job's virtual environment made beforehand, over this Python's packages (the recipe
    makes one where none is, and installs with FSPERF_INSTALL; here the plugin is installed)."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(temp / "fsperf-venv")], check=True)


@pytest.mark.fio
def test_the_note_job_runs_no_file_of_the_merge_request(tmp_path) -> None:
    """As found: fsperf-note checked the merge request out and ran `python3 -m venv` and
    `python3 -c 'import json ...'` with the current directory first on the import path: a
    top-level venv/__init__.py or json.py of the merge request printed FSPERF_GITLAB_TOKEN.
    The job now checks nothing out (GIT_STRATEGY: none), works in a directory of its own,
    and runs Python isolated: run as its runner runs it, in a build directory holding
    such files (an earlier job's checkout), the token reaches none of them."""
    jobs = yaml.safe_load(recipe("gitlab-ci.yml").read_text())
    note = jobs["fsperf-note"]
    assert note["variables"]["GIT_STRATEGY"] == "none"
    build = tmp_path / "build"
    (build / "venv").mkdir(parents=True)
    (build / "fsperf-out").mkdir()
    shutil.copy(Path(__file__).parent / "data" / "canned-results.json",
                build / "fsperf-out" / "results.json")
    leak = "import os, sys\nsys.stderr.write('LEAK ' + os.environ.get('FSPERF_GITLAB_TOKEN', '') + '\\n')\n"
    for planted in ("json.py", "venv/__init__.py", "venv/__main__.py", "encodings.py"):
        (build / planted).write_text(leak)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "fsperf").write_text(f"#!/bin/sh\nexec {sys.executable} -m pytest_fsperf \"$@\"\n")
    (tools / "curl").write_text(  # the API: who am I, no earlier note, then the note posted
        "#!/bin/sh\ncat > /dev/null\ncase \"$*\" in\n  *\"/user\"*) echo '{\"id\": 5}' ;;\n"
        f"  *body@*) echo posted >> {tmp_path / 'posted'} ;;\n  *) echo '[]' ;;\nesac\n")
    for tool in tools.iterdir():
        tool.chmod(0o755)
    variables = {k: str(v) for k, v in jobs["variables"].items()}
    env = {**os.environ, **variables, "FSPERF_INSTALL": "true", "FSPERF_GITLAB_TOKEN": "glpat-SECRET",
           "PATH": f"{tools}:{os.environ['PATH']}", "CI_API_V4_URL": "https://gitlab.example/api/v4",
           "CI_PROJECT_ID": "1", "CI_MERGE_REQUEST_IID": "2", "CI_BUILDS_DIR": str(tmp_path),
           "CI_PIPELINE_URL": "https://gitlab.example/p/1"}
    done = subprocess.run(["bash", "-e", "-c", "\n".join(note["script"])], cwd=build, env=env,
                          capture_output=True, text=True, check=False, timeout=300)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-3000:]
    assert "LEAK" not in said and "SECRET" not in said
    assert (tmp_path / "posted").read_text() == "posted\n"  # the note was written, once


def test_the_jobs_that_hold_a_writing_token_check_nothing_out_and_run_python_isolated() -> None:
    """The family of the note job's hole: wherever a token that writes is held, no file a
    pull or merge request wrote is checked out, and every Python runs isolated (-I)."""
    github = yaml.safe_load(recipe("github.yml").read_text())
    comment = github["jobs"]["comment"]
    assert not [s for s in comment["steps"] if "checkout" in str(s.get("uses", ""))]
    gitlab = yaml.safe_load(recipe("gitlab-ci.yml").read_text())
    for script in ("\n".join(str(s.get("run", "")) for s in comment["steps"]),
                   "\n".join(gitlab["fsperf-note"]["script"])):
        calls = re.findall(r"python3( -\S+)*", script)
        assert calls and all("-I" in c for c in re.findall(r"python3(?: -\S+)+|python3", script)), script


def test_a_repository_that_keeps_files_in_lfs_is_checked_out_with_them_base_included() -> None:
    """Issue 74.4, as found: the workflow checked out without Git LFS where ci.md says an
    ossfs 2.0 checkout needs it (its PhotonLibOS is kept in LFS)."""
    gh = yaml.safe_load(recipe("github.yml").read_text())
    assert gh["env"]["FSPERF_LFS"] == "false"  # set true where the repository uses LFS
    checkouts = [s for job in gh["jobs"].values() for s in job.get("steps", ())
                 if str(s.get("uses", "")).startswith("actions/checkout")]
    assert checkouts and all(s["with"]["lfs"] == "${{ env.FSPERF_LFS == 'true' }}" for s in checkouts)
    for text in (recipe("github.yml").read_text(), recipe("gitlab-ci.yml").read_text()):
        assert 'if [ "$FSPERF_LFS" = true ]; then git -C "$' in text  # the base's worktree too
