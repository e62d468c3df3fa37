"""The tutorial (docs/tutorial-ci.md) as a new user runs it: every command of the page in
order, against a local origin standing in for GitHub and a `gh` that records its calls; then
what GitHub runs on the label, the gate and comment jobs of the workflow the page wrote (the
base branch's), on the runner's side: the job fails and the comment names the regression."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from pytest_fsperf.report import comment
from tests.conftest import need, ours
from tests.test_ci_recipes import FAKE_GH, run_steps, venv

PAGE = Path(__file__).resolve().parent.parent / "docs" / "tutorial-ci.md"


def commands() -> str:
    """The page's shell blocks, in order, as one script."""
    return "\n".join(re.findall(r"```sh\n(.*?)```", PAGE.read_text(), flags=re.S))


def test_the_page_has_its_steps() -> None:
    script = commands()
    for step in ("fsperf ci github > .github/workflows/fsperf.yml", "git push -q -u origin main",
                 "gh label create perf", "gh pr create", "--add-label perf"):
        assert step in script, step


@pytest.mark.fuse
def test_the_tutorial_gates_its_pull_request_and_comments_on_it(tmp_path) -> None:
    need("rclone")
    need("fio")
    need("git")
    github = tmp_path / "github"
    origin = github / "acme" / "myfs.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(FAKE_GH)
    (bin_dir / "gh").chmod(0o755)
    gh_log = tmp_path / "gh.log"
    user = {f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER")
            for what, value in (("NAME", "A User"), ("EMAIL", "user@example.com"))}
    env = {**os.environ, **user, "OWNER": "acme", "FSPERF_GH_LOG": str(gh_log),
           "PATH": f"{bin_dir}:{os.environ['PATH']}",
           # https://github.com/ is the local origin's folder, for this test only
           "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": f"url.{github}/.insteadOf",
           "GIT_CONFIG_VALUE_0": "https://github.com/"}
    done = subprocess.run(["bash", "-e", "-c", commands()], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout  # the local run of step 1
    calls = gh_log.read_text().splitlines()
    assert calls[0].startswith("label create perf") and calls[-1] == "pr edit narrower --add-label perf"
    repo = tmp_path / "myfs"
    main = subprocess.run(["git", "-C", str(origin), "rev-parse", "main"], capture_output=True,
                          text=True, check=True).stdout.strip()
    # GitHub runs the base branch's workflow, on the labelled commit (checked out here)
    text = subprocess.run(["git", "-C", str(origin), "show", "main:.github/workflows/fsperf.yml"],
                          capture_output=True, text=True, check=True).stdout
    workflow = yaml.safe_load(text)
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    venv(temp)
    gh_log.write_text("")
    summary = tmp_path / "summary.md"
    written = {k: str(v) for k, v in workflow["env"].items()}
    steps_env = {**written, "FSPERF_INSTALL": "true", "FSPERF_PACKAGES": "",  # the runner has them
                 "FSPERF_ARGS": written["FSPERF_ARGS"] + " --fsperf-settle=off --fsperf-profile=off",
                 "RUNNER_TEMP": str(temp), "GITHUB_STEP_SUMMARY": str(summary),
                 "GITHUB_REPOSITORY": "acme/myfs", "FSPERF_GH_LOG": str(gh_log),
                 "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    context = {"github.event.pull_request.base.sha || github.event.repository.default_branch": main,
               "github.server_url": "https://github.example", "github.repository": "acme/myfs",
               "github.run_id": "7", "github.token": "not-a-real-token",
               "github.event.pull_request.number": "12"}
    steps = dict(run_steps(workflow["jobs"]["gate"], steps_env, context, repo, temp))
    # the comment job: the gate's artifact (here, the same folder), the token, nothing built
    steps.update(run_steps(workflow["jobs"]["comment"], steps_env, context, repo, temp))

    assert steps["Fail on the decision"] != 0, steps  # the job fails
    assert steps["Write the decision"] == 0 and steps["Comment on the pull request (one comment, updated in place)"] == 0
    body = (temp / "comment.md").read_text()  # written by the comment job from the results
    assert body == (repo / "fsperf-out" / "comment.md").read_text()  # as the gate said it
    assert body.startswith(comment.MARKER)
    assert body.splitlines()[1].startswith("### pytest-fsperf: FAIL"), body
    row = next(line for line in body.splitlines() if line.startswith("| test_read read |"))
    assert "**B worse**" in row, body
    assert "https://github.example/acme/myfs/actions/runs/7" in body
    assert summary.read_text() == body  # the job summary says the same
    posted = gh_log.read_text()  # the list (its --jq spans lines), then a new comment
    assert posted.startswith("api --paginate repos/acme/myfs/issues/12/comments")
    assert posted.endswith(f"\napi repos/acme/myfs/issues/12/comments -F body=@{temp}/comment.md\n")
    assert "PATCH" not in posted
    assert not (temp / "fsperf-base").exists()  # the base's worktree is removed
    assert "not-a-real-token" not in (repo / "fsperf-out" / "results.json").read_text()
    assert ours() == ([], [])
