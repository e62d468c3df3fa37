"""A test's request for a mount (marker or command line), resolved into a frozen MountPlan."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_fsperf import units
from pytest_fsperf.errors import UsageError
from pytest_fsperf.infra.redact import redact_args
from pytest_fsperf.mounts.mounter import MountPlan, require_binary
from pytest_fsperf.mounts.registry import BackendConfig, Registry
from pytest_fsperf.mounts.spec import FIELD
from pytest_fsperf.plan.conditions import StoreConditions, profile

# The server a backend of each store gets when its config names no endpoint: the plugin's own
STORE_FIXTURE = {"s3": "fsperf_s3", "oss": "fsperf_oss", "azure": "fsperf_azurite",
                 "gcs": "fsperf_gcs"}

MARKER = "fsperf_mount"
MARKER_HELP = (f"{MARKER}(backend, options=[...], config=None, memory_limit=None, store=None): "
               "mount this backend for the test (config: a dict, or the name of a fixture giving "
               "one, e.g. 'fsperf_s3'; memory_limit: '512M', every process of the daemon in a "
               "cgroup with that limit; store: a store profile, e.g. 'in-region', for the store "
               "the plugin starts for it)")


@dataclass(frozen=True)
class MountRequest:
    backend: str
    options: tuple[str, ...] = ()
    config: Mapping[str, str] | str | None = None  # values, or the name of a fixture
    where: str = ""
    extra: Mapping[str, str] = field(default_factory=dict)
    memory_limit: int | None = None  # bytes: the daemon's cgroup limit
    store: StoreConditions | None = None  # the conditions of the plugin's store for it; None: the session's


def parse_options(value: object, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            found = tuple(shlex.split(value))
        except ValueError as exc:
            raise UsageError(f"{where}: options: {exc}") from None
    elif isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        found = tuple(value)
    else:
        raise UsageError(f"{where}: options must be a list of strings or one string, not "
                         f"{str(value)[:40]!r}")
    for option in found:  # a NUL was a traceback at the daemon's exec
        if any(ord(c) < 32 or ord(c) == 127 for c in option):
            raise UsageError(f"{where}: options: {option[:40]!r} holds a control character")
    return found


def _config(value: object, where: str) -> Mapping[str, str] | str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key, v in value.items():
            if not isinstance(key, str) or not FIELD.fullmatch(key) or not isinstance(v, str):
                raise UsageError(f"{where}: config entry {key!r} must be a name mapped to a string")
        return dict(value)
    raise UsageError(f"{where}: config must be a dict or a fixture name, not {type(value).__name__}")


def from_marker(args: tuple[Any, ...], kwargs: Mapping[str, Any], where: str) -> MountRequest:
    if len(args) != 1 or not isinstance(args[0], str) or not args[0]:
        raise UsageError(f"{where}: {MARKER} takes the backend name as its one positional argument")
    unknown = set(kwargs) - {"options", "config", "memory_limit", "store"}
    if unknown:
        raise UsageError(f"{where}: {MARKER}: unknown keyword {sorted(unknown)[0]!r} "
                         "(known: options, config, memory_limit, store)")
    return MountRequest(args[0], parse_options(kwargs.get("options", ()), where),
                        _config(kwargs.get("config"), where), where,
                        memory_limit=_limit(kwargs.get("memory_limit"), where),
                        store=_store(kwargs.get("store"), where))


def _store(value: object, where: str) -> StoreConditions | None:
    """A profile's name ('in-region'), or conditions (StoreConditions)."""
    if value is None:
        return value
    if isinstance(value, StoreConditions):
        return value.checked(f"{where}: {MARKER}: store")
    if isinstance(value, str):
        return profile(value, f"{where}: {MARKER}: store={value[:40]!r}")
    raise UsageError(f"{where}: {MARKER}: store must be a store profile's name, not "
                     f"{type(value).__name__}")


def _limit(value: object, where: str) -> int | None:
    """A size: '512M' as cgroups and containers write it (K, M, G, T: powers of 1024), or
    the plugin's units ('512MB', '1GiB')."""
    if value is None:
        return None
    text = str(value).strip()
    shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:37]}..."
    try:
        if text[-1:] in ("K", "M", "G", "T") and text[:-1].replace(".", "", 1).isdigit():
            limit = float(text[:-1]) * 1024 ** (" KMGT".index(text[-1]))
        else:
            limit = units.parse_bytes(value)
    except ValueError as exc:
        raise UsageError(f"{where}: memory_limit={shown}: {str(exc)[:200]}") from None
    if not 1 << 20 <= limit <= 1 << 60:  # also the 400 digits that overflow
        raise UsageError(f"{where}: memory_limit={shown} must be a size from 1 MiB to 1 EiB, "
                         "e.g. '512M'")
    return int(limit)


def option_id(options: Sequence[str]) -> str:
    """A readable, secret-free test id: ['-o', 'parallel_count=20', '--bwlimit', '20M']
    -> 'parallel_count=20,bwlimit=20M'."""
    words = redact_args(list(options))
    parts: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "-o":
            i += 1
            continue
        nxt = words[i + 1] if i + 1 < len(words) else None
        if word.startswith("--") and "=" not in word and nxt is not None and not nxt.startswith("-"):
            parts.append(f"{word[2:]}={nxt}")
            i += 2
            continue
        parts.append(word.lstrip("-").removeprefix("o") if word.startswith("-o") else word.lstrip("-"))
        i += 1
    text = ",".join(p for p in parts if p)
    return text.replace(" ", "_") or "defaults"


def resolve(req: MountRequest, registry: Registry, file_config: BackendConfig,
            fixture: Callable[[str], Any], timeout: float) -> MountPlan:
    """Backend and values: the marker's config, over the config file's, over the plugin's own
    server of the backend's store (STORE_FIXTURE) when no endpoint is configured - under the
    marker's store conditions where it names some (fixture fsperf_stores), else the session's."""
    backend = registry.get(req.backend, req.where)
    values = dict(file_config.values)
    require_binary(backend)  # before starting a server for it
    named = {fixture_name: kind for kind, fixture_name in STORE_FIXTURE.items()}
    kind = named.get(req.config) if isinstance(req.config, str) else None  # config="fsperf_s3"
    if (req.config is None and backend.store in STORE_FIXTURE and not values.get("endpoint")
            and not (backend.own_store and values.get(backend.own_store))):
        kind = backend.store
    if req.store is not None and kind is None:
        raise UsageError(f"{req.where}: {MARKER}: store={str(req.store)!r} sets the conditions "
                         f"of a store the plugin starts; {req.backend} is given a store of its own")
    if kind is not None:
        store = (fixture(STORE_FIXTURE[kind]) if req.store is None
                 else fixture("fsperf_stores").get(kind, req.store, fixture))
        values.update(store.config())
    elif isinstance(req.config, str):
        given = fixture(req.config)
        getter = getattr(given, "config", None)
        given = getter() if callable(getter) else given
        if not isinstance(given, Mapping):
            raise UsageError(f"{req.where}: fixture {req.config!r} gave {type(given).__name__}, "
                             "not a config dict")
        values.update({str(k): str(v) for k, v in given.items()})
    elif req.config is not None:
        values.update(req.config)
    return MountPlan(backend, req.options, values, timeout, req.where, req.memory_limit)
