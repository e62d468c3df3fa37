"""The results file's JSON schema (schema.json), made from the result types: each dataclass a
definition whose properties are its fields (each described by its comment in the source),
required where the field has no default, nothing else allowed (the reader refuses unknown
fields too); enums as their words, X | None as nullable, tuples and lists as arrays, dicts as
objects. What a type writes beyond its fields, or in a shape of its own, is said once here
(JSON). `python3 -m pytest_fsperf.result.contract` prints it; a test keeps the shipped file
equal to it."""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import inspect
import io
import json
import re
import tokenize
import types
import typing
from dataclasses import dataclass, field
from typing import Any

from pytest_fsperf.figures import METRICS
from pytest_fsperf.result.comparison import Comparison, MetricComparison
from pytest_fsperf.result.daemon import DaemonStats, Profile, ProfileSummary
from pytest_fsperf.result.document import FailedTest, ResultRow
from pytest_fsperf.result.environment import Environment
from pytest_fsperf.result.fuse import FuseRequests, FuseRequestsJSON
from pytest_fsperf.result.parts import Headline, Spread
from pytest_fsperf.result.schema import SCHEMA_ID
from pytest_fsperf.result.store import Requests
from pytest_fsperf.result.timeline import Timeline
from pytest_fsperf.result.workload import WorkloadResult


@dataclass(frozen=True)
class Written:
    """How a type's JSON differs from its fields."""

    # derived keys: written, not required (the first v1 files lacked some)
    added: dict[str, Any] = field(default_factory=dict)
    optional: dict[str, Any] = field(default_factory=dict)  # keys written only sometimes
    left: frozenset[str] = frozenset()  # fields not written
    nullable: frozenset[str] = frozenset()  # fields written null where not measured
    shape: Any = None  # a TypedDict it is written as instead of its fields
    words: dict[str, tuple[str, ...]] = field(default_factory=dict)  # text fields' only values


JSON: dict[type, Written] = {
    WorkloadResult: Written(added={"total": Headline, "stats": dict[str, Spread]},
                            left=frozenset({"output_file"})),
    Requests: Written(added={"total": int, "get_bytes_mean": float | None}),
    Timeline: Written(added={"bw": list[float]}),
    DaemonStats: Written(optional={"cpu_percent_note": str}, nullable=frozenset({"cpu_percent"})),
    FuseRequests: Written(shape=FuseRequestsJSON),
    Profile: Written(shape=ProfileSummary),
    MetricComparison: Written(words={"metric": tuple(METRICS)}),  # an older file's too
}


@dataclass(frozen=True)
class ResultsFile:
    """Every measured workload of one pytest session. Sizes in bytes, rates in bytes/s, times in
    ns unless the name says otherwise; CPU in percent of one core."""

    schema: str  # the format's version: a reader of another refuses the file
    created: str  # local time the file was written, ISO 8601
    environment: Environment
    results: list[ResultRow]
    comparisons: list[Comparison]  # interleaved A/B comparisons and release gates
    leftovers: list[str]  # work directories that could not be removed, with the reason
    # every test that failed or errored, whatever the cause: each makes the decision FAIL
    failed_tests: list[FailedTest] = field(default_factory=list)
    # what earlier sessions, killed with their watchdog, left and this session removed
    swept: list[str] = field(default_factory=list)


