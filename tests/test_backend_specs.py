"""Backend descriptions: the command lines and files each produces, and the registry."""

from __future__ import annotations

import dataclasses
import os

import pytest

from pytest_fsperf import mount_params
from pytest_fsperf.engine.fio import needs
from pytest_fsperf.errors import UsageError
from pytest_fsperf.mounts.builtin import BUILTIN
from pytest_fsperf.mounts.mounter import BinaryMissing, MountedFs, MountError, MountPlan
from pytest_fsperf.mounts.registry import BackendConfig, Registry, load_config
from pytest_fsperf.mounts.request import MountRequest, from_marker, option_id, resolve
from pytest_fsperf.mounts.spec import Backend, Limits, Need, render

S3 = {"endpoint": "http://127.0.0.1:9000", "bucket": "bench", "access_key": "AKIDEXAMPLE",
      "secret_key": "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"}


def backend(name: str) -> Backend:
    return Registry().get(name, "test")


def test_every_builtin_is_registered():
    assert Registry().names() == sorted(
        ["local", "bindfs", "rclone", "s3fs", "ossfs", "ossfs2", "goofys", "juicefs", "mountpoint-s3",
         "blobfuse2", "gcsfuse"])
    assert len({b.name for b in BUILTIN}) == len(BUILTIN)


def test_s3fs_command_and_passwd_file():
    r = render(backend("s3fs"), S3, ("-o", "parallel_count=20"), "/m", "/p")
    assert r.argv == ("s3fs", "bench", "/m", "-f", "-o", "url=http://127.0.0.1:9000",
                      "-o", "passwd_file=/p/passwd", "-o", "use_path_request_style",
                      "-o", "parallel_count=20")
    assert r.files == {"/p/passwd": "AKIDEXAMPLE:wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY\n"}
    assert r.cache_dirs == ()  # no use_cache: no disk cache to wipe


def test_s3fs_use_cache_is_wiped_per_bucket_only():
    r = render(backend("s3fs"), S3, ("-o", "use_cache={private}/c"), "/m", "/p")
    assert r.argv[-1] == "use_cache=/p/c"
    assert r.cache_dirs == ("/p/c/bench", "/p/c/.bench.stat", "/p/c/.bench.mirror")


OSS_LOCAL = {**S3, "endpoint": "http://oss.invalid", "http_proxy": "http://127.0.0.1:7000",
             "crc64": "false"}


def test_ossfs1_like_the_documented_command_with_keys_in_the_environment():
    r = render(backend("ossfs"), S3, ("-odirect_read", "-oreaddir_optimize"), "/mnt/ossfs", "/p")
    assert r.argv == ("ossfs", "bench", "/mnt/ossfs", "-f", "-ourl=http://127.0.0.1:9000",
                      "-odirect_read", "-oreaddir_optimize")
    assert r.env["OSSACCESSKEYID"] == S3["access_key"]
    assert r.env["OSSSECRETACCESSKEY"] == S3["secret_key"]
    assert r.files == {} and "http_proxy" not in r.env  # a real endpoint: no proxy
    local = render(backend("ossfs"), OSS_LOCAL, (), "/m", "/p")
    assert local.env["http_proxy"] == "http://127.0.0.1:7000"  # curl's: every request to the gateway


def test_ossfs2_options_go_into_the_generated_config_file_and_keys_into_the_environment():
    r = render(backend("ossfs2"), S3, ("--upload_buffer_size=33554432",), "/mnt/ossfs2", "/p")
    # in the foreground (it forks away otherwise), its log in the private dir (not /tmp/ossfs2)
    assert r.argv == ("ossfs2", "mount", "/mnt/ossfs2", "-c", "/p/ossfs2.conf", "-f")
    assert r.files["/p/ossfs2.conf"].splitlines() == [
        "--oss_endpoint=http://127.0.0.1:9000", "--oss_bucket=bench",
        "--log_dir=/p/log", "--upload_buffer_size=33554432"]
    assert r.env["OSS_ACCESS_KEY_ID"] == S3["access_key"]
    assert r.env["OSS_ACCESS_KEY_SECRET"] == S3["secret_key"]
    local = render(backend("ossfs2"), OSS_LOCAL, (), "/m", "/p")
    assert local.files["/p/ossfs2.conf"].split() == [
        "--oss_endpoint=http://oss.invalid", "--oss_bucket=bench", "--log_dir=/p/log",
        "--http_proxy=http://127.0.0.1:7000", "--enable_crc64=false"]
    assert S3["secret_key"] not in local.files["/p/ossfs2.conf"]


