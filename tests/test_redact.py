from hypothesis import given
from hypothesis import strategies as st

from pytest_fsperf.infra.redact import MASK, redact_args, redact_options

secret = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
                 min_size=8, max_size=48)


def test_keeps_harmless_options():
    assert redact_options("rw,allow_other,url=http://127.0.0.1:9000") == (
        "rw,allow_other,url=http://127.0.0.1:9000")


def test_typical_daemon_command_lines():
    args = ["s3fs", "bkt", "/mnt/s3", "-o", "url=http://minio:9000,passwd_file=/etc/p",
            "-o", "use_path_request_style"]
    assert redact_args(args)[4] == f"url=http://minio:9000,passwd_file={MASK}"
    args = ["ossfs2", "mount", "/mnt/o", "--oss_access_key_secret=abc", "--oss_bucket=b"]
    assert redact_args(args)[3] == f"--oss_access_key_secret={MASK}"
    assert redact_args(["goofys", "--secret-key", "abc", "/mnt"]) == [
        "goofys", "--secret-key", MASK, "/mnt"]


@given(secret, st.sampled_from(["secret_access_key", "passwd_file", "oss_access_key_secret",
                                "password", "sessionToken", "AUTH"]),
       st.sampled_from(["-o{k}={v}", "--{k}={v}", "a=1,{k}={v},b=2"]))
def test_secret_value_never_survives(value, key, template):
    out = " ".join(redact_args(["daemon", template.format(k=key, v=value), "/mnt"]))
    assert value not in out


@given(secret, secret)
def test_url_userinfo_and_key_pairs(user, password):
    out = redact_options(f"url=https://{user}:{password}@host/b")
    assert f":{password}@" not in out and out.endswith(f":{MASK}@host/b")
    pair = f"AKIA{user.replace('/', 'x').replace('+', 'y')}:{password.replace('/', 'x')}Zz9q"
    assert redact_args([pair]) == [MASK]


def test_paths_are_not_mistaken_for_keys():
    path = "/tmp/pytest-of-root/pytest-12/test_bindfs_daemon_found0/mnt"
    assert redact_args([path]) == [path]


def test_rclone_rc_password_flag_is_hidden():
    assert redact_args(["rclone", "--rc-pass", "abc123", "--rc-user", "fsperf"]) == [
        "rclone", "--rc-pass", "***", "--rc-user", "fsperf"]
    assert redact_args(["--passes", "3"]) == ["--passes", "3"]


def test_mask_reaches_nested_strings():
    from pytest_fsperf.infra.redact import mask

    data = {"a": ["x-SECRET-y", ("SECRET",)], "b": 3, "c": {"d": "SECRET"}}
    assert mask(data, ["SECRET"]) == {"a": ["x-***-y", ("***",)], "b": 3, "c": {"d": "***"}}
