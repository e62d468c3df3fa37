"""A backend is a small declarative description; render() turns it into a command line.

Templates use str.format fields: the config (endpoint, bucket, access_key, secret_key,
region, source, meta_url, or any key a config file adds), `mountpoint`, `private` (a 0700
directory of this mount), `port` (a free TCP port on 127.0.0.1), `token` (a random
secret), `options` (the user's options; an argv element that is exactly "{options}"
expands to them), `options_lines` (one per line, for config files) and `files[NAME]`
(the path of a generated private file). The user's options may use these fields too,
e.g. `-o use_cache={private}/cache`. Fields are plain names (and files[NAME]): no indexing,
attributes, conversions or format specs.
"""

from __future__ import annotations

import re
import secrets
import socket
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from urllib.parse import urlsplit, urlunsplit

from pytest_fsperf.errors import UsageError
from pytest_fsperf.infra.redact import mask


class Need(Enum):
    """What a workload asks of a filesystem beyond creating, reading and listing files."""

    RANDOM_WRITES = "writes at random offsets"
    REWRITES = "rewrites existing files in place"
    APPENDS = "appends to existing files"
    RENAME = "renames files"


@dataclass(frozen=True)
class Limits:
    """What a filesystem cannot do, by its own documentation: a workload that needs it is
    refused before it starts, in one line naming the limit; `fio` options go into every fio
    job on it (and its layouts) unless the test set them, so fio uses what it supports."""

    cannot: frozenset[Need] = frozenset()
    fio: Mapping[str, str] = field(default_factory=dict)
    keeps_empty_dirs: bool = True  # False: an empty directory is gone once the kernel forgets it
    source: str = ""  # where the limit is documented

    def refusal(self, backend: str, needs: Mapping[Need, str]) -> str:
        """Why this backend cannot run a workload with these needs (need -> what in the
        workload needs it), or ""."""
        for need, what in needs.items():
            if need in self.cannot:
                return (f"{backend} cannot run this workload: {what}, and {backend} "
                        f"{_CANNOT[need]}{f' ({self.source})' if self.source else ''}")
        return ""


_CANNOT = {Need.RANDOM_WRITES: "writes only new files, front to back",
           Need.REWRITES: "writes only new files: it does not rewrite a file in place",
           Need.APPENDS: "does not append to an existing file",
           Need.RENAME: "does not rename files"}

FIELD = re.compile(r"^[a-z_][a-z0-9_]*$")
SECRET_NAME = re.compile(r"(key|secret|passw|token|credential)", re.IGNORECASE)


@dataclass(frozen=True)
class Backend:
    name: str
    binary: str  # looked up on PATH; "" for a plain directory (no daemon)
    command: tuple[str, ...]  # argv templates; "{options}" expands to the user's options
    install: str  # how to get the binary, shown when it is missing
    requires: tuple[str, ...] = ()  # config fields that must be given
    defaults: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # first that renders
    files: Mapping[str, str] = field(default_factory=dict)  # private files, mode 0600
    env: Mapping[str, str] = field(default_factory=dict)  # skipped if a field is missing
    unset_env: tuple[str, ...] = ()
    cache_dirs: tuple[str, ...] = ()  # the daemon's disk cache, wiped by a cold remount
    # True when cache_dirs name only this mount's part of a directory others may share, by the
    # daemon's own layout (s3fs use_cache/BUCKET). Otherwise a cache dir is wiped only when the
    # plugin created it (inside its private dir); one the user named is kept, and cold says so.
    cache_scoped: bool = False
    option_fields: Mapping[str, str] = field(default_factory=dict)  # field -> regex, group 1
    secrets: tuple[str, ...] = ("access_key", "secret_key")
    # The dialect of its store ("s3", "oss", "azure", "gcs"): with no endpoint configured the
    # plugin starts its own (mounts/request.py, STORE_FIXTURE)
    store: str = ""
    # over a store with TLS: the environment variables that tell its daemon which CA file to
    # trust (Go's SSL_CERT_FILE, libcurl's CURL_CA_BUNDLE as s3fs reads it), each set to it
    trust_env: tuple[str, ...] = ()
    # what it cannot do (mount-s3 writes only new files, front to back): refused before a
    # run, not failed by the daemon midway
    limits: Limits = field(default_factory=Limits)
    settle: Callable[[Rendered], str] | None = None  # wait for pending uploads before unmount
    # Before the first mount (format a volume): given the rendered mount and its environment
    prepare: Callable[[Rendered, Mapping[str, str]], None] | None = None
    own_store: str = ""  # a config field that names a store of the backend's own (no fsperf_s3)
    # (url field, password field): a password in the URL is moved to the password field (the
    # environment), never left on the command line: JuiceFS's META_PASSWORD
    url_passwords: tuple[tuple[str, str], ...] = ()

    @property
    def has_daemon(self) -> bool:
        return bool(self.binary)


@dataclass(frozen=True)
class Rendered:
    argv: tuple[str, ...]
    env: Mapping[str, str]
    unset_env: tuple[str, ...]
    files: Mapping[str, str]  # path -> content
    cache_dirs: tuple[str, ...]
    secrets: tuple[str, ...]  # values to mask wherever text leaves the plugin
    fields: Mapping[str, object] = field(default_factory=dict)