def test_blobfuse2_and_gcsfuse_stay_on_loopback_and_keep_keys_off_the_command_line():
    az = {"endpoint": "http://127.0.0.1:10000/acct", "bucket": "c", "account": "acct",
          "account_key": "c2VjcmV0c2VjcmV0c2VjcmV0", "use_http": "true"}
    r = render(backend("blobfuse2"), az, (), "/m", "/p")
    assert "--disable-version-check=true" in r.argv  # no version check on each mount
    assert r.env["AZURE_STORAGE_ACCESS_KEY"] == az["account_key"]
    assert az["account_key"] not in r.files["/p/config.yaml"] + " ".join(r.argv)
    assert "use-http: true" in r.files["/p/config.yaml"]
    g = render(backend("gcsfuse"), {"endpoint": "http://127.0.0.1:4443", "bucket": "b",
                                    "anonymous": "true", "metadata_host": "127.0.0.1:9"},
               (), "/m", "/p")
    assert g.argv == ("gcsfuse", "--foreground", "--disable-autoconfig", "--anonymous-access=true",
                      "--custom-endpoint=http://127.0.0.1:4443/storage/v1/", "b", "/m")
    assert g.env == {"GCE_METADATA_HOST": "127.0.0.1:9"}  # no metadata.google.internal lookup
    assert "--anonymous-access=false" in render(backend("gcsfuse"), {"endpoint": "https://g",
                                                                      "bucket": "b"}, (), "/m", "/p").argv
    ms3 = render(backend("mountpoint-s3"), S3, (), "/m", "/p")
    assert ms3.env["AWS_EC2_METADATA_DISABLED"] == "true"  # no instance metadata lookups


def test_goofys_and_mountpoint_s3_take_keys_from_the_environment():
    g = render(backend("goofys"), S3, ("--stat-cache-ttl", "60s"), "/m", "/p")
    assert g.argv == ("goofys", "-f", "--endpoint", "http://127.0.0.1:9000", "--stat-cache-ttl",
                      "60s", "bench", "/m")
    assert g.env["AWS_SECRET_ACCESS_KEY"] == S3["secret_key"]
    assert S3["secret_key"] not in " ".join(g.argv)
    m = render(backend("mountpoint-s3"), S3, ("--cache", "/p/mcache"), "/m", "/p")
    assert m.argv[:9] == ("mount-s3", "bench", "/m", "--foreground", "--endpoint-url",
                          "http://127.0.0.1:9000", "--force-path-style", "--region", "us-east-1")
    assert m.cache_dirs == ("/p/mcache/mountpoint-cache",)


def test_juicefs_formats_its_own_volume_or_mounts_yours_with_no_password_on_argv():
    own = render(backend("juicefs"), {"endpoint": "http://127.0.0.1:9000", "bucket": "b"}, (),
                 "/m", "/p")
    assert own.argv[3] == "sqlite3:///p/jfs.db"  # the plugin's volume, formatted before mount
    r = render(backend("juicefs"), {"meta_url": "redis://:pw@127.0.0.1/1"}, (), "/m", "/p")
    assert r.argv == ("juicefs", "mount", "--no-usage-report", "redis://127.0.0.1/1", "/m",
                      "--cache-dir", "/p/cache")
    assert r.env["META_PASSWORD"] == "pw" and "pw" in r.secrets  # in the environment, masked
    user = render(backend("juicefs"), {"meta_url": "mysql://jfs:s3cret@(127.0.0.1:3306)/juicefs"},
                  (), "/m", "/p")
    assert "s3cret" not in " ".join(user.argv) and user.env["META_PASSWORD"] == "s3cret"
    assert r.cache_dirs == ("/p/cache",)


def test_rclone_local_or_s3_remote():
    local = render(backend("rclone"), {}, (), "/m", "/p")
    assert local.argv[2] == "/p/source"
    assert local.unset_env == ("AWS_CA_BUNDLE",)
    s3 = render(backend("rclone"), S3, ("--bwlimit", "20M"), "/m", "/p")
    assert s3.argv[2] == "fsperf:bench"
    assert s3.argv[-2:] == ("--bwlimit", "20M")
    assert s3.env["RCLONE_CONFIG_FSPERF_ENDPOINT"] == S3["endpoint"]
    assert s3.cache_dirs == ("/p/cache/vfs", "/p/cache/vfsMeta")
    assert str(s3.fields["token"]) in s3.secrets  # the rc password is masked too


def test_s3_backend_without_credentials_names_what_is_missing():
    with pytest.raises(UsageError, match=r"needs endpoint, bucket, access_key, secret_key"):
        render(backend("s3fs"), {}, (), "/m", "/p")


