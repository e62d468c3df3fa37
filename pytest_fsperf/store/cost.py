"""What a workload's requests cost: a price table shipped as data (store/data/prices.toml),
each entry with its source and the day it was checked, which a user's TOML file of the same
format extends or overrides (--fsperf-prices). Requests are priced per 1,000 of each kind the
server counts; the bytes the store sent are priced as egress, shown apart (a client in the
store's region pays none)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_fsperf.infra import inputs
from pytest_fsperf.result.store import KINDS, Cost, Requests

DEFAULT = "aws-s3-standard"


class PriceError(ValueError):
    """A price table that cannot be used, said in one line."""


@dataclass(frozen=True)
class PriceList:
    name: str
    title: str
    currency: str
    source: str
    checked: str
    per_1000: dict[str, float]  # by kind (requests.KINDS)
    failed_billed: bool = True
    egress_per_gb: float | None = None  # None: not priced here
    egress_note: str = ""
    origin: str = "shipped"  # or the user's file

    def cost(self, q: Requests) -> Cost:
        billed = {k: q.by_kind.get(k, 0) - (0 if self.failed_billed else q.errors_by_kind.get(k, 0))
                  for k in KINDS}
        requests = sum(max(n, 0) * self.per_1000[k] / 1000 for k, n in billed.items())
        egress = (q.sent_bytes / 1e9 * self.egress_per_gb
                  if q.sent_bytes is not None and self.egress_per_gb is not None else None)
        return Cost(self.name, self.currency, requests, egress)

    def describe(self) -> str:
        return f"{self.title} prices ({self.name}, checked {self.checked}; {self.origin})"


def _entry(name: str, raw: Any, origin: str) -> PriceList:
    where = f"{origin}: [{name}]"
    if not isinstance(raw, dict):
        raise PriceError(f"{where}: not a table")
    per = raw.get("per_1000")
    if not isinstance(per, dict):
        raise PriceError(f"{where}: needs per_1000 = {{ GET = ..., HEAD = ..., ... }}")
    unknown = set(per) - set(KINDS)
    missing = set(KINDS) - set(per)
    if unknown or missing:
        raise PriceError(f"{where}: per_1000 needs exactly the kinds {', '.join(KINDS)}"
                         + (f" (unknown: {', '.join(sorted(unknown))})" if unknown else "")
                         + (f" (missing: {', '.join(sorted(missing))})" if missing else ""))
    prices = {}
    for kind, value in per.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                math.isfinite(value) and value >= 0):
            raise PriceError(f"{where}: per_1000.{kind} must be a number, 0 or more")
        prices[kind] = float(value)
    egress = raw.get("egress_per_gb")
    if egress is not None and (isinstance(egress, bool) or not isinstance(egress, (int, float))
                               or not math.isfinite(egress) or egress < 0):
        raise PriceError(f"{where}: egress_per_gb must be a number, 0 or more")
    for key in ("title", "currency", "source", "checked"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise PriceError(f"{where}: needs {key} = \"...\" (where the figures come from, "
                             "and when they were checked)")
    billed = raw.get("failed_billed", True)
    if not isinstance(billed, bool):  # 'no' was read as true
        raise PriceError(f"{where}: failed_billed must be true or false, not {str(billed)[:20]!r}")
    note = raw.get("egress_note", "")
    if not isinstance(note, str):
        raise PriceError(f"{where}: egress_note must be text")
    return PriceList(name, raw["title"], raw["currency"], raw["source"], raw["checked"], prices,
                     billed,
                     float(egress) if egress is not None else None,
                     str(raw.get("egress_note", "")), origin)


def parse(text: str, origin: str) -> dict[str, PriceList]:
    try:
        doc = inputs.parse_toml(text)
    except inputs.InputError as exc:
        raise PriceError(f"{origin} {exc}") from None
    return {name: _entry(name, raw, origin) for name, raw in doc.items()}


def shipped() -> dict[str, PriceList]:
    text = resources.files("pytest_fsperf.store").joinpath("data/prices.toml").read_text("utf-8")
    return parse(text, "shipped")


def load(path: Path | None) -> dict[str, PriceList]:
    """The shipped table, with a user's file over it."""
    table = shipped()
    if path is not None:
        try:
            text = inputs.read_text(path, limit=1 << 20)
        except inputs.InputError as exc:
            raise PriceError(f"{path} {exc}") from None
        table.update(parse(text, str(path)))
    return table


def choose(table: dict[str, PriceList], name: str) -> PriceList:
    if name not in table:
        raise PriceError(f"no price list {name!r}; known: {', '.join(sorted(table))}")
    return table[name]
