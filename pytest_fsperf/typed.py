"""Plain data (a result's JSON) back into its frozen dataclasses, checked field by field
against their annotations (dacite): enums as enums, lists as tuples, numbers as numbers;
one ValueError naming the field that is wrong."""

from __future__ import annotations

import enum
import functools
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import fields, is_dataclass
from typing import Any, TypeVar

import dacite

T = TypeVar("T")
Hooks = Mapping[type, Callable[[Any], Any]]


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise dacite.WrongTypeError(field_type=float, value=value)
    return float(value)


def _word(kind: type[enum.Enum]) -> Callable[[object], enum.Enum]:
    def read(value: object) -> enum.Enum:
        if isinstance(value, kind):
            return value
        try:
            return kind(value)
        except ValueError:
            raise dacite.WrongTypeError(field_type=kind, value=value) from None
    return read


def _inner(kind: Any) -> list[Any]:
    """The types an annotation is made of (int | None -> int; tuple[X, ...] -> X)."""
    args = typing.get_args(kind)
    return [a for a in args if a is not Ellipsis and a is not type(None)]


@functools.cache
def _enums(cls: type) -> frozenset[type[enum.Enum]]:
    """Every enum a dataclass's fields name, through nested dataclasses and containers."""
    found: set[type[enum.Enum]] = set()
    seen: set[Any] = set()
    todo: list[Any] = list(typing.get_type_hints(cls).values())
    while todo:
        kind = todo.pop()
        if kind in seen:
            continue
        seen.add(kind)
        if isinstance(kind, type) and issubclass(kind, enum.Enum):
            found.add(kind)
        elif isinstance(kind, type) and is_dataclass(kind):
            todo.extend(typing.get_type_hints(kind).values())
        elif isinstance(kind, types.UnionType) or typing.get_origin(kind) is not None:
            todo.extend(_inner(kind))
    return frozenset(found)


def read(cls: type[T], data: object, what: str, hooks: Hooks | None = None) -> T:
    """data as a cls: a field it lacks takes its default, a field it has that cls lacks is an
    error; hooks read a type their own way (a reading whose JSON is not its fields)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{what} is not an object")
    config = dacite.Config(
        strict=True, cast=[tuple],
        type_hooks={float: _number, **{e: _word(e) for e in _enums(cls)},  # type: ignore[arg-type]
                    **(hooks or {})})
    try:
        return dacite.from_dict(cls, data, config)
    except (dacite.DaciteError, TypeError, ValueError, KeyError) as exc:  # (or a hook's)
        raise ValueError(f"{what}: {_cut(str(exc))}") from None


def _cut(text: str, most: int = 300) -> str:
    """An error's text as a line shows it: a value of a hostile file is not echoed whole."""
    return text if len(text) <= most else f"{text[:most]}... ({len(text)} characters)"


def names(cls: type) -> frozenset[str]:
    """A dataclass's field names."""
    return frozenset(f.name for f in fields(cls))