def test_describe_masks_secrets_everywhere(tmp_path):
    fs = MountedFs(MountPlan(backend("local"), ("--key", S3["secret_key"]), S3))
    try:
        shown = repr(fs.describe())
        assert S3["secret_key"] not in shown and "***" in shown
    finally:
        fs.close()


def test_missing_binary_is_reported_with_the_install_hint():
    absent = dataclasses.replace(backend("goofys"), binary="goofys-absent-here")  # (the peers' may be on PATH)
    with pytest.raises(BinaryMissing, match=r"goofys-absent-here is not installed \(install goofys from"):
        MountedFs(MountPlan(absent, (), S3))


@pytest.mark.parametrize(("options", "expected"), [
    ([], "defaults"),
    (["-o", "parallel_count=20"], "parallel_count=20"),
    (["-oparallel_count=5", "-o", "multipart_size=8"], "parallel_count=5,multipart_size=8"),
    (["--bwlimit", "20M", "--vfs-cache-mode", "full"], "bwlimit=20M,vfs-cache-mode=full"),
    (["--secret-key", "abc"], "secret-key=***"),
])
def test_option_ids_are_readable_and_secret_free(options, expected):
    assert option_id(options) == expected


def test_mount_params_attach_the_marker():
    params = mount_params("s3fs", ["-o", "parallel_count=5"], "-o parallel_count=20")
    assert [p.id for p in params] == ["parallel_count=5", "parallel_count=20"]
    mark = params[1].marks[0]
    assert mark.name == "fsperf_mount" and mark.args == ("s3fs",)
    assert mark.kwargs["options"] == ["-o", "parallel_count=20"]


@pytest.mark.parametrize(("args", "kwargs", "message"), [
    ((), {}, "takes the backend name"),
    (("s3fs",), {"opts": []}, "unknown keyword 'opts'"),
    (("s3fs",), {"options": [1]}, "options must be a list of strings"),
    (("s3fs",), {"config": {"bucket": 1}}, "config entry 'bucket'"),
    (("s3fs",), {"options": "-o 'unclosed"}, "options: No closing quotation"),
])
def test_marker_errors(args, kwargs, message):
    with pytest.raises(UsageError, match=message):
        from_marker(args, kwargs, "t.py::test: fsperf_mount")


