"""Secrets stay secret: never on a command line, in an id, a message or a report; the rclone remote control closed to other users."""

from __future__ import annotations

import json
import os

import pytest

from pytest_fsperf.errors import UsageError
from pytest_fsperf.mounts.builtin import BUILTIN
from pytest_fsperf.mounts.mounter import MountedFs, MountPlan
from pytest_fsperf.mounts.registry import Registry
from pytest_fsperf.mounts.spec import Backend, render
from tests.conftest import need, ours
from tests.hostile import (
    SECRETS,
    as_nobody,
)


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


@pytest.mark.parametrize("option", ["{token[0]}{token[1]}{token[2]}", "{token.__class__.__mro__}",
                                    "{secret_key[0]}", "{token!r}", "{token:>40}",
                                    "{files[passwd].__class__}"])
def test_a_template_field_that_is_not_a_plain_name_is_refused(option):
    rclone = next(b for b in BUILTIN if b.name == "rclone")
    said = set()
    for _ in range(5):  # each render makes a new random token: a message that shows any of it differs
        with pytest.raises(UsageError, match="fields are plain names") as caught:
            render(rclone, SECRETS, (option,), "/m", "/p")
        said.add(str(caught.value))
    assert len(said) == 1, said
    r = render(rclone, SECRETS, (), "/m", "/p")
    tokens = {str(render(rclone, SECRETS, (), "/m", "/p").fields["token"]) for _ in range(2)}
    assert len(tokens) == 2 and str(r.fields["token"]) not in said.pop()  # tokens are random


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