def _comments(cls: type) -> dict[str, str]:
    """Each field's comment in cls's source: the one on its line, else those just above it."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    found: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            found[tok.start[0]] = tok.string.lstrip("#").strip()
    out: dict[str, str] = {}
    above: list[str] = []
    for number, line in enumerate(source.splitlines(), 1):
        if line.strip().startswith("#"):
            above.append(found.get(number, ""))
            continue
        named = re.match(r"    (\w+): ", line)
        if named:
            said = found.get(number) or " ".join(above)
            if said:
                out[named.group(1)] = said
        above = []
    return out


def _doc(cls: type) -> str:
    text = inspect.getdoc(cls) or ""
    if not text or text.startswith(f"{cls.__name__}("):  # dataclass's own signature
        return ""
    return " ".join(text.split("\n\n")[0].split())


def _simple(part: dict[str, Any]) -> list[str] | None:
    kind = part.get("type") if set(part) == {"type"} else None
    return [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else None


class Maker:
    """Definitions made so far ($defs), by the type's name."""

    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}

    def of(self, kind: Any) -> dict[str, Any]:
        """The schema of an annotation."""
        origin, args = typing.get_origin(kind), typing.get_args(kind)
        if kind is Any:
            return {}
        if kind is type(None):
            return {"type": "null"}
        if origin in (typing.Union, types.UnionType):
            parts = [self.of(a) for a in args]
            simple = [_simple(p) for p in parts]
            if all(s is not None for s in simple):
                return {"type": [t for s in simple if s for t in s]}
            return {"anyOf": parts}
        if origin is typing.Literal:
            return {"enum": list(args)}
        if (origin is tuple and len(args) == 2 and args[1] is Ellipsis) or origin in (
                list, collections.abc.Sequence):
            return {"type": "array", "items": self.of(args[0])}
        if origin is tuple:
            return {"type": "array", "prefixItems": [self.of(a) for a in args],
                    "minItems": len(args), "maxItems": len(args)}
        if origin in (dict, collections.abc.Mapping):
            return {"type": "object", "additionalProperties": self.of(args[1])}
        if isinstance(kind, type) and issubclass(kind, enum.Enum):
            return {"enum": [m.value for m in kind]}
        for base, word in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string")):
            if isinstance(kind, type) and issubclass(kind, base):
                return {"type": word}
        if isinstance(kind, type) and (dataclasses.is_dataclass(kind) or typing.is_typeddict(kind)):
            return self.ref(kind)
        raise TypeError(f"no JSON schema for {kind!r}")

    def ref(self, cls: type) -> dict[str, Any]:
        written = next((JSON[k] for k in cls.__mro__ if k in JSON), Written())
        if written.shape is not None:
            return self.ref(written.shape)
        if cls.__name__ not in self.defs:
            self.defs[cls.__name__] = {}  # taken: a type that holds itself refers to it
            self.defs[cls.__name__] = self.definition(cls, written)
        return {"$ref": f"#/$defs/{cls.__name__}"}

    def definition(self, cls: type, written: Written) -> dict[str, Any]:
        hints = typing.get_type_hints(cls)
        said = _comments(cls)
        if typing.is_typeddict(cls):
            names, required = list(hints), sorted(getattr(cls, "__required_keys__", ()))
        else:
            own = [f for f in dataclasses.fields(cls) if f.name not in written.left]
            names = [f.name for f in own]
            required = [f.name for f in own if f.default is dataclasses.MISSING
                        and f.default_factory is dataclasses.MISSING]
        properties: dict[str, Any] = {}
        for name in names:
            part = self.of(hints[name] | None if name in written.nullable else hints[name])
            if name in written.words:
                part = {"enum": list(written.words[name])}
            properties[name] = {**part, "description": said[name]} if name in said else part
        for name, kind in {**written.added, **written.optional}.items():
            properties[name] = self.of(kind)
        out: dict[str, Any] = {"type": "object"}
        if _doc(cls):
            out["description"] = _doc(cls)
        return {**out, "required": required, "properties": properties,
                "additionalProperties": False}


def generate() -> dict[str, Any]:
    """The whole schema: the results file, each type a definition."""
    maker = Maker()
    maker.ref(ResultsFile)
    top = maker.defs.pop("ResultsFile")
    top["properties"]["schema"] = {"const": SCHEMA_ID}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            "title": "pytest-fsperf results", **top,
            "$defs": dict(sorted(maker.defs.items()))}


def text() -> str:
    return json.dumps(generate(), indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(text(), end="")