def test_config_file_values_and_backend_definitions(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_SECRET", "s3cr3t-value")
    path = tmp_path / "fsperf.ini"
    path.write_text("[fsperf]\nendpoint = http://h:1\nsecret_key = env:MY_SECRET\n\n"
                    "[backend myfs]\ncommand = myfs {endpoint} {mountpoint} -f {options}\n"
                    "file.token = {secret_key}\nenv.MYFS_DEBUG = 1\ncache_dirs = {private}/c\n"
                    "option.level = --level=(\\d+)\n")
    cfg = load_config(str(path), "--fsperf-backend-config=x (command line)")
    assert cfg.values == {"endpoint": "http://h:1", "secret_key": "s3cr3t-value"}
    (myfs,) = cfg.backends
    assert myfs.binary == "myfs"
    r = render(myfs, cfg.values, ("--level=3",), "/m", "/p")
    assert r.argv == ("myfs", "http://h:1", "/m", "-f", "--level=3")
    assert r.files == {"/p/token": "s3cr3t-value"} and r.env == {"MYFS_DEBUG": "1"}
    assert "s3cr3t-value" in r.secrets
    assert Registry(cfg.backends).get("myfs", "x") is myfs


@pytest.mark.parametrize(("text", "message"), [
    ("[fsperf]\nsecret_key = env:NOPE_NOT_SET\n", r"\[fsperf\] secret_key: environment variable"),
    ("[backend x]\nbinary = x\n", r"\[backend x\]: needs a `command`"),
    ("[backend x]\ncommand = x\nflavour = 1\n", "unknown key 'flavour'"),
    ("[mounts]\na = 1\n", "unknown section"),
    ("no section\n", "File contains no section headers"),
])
def test_config_file_errors_name_the_file(tmp_path, text, message):
    path = tmp_path / "bad.ini"
    path.write_text(text)
    with pytest.raises(UsageError, match=message) as info:
        load_config(str(path), f"--fsperf-backend-config={path} (command line)")
    assert str(info.value).startswith(f"--fsperf-backend-config={path} (command line)")


def test_unknown_backend_lists_the_known_ones():
    with pytest.raises(UsageError, match=r"unknown backend 'nfs' \(known: bindfs, blobfuse2, gcsfuse, goofys"):
        Registry().get("nfs", "--fsperf-backend=nfs (command line)")


@pytest.mark.fio
def test_private_files_are_mode_0600_and_a_failed_mount_shows_the_daemons_words():
    b = Backend(name="t", binary="sh", install="-", files={"k": "{secret_key}"},
                command=("sh", "-c", "stat -c 'mode %a' {files[k]}; cat {files[k]}; exit 3"))
    fs = MountedFs(MountPlan(b, (), {"secret_key": "hunter2hunter2"}))
    try:
        with pytest.raises(MountError) as info:
            fs.start()
        assert str(info.value) == "t mount failed (exit 3): mode 600 | ***"
    finally:
        fs.close()
    assert not os.path.exists(fs.private)


@pytest.mark.parametrize(("name", "server"), [("ossfs", "fsperf_oss"), ("ossfs2", "fsperf_oss"),
                                              ("s3fs", "fsperf_s3"), ("blobfuse2", "fsperf_azurite"),
                                              ("gcsfuse", "fsperf_gcs")])
def test_with_no_endpoint_a_backend_gets_the_plugins_own_server_of_its_dialect(name, server, monkeypatch):
    monkeypatch.setattr("pytest_fsperf.mounts.request.require_binary", lambda b: None)
    asked = []

    class Server:
        def config(self):
            return {"endpoint": "http://127.0.0.1:1", "bucket": "b", "access_key": "k",
                    "secret_key": "s", "account": "a", "account_key": "k"}

    def fixture(n):
        asked.append(n)
        return Server()

    plan = resolve(MountRequest(name, (), None, "t"), Registry([]), BackendConfig(), fixture, 5.0)
    assert asked == [server] and plan.config["endpoint"] == "http://127.0.0.1:1"
    # a configured endpoint (a real OSS, say) starts nothing
    given = BackendConfig({"endpoint": "https://oss-cn-hangzhou.aliyuncs.com", "bucket": "b"})
    resolve(MountRequest(name, (), None, "t"), Registry([]), given, fixture, 5.0)
    assert asked == [server]


def test_goofys_cache_is_known_and_mountpoint_s3_may_delete_and_overwrite():
    g = render(backend("goofys"), S3, ("--cache", "--free:10%:/home/u/cache"), "/m", "/p")
    assert g.cache_dirs == ("/home/u/cache",)  # one the user named: kept, and `not cold`
    assert render(backend("goofys"), S3, (), "/m", "/p").cache_dirs == ()
    m = render(backend("mountpoint-s3"), S3, (), "/m", "/p")
    assert "--allow-delete" in m.argv and "--allow-overwrite" in m.argv
    assert Need.RANDOM_WRITES in backend("mountpoint-s3").limits.cannot


@pytest.mark.parametrize(("job", "need", "why"), [
    ({"rw": "randwrite"}, Need.RANDOM_WRITES, "rw=randwrite writes at random offsets"),
    ({"rw": "randrw"}, Need.RANDOM_WRITES, "rw=randrw writes at random offsets"),
    ({"rw": "rw"}, Need.REWRITES, "rw=rw rewrites the files it reads"),
    ({"rw": "write", "overwrite": "1"}, Need.REWRITES, "overwrite=1 rewrites existing files in place"),
    ({"rw": "write", "file_append": "1"}, Need.APPENDS, "file_append=1 appends to existing files"),
    ({"rw": "write"}, None, ""), ({"rw": "read"}, None, ""), ({"rw": "randread"}, None, "")])
def test_what_a_fio_job_needs(job, need, why):
    assert needs(job) == ({need: why} if need else {})


def test_mountpoint_s3_limits_are_data_and_refuse_in_one_line():
    limits = backend("mountpoint-s3").limits
    assert limits.cannot == {Need.RANDOM_WRITES, Need.REWRITES, Need.APPENDS, Need.RENAME}
    assert limits.fio == {"create_on_open": "1", "fallocate": "none"}
    assert not limits.keeps_empty_dirs
    said = limits.refusal("mountpoint-s3", {Need.RENAME: "mdtest renames every file"})
    assert said == ("mountpoint-s3 cannot run this workload: mdtest renames every file, and "
                    "mountpoint-s3 does not rename files (mountpoint-s3's SEMANTICS.md)")
    assert "\n" not in said
    assert limits.refusal("mountpoint-s3", {}) == ""
    assert Limits().refusal("bindfs", {Need.RENAME: "x"}) == ""
    ossfs2 = backend("ossfs2").limits  # (a write at offset 0 of an existing file: EINVAL)
    assert ossfs2.cannot == {Need.RANDOM_WRITES, Need.REWRITES, Need.APPENDS} and ossfs2.keeps_empty_dirs
    assert all(b.limits == Limits() for b in BUILTIN if b.name not in ("mountpoint-s3", "ossfs2"))
