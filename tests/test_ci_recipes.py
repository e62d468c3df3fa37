"""The CI recipes (`fsperf ci github|gitlab`): they pass the checkers, and the GitHub gate
job's own shell steps, run here against two rclone builds of a small repository (the pull
request's slower), fail the job and write a comment that names the regression."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_fsperf.report import comment
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
    fsperf.fio(rw="read", bs="1M", size="24M", direct=1)
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
    for job in ("gate", "history"):
        names = [s.get("name", s.get("uses", "")) for s in workflow["jobs"][job]["steps"]]
        assert names.index("Provision the runner (packages)") < names.index("Install pytest-fsperf")
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
    for step in job["steps"]:
        if "run" not in step:
            continue  # actions/checkout (the repository is checked out), upload-artifact
        wanted = re.fullmatch(r"env\.(\w+) == '(.*)'", str(step.get("if", "")))
        if wanted and {**workflow_env}.get(wanted.group(1)) != wanted.group(2):
            continue  # a step for another setting (FSPERF_STORE=config)
        out_file = temp / f"output-{len(done)}"
        out_file.write_text("")

        def value(m: re.Match[str]) -> str:
            expr = m.group(1)
            if expr.startswith("steps."):
                _, sid, _, key = expr.split(".")
                return outputs.get(sid, {}).get(key, "")
            return context[expr]  # an expression this test does not know fails it: add it

        env = {**os.environ, **workflow_env, "GITHUB_OUTPUT": str(out_file),
               "GITHUB_PATH": str(temp / "github-path"), "GITHUB_ENV": str(temp / "github-env"),
               **{k: EXPR.sub(value, str(v)) for k, v in (step.get("env") or {}).items()}}
        status = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=repo, env=env,
                                check=False).returncode
        if "id" in step:
            outputs[step["id"]] = dict(line.split("=", 1) for line in out_file.read_text().splitlines())
        done.append((step["name"], status))
    return done


@pytest.mark.fuse
def test_the_gate_jobs_steps_fail_a_slower_pull_request_and_comment_on_it(tmp_path) -> None:
    need("rclone")
    need("fio")
    repo, base = a_filesystem(tmp_path)
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(FAKE_GH)
    (bin_dir / "gh").chmod(0o755)
    gh_log = tmp_path / "gh.log"
    summary = tmp_path / "summary.md"
    workflow = yaml.safe_load(recipe("github.yml").read_text())
    env = {**{k: str(v) for k, v in workflow["env"].items()},
           "FSPERF_INSTALL": "true", "FSPERF_PACKAGES": "",  # installed here already
           "FSPERF_BUILD": "sh build.sh", "FSPERF_BINARY": "out/rclone", "FSPERF_BACKEND": "rclone",
           "FSPERF_TESTS": "perf/test_read.py -p no:cacheprovider",
           "FSPERF_ARGS": "--fsperf-ab-max-rounds=6 --fsperf-settle=off --fsperf-profile=off",
           "FSPERF_INCONCLUSIVE": "fail",
           "RUNNER_TEMP": str(temp), "GITHUB_STEP_SUMMARY": str(summary),
           "GITHUB_REPOSITORY": "acme/fs", "FSPERF_GH_LOG": str(gh_log),
           "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    context = {"github.event.pull_request.base.sha || github.event.repository.default_branch": base,
               "github.server_url": "https://github.example", "github.repository": "acme/fs",
               "github.run_id": "7", "github.token": "not-a-real-token",
               "github.event.pull_request.number": "12"}
    context["github.event.pull_request.head.sha || github.sha"] = "unused: checked out here"
    steps = dict(run_steps(workflow["jobs"]["gate"], env, context, repo, temp))
    # the comment job: the gate's artifact (here, the same folder), the token, nothing built
    steps.update(run_steps(workflow["jobs"]["comment"], env, context, repo, temp))

    assert steps["Fail on the decision"] != 0, steps  # the job fails
    assert steps["Write the decision"] == 0 and steps["Comment on the pull request (one comment, updated in place)"] == 0
    body = (temp / "comment.md").read_text()  # written by the comment job from the results
    assert body == (repo / "fsperf-out" / "comment.md").read_text()  # as the gate said it
    assert body.startswith(comment.MARKER)
    assert body.splitlines()[1].startswith("### pytest-fsperf: FAIL"), body
    row = next(line for line in body.splitlines() if line.startswith("| test_read read |"))
    assert "**B worse**" in row, body
    assert "https://github.example/acme/fs/actions/runs/7" in body
    assert summary.read_text() == body  # the job summary says the same
    calls = gh_log.read_text()  # the list (its --jq spans lines), then a new comment
    assert calls.startswith("api --paginate repos/acme/fs/issues/12/comments")
    assert calls.endswith(f"\napi repos/acme/fs/issues/12/comments -F body=@{temp}/comment.md\n")
    assert "PATCH" not in calls
    assert not (temp / "fsperf-base").exists()  # the base's worktree is removed
    assert "not-a-real-token" not in (repo / "fsperf-out" / "results.json").read_text()
    assert ours() == ([], [])


@pytest.mark.fuse
def test_the_history_jobs_steps_keep_mains_run_on_a_branch(tmp_path) -> None:
    """A push to main: main measured alone (its build first on PATH), the run saved with its
    commit on the branch fsperf-runs of the origin, change points over the runs kept."""
    need("rclone")
    need("fio")
    need("git")
    repo, _ = a_filesystem(tmp_path)
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    git(repo, "remote", "add", "origin", str(origin))
    git(repo, "push", "-q", "origin", "main")
    (repo / "slow.txt").unlink()  # main's build: plain rclone, quick
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    summary = tmp_path / "summary.md"
    sha = git(repo, "rev-parse", "HEAD")
    workflow = yaml.safe_load(recipe("github.yml").read_text())
    env = {**{k: str(v) for k, v in workflow["env"].items()},
           "FSPERF_INSTALL": "true", "FSPERF_PACKAGES": "", "FSPERF_BUILD": "sh build.sh",
           "FSPERF_BINARY": "out/rclone",
           "FSPERF_BACKEND": "rclone", "FSPERF_TESTS": "perf/test_read.py -p no:cacheprovider",
           "FSPERF_ARGS": "--fsperf-settle=off", "RUNNER_TEMP": str(temp),
           "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_SHA": sha}
    steps = dict(run_steps(workflow["jobs"]["history"], env, {"github.token": "t"}, repo, temp))
    assert set(steps.values()) == {0}, steps
    saved = git(origin, "ls-tree", "-r", "--name-only", "fsperf-runs")
    assert saved == f"runs/main-{sha}.json", saved
    assert (repo / "fsperf-out" / "history.txt").read_text() in summary.read_text()
    assert not (temp / "fsperf-runs").exists()  # its worktree removed
    assert ours() == ([], [])