# Starts of a store on a new port each, where the last was taken first by another process
# (on a shared machine, most often someone's ordinary listener): the next port is tried.
STARTS = 6


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# A template field is a plain name, or files[NAME] (a private file of the backend's): no
# indexing, attributes, conversions or format specs, which would hand out a secret a
# character at a time ({token[0]}) or reach into objects ({token.__class__}).
PLAIN_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|files\[[A-Za-z0-9_.-]+\]")


class TemplateError(UsageError):
    """A template field that is not a plain name."""


def _check_fields(template: str, what: str) -> None:
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise TemplateError(f"{what}: bad template {template!r}: {exc}") from None
    for _text, name, spec, conversion in parsed:
        if name is None:
            continue
        if spec or conversion or not PLAIN_FIELD.fullmatch(name):
            raise TemplateError(f"{what}: bad template {template!r}: fields are plain names "
                                "({endpoint}, {private}, {files[NAME]} ...), without indexing, "
                                "attributes, conversions or format specs")


def _fill(template: str, fields: Mapping[str, object], what: str) -> str:
    _check_fields(template, what)
    try:
        return template.format_map(fields)
    except KeyError as exc:
        raise UsageError(f"{what}: needs {exc.args[0]!r}, which is not configured") from None
    except (ValueError, IndexError, AttributeError, TypeError) as exc:
        raise UsageError(f"{what}: bad template {template!r}: {exc}") from None


def _try(template: str, fields: Mapping[str, object], what: str = "") -> str | None:
    """The template filled, or None when a field is missing; TemplateError for a field
    that is not a plain name."""
    _check_fields(template, what)
    try:
        return _fill(template, fields, what)
    except UsageError:
        return None


def secret_values(backend: Backend, config: Mapping[str, str]) -> tuple[str, ...]:
    keys = set(backend.secrets) | {k for k in config if SECRET_NAME.search(k)}
    return tuple(sorted({config[k] for k in keys if config.get(k)}, key=len, reverse=True))


def render(backend: Backend, config: Mapping[str, str], options: tuple[str, ...],
           mountpoint: str, private: str) -> Rendered:
    where = f"backend {backend.name!r}"
    missing = [k for k in backend.requires if not config.get(k)]
    if missing:
        raise UsageError(f"{where}: needs {', '.join(missing)} in its config "
                         "(--fsperf-backend-config or the fsperf_mount marker)")
    fields: dict[str, object] = {k: v for k, v in config.items() if v != ""}
    moved = _move_url_passwords(backend, fields)
    fields.update(mountpoint=mountpoint, private=private, port=free_port(),
                  token=secrets.token_hex(16))
    # Options may name {private}, {mountpoint} or config values, e.g. use_cache={private}/cache.
    options = tuple(_try(o, fields, f"{where} option") or o for o in options)
    joined = " ".join(options)
    for name, pattern in backend.option_fields.items():
        found = re.search(pattern, joined)
        if found:
            fields[name] = found.group(1)
    for _pass in range(len(backend.defaults)):  # a default may use another default
        for name, choices in backend.defaults.items():
            if name not in fields:
                value = next((v for c in choices if (v := _try(c, fields)) is not None), None)
                if value is not None:
                    fields[name] = value
    file_paths = {name: f"{private}/{name}" for name in backend.files}
    fields.update(files=file_paths, options=joined, options_lines="\n".join(options))
    files = {file_paths[n]: _fill(t, fields, f"{where} file {n}") for n, t in backend.files.items()}
    argv: list[str] = []
    for part in backend.command:
        if part == "{options}":
            argv.extend(options)
        else:
            argv.append(_fill(part, fields, where))
    env = {k: v for k, t in backend.env.items() if (v := _try(t, fields)) is not None}
    if fields.get("ca_file"):  # the store speaks TLS with a CA of the plugin's
        if not backend.trust_env:
            raise UsageError(f"{where}: its store is over TLS (--fsperf-store-tls; on for S3, "
                             f"Azure and GCS by default), and {backend.name} names no variable its daemon "
                             "reads a CA file from (a backend config's trust_env = "
                             "SSL_CERT_FILE): name one, or run with --fsperf-store-tls=off")
        env.update({k: str(fields["ca_file"]) for k in backend.trust_env})
    caches = tuple(v for t in backend.cache_dirs if (v := _try(t, fields)) is not None)
    hidden = (*secret_values(backend, config), *moved, str(fields["token"]))
    for part in argv:
        if any(secret in part for secret in hidden):
            raise UsageError(f"{where}: a configured secret would be on the daemon's command line "
                             f"({mask(part, hidden)!r}), which every local user can read; "
                             "pass it in a private file (file.NAME) or the environment (env.NAME)")
    return Rendered(tuple(argv), env, backend.unset_env, files, caches, hidden, fields)


def _move_url_passwords(backend: Backend, fields: dict[str, object]) -> tuple[str, ...]:
    """redis://:PW@host/1 -> redis://host/1 with the password field PW (unless given)."""
    moved = []
    for url_field, pw_field in backend.url_passwords:
        url = str(fields.get(url_field, ""))
        parts = urlsplit(url)
        if "@" not in parts.netloc or parts.password is None:
            continue
        user, host = parts.username or "", parts.netloc.rsplit("@", 1)[1]
        fields[url_field] = urlunsplit(parts._replace(netloc=f"{user}@{host}" if user else host))
        fields.setdefault(pw_field, parts.password)
        moved.append(parts.password)
    return tuple(moved)
