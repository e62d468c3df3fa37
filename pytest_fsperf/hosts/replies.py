"""What a host's agent may answer, checked before anything is made of it.

A host is another machine, and its agent may be hostile: wrong types in a reply gave
tracebacks, a 400 MB error took the controller to 3.2 GB of memory and a 0.94 GB JSON
report, and ANSI escapes in a note reached root's terminal (a fake `1 passed`). Each reply
is held to the shape of its request's answer, every string is stripped of control
characters and cut to MAX_TEXT, and a reply larger than MAX_REPLY in all is refused.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_fsperf.vocab import PageCache

MAX_TEXT = 2000  # characters of any one string kept
MAX_REPLY = 1 << 20  # characters and items in all: a reply past it is refused
MAX_NUMBER = 1 << 62  # no count, byte figure or time measured comes near: past it, refused
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class BadReply(ValueError):
    """A reply of the wrong shape or size; the message says where in it."""


class Failed(Exception):
    """The host answered that the request failed there; the message is its word, cleaned."""


@dataclass(frozen=True)
class Opt:
    spec: Any  # this, or None


@dataclass(frozen=True)
class ListOf:
    spec: Any


@dataclass(frozen=True)
class MapOf:
    spec: Any  # text keys, each value of this shape


@dataclass(frozen=True)
class Choice:
    values: tuple[str, ...]  # one of these words, nothing else


@dataclass(frozen=True)
class Fields:
    required: Mapping[str, Any]
    optional: Mapping[str, Any] = ()  # type: ignore[assignment]


NUMBER = "number"  # an int or a finite float, not a bool
INT = "int"
TEXT = "text"
BOOL = "bool"

PROCESS = Fields({"pid": INT, "role": TEXT, "command": TEXT, "cpu_seconds": NUMBER,
                  "peak_rss_bytes": Opt(INT)})
DAEMON = Fields({"pid": INT, "wall_seconds": NUMBER, "cpu_seconds": NUMBER, "cpu_percent": NUMBER,
                 "peak_rss_bytes": INT, "peak_rss_method": TEXT, "read_bytes": Opt(INT),
                 "write_bytes": Opt(INT), "cpu_window": TEXT, "cpu_window_seconds": NUMBER,
                 "cpu_exact": BOOL, "processes": ListOf(PROCESS)},
                {"start_rss_bytes": Opt(INT)})
REQUESTS = Fields({"by_kind": MapOf(INT), "by_api": MapOf(INT), "errors_4xx": INT,
                   "errors_5xx": INT, "sent_bytes": Opt(INT), "received_bytes": Opt(INT),
                   "source": TEXT, "errors_by_kind": MapOf(INT), "ttfb_at_most": MapOf(NUMBER),
                   "errors_unclassified": INT},
                  {"conditions": MapOf(NUMBER), "stored_after": Opt(NUMBER)})
COUNTED = {"requests": Opt(REQUESTS), "requests_note": TEXT}
ANSWERS: dict[str, Any] = {
    "hello": Fields({"version": TEXT, "protocol": INT, "host": TEXT, "uid": INT, "time": NUMBER,
                     "swept": ListOf(TEXT), "mounted": BOOL, "fstype": TEXT,
                     "daemon": Opt(INT), "note": TEXT}, {"connection": Opt(INT)}),
    "clock": NUMBER,
    "hold": BOOL,
    "serve_fio": TEXT,
    "cold": Choice(tuple(str(c.value) for c in PageCache)),
    "start": NUMBER,
    "stop": Fields({"daemon": Opt(DAEMON), "note": TEXT, "time": NUMBER},
                   {"exited": BOOL, "started": NUMBER, "command": TEXT, **COUNTED}),
}


def clean(text: str) -> str:
    """A string as it may reach a report or a terminal: no control characters, bounded."""
    text = _CONTROL.sub(" ", text)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"... ({len(text)} characters)"


def size(value: Any, limit: int = MAX_REPLY) -> int:
    """Characters of the strings and items of the containers in `value`, counted until past
    `limit` (not further: a huge reply is not walked whole)."""
    total, todo = 0, [value]
    while todo and total <= limit:
        v = todo.pop()
        if isinstance(v, str):
            total += len(v)
        elif isinstance(v, dict):
            total += len(v)
            todo += [*v.keys(), *v.values()]
        elif isinstance(v, list | tuple):
            total += len(v)
            todo += list(v)
        else:
            total += 1
    return total


def check(value: Any, spec: Any, where: str) -> Any:
    """value held to spec, strings cleaned; BadReply naming where it is wrong."""
    if isinstance(spec, Opt):
        return None if value is None else check(value, spec.spec, where)
    if spec == NUMBER:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BadReply(f"{where} is not a number")
        if isinstance(value, float) and not math.isfinite(value):
            raise BadReply(f"{where} is not a number")
        if abs(value) > MAX_NUMBER:
            raise BadReply(f"{where} is past {MAX_NUMBER:.3g}: no measurement gives it")
        return value
    if spec == INT:
        if isinstance(value, bool) or not isinstance(value, int):
            raise BadReply(f"{where} is not a whole number")
        if abs(value) > MAX_NUMBER:
            raise BadReply(f"{where} is past {MAX_NUMBER:.3g}: no measurement gives it")
        return value
    if spec == BOOL:
        if not isinstance(value, bool):
            raise BadReply(f"{where} is not true or false")
        return value
    if spec == TEXT:
        if not isinstance(value, str):
            raise BadReply(f"{where} is not text")
        return clean(value)
    if isinstance(spec, Choice):
        if value not in spec.values:
            raise BadReply(f"{where} is not one of {', '.join(spec.values)}")
        return value
    if isinstance(spec, ListOf):
        if not isinstance(value, list | tuple):
            raise BadReply(f"{where} is not a list")
        return [check(v, spec.spec, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(spec, MapOf):
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise BadReply(f"{where} is not a map of names")
        return {clean(k): check(v, spec.spec, f"{where}.{clean(k)}") for k, v in value.items()}
    assert isinstance(spec, Fields)
    if not isinstance(value, dict):
        raise BadReply(f"{where} is not a map")
    known = {**spec.required, **dict(spec.optional)}
    extra = sorted(clean(str(k)) for k in value if k not in known)
    missing = sorted(k for k in spec.required if k not in value)
    if extra or missing:
        raise BadReply(f"{where} has " + "; ".join(
            ([f"unknown fields {', '.join(extra)[:200]}"] if extra else [])
            + ([f"no {', '.join(missing)}"] if missing else [])))
    return {k: check(v, known[k], f"{where}.{k}") for k, v in value.items()}


def answer(op: str, reply: Any) -> Any:
    """The answer of a reply to `op`, checked: BadReply for a wrong one, Failed (its text
    cleaned) where the host says the request failed."""
    if size(reply) > MAX_REPLY:
        raise BadReply(f"its {op} reply is larger than {MAX_REPLY} characters")
    if not isinstance(reply, dict) or len(reply) != 1 or not set(reply) <= {"ok", "error"}:
        raise BadReply(f"its {op} reply is not {{'ok': ...}} or {{'error': ...}}")
    if "error" in reply:
        raise Failed(check(reply["error"], TEXT, f"its {op} error"))
    return check(reply["ok"], ANSWERS[op], op)
