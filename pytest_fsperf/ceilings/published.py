"""The published baselines set against this machine's store ceiling, where a document says
enough to do so: a documented bandwidth as a share of the network its machine states
("64 Gbps"), and that share of the store's ceiling measured here. It assumes the document's
store kept up with that network, which no document measured: a projection, said as one.
Where a document names no network, nothing is scaled and that is said."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_fsperf import baselines
from pytest_fsperf.result.ceiling import Ceiling, CeilingPath
from pytest_fsperf.units import format_rate

NETWORK = re.compile(r"(\d+(?:\.\d+)?)\s*Gbps")


@dataclass(frozen=True)
class Projection:
    baseline: str
    documented: float  # B/s, as published
    network: float | None  # B/s of the document's machine, where it states one
    here: float | None  # the same share of this store's ceiling

    def said(self) -> str:
        if self.network is None:
            return (f"{self.baseline}: {format_rate(self.documented)} documented; not scaled: "
                    "its document states no network bandwidth")
        share = self.documented / self.network
        here = f"{format_rate(self.here)} here" if self.here else "no store ceiling here to scale"
        return (f"{self.baseline}: {format_rate(self.documented)} documented = {100 * share:.0f}% "
                f"of its {8 * self.network / 1e9:g} Gbps network; the same share of this "
                f"store's ceiling: {here}")


def network_of(hardware: str) -> float | None:
    """The network bandwidth a baseline's hardware line states, in B/s (None: none stated)."""
    found = NETWORK.search(hardware)
    return float(found.group(1)) * 1e9 / 8 if found else None


def project(scenario: str, ceilings: Sequence[Ceiling]) -> list[Projection]:
    """Every shipped baseline with a bandwidth for `scenario`, set against the store's ceiling."""
    store = next((c.bw_bytes for c in ceilings if c.path == CeilingPath.STORE
                  and not c.unavailable and c.bw_bytes), None)
    out = []
    for name in baselines.shipped_names():
        b = baselines.shipped(name)
        figure = (b.entry(scenario) or {}).get("bw")
        if not isinstance(figure, dict) or figure.get("per", "total") != "total":
            continue
        documented = float(figure["value"])
        network = network_of(str(b.data.get("hardware", "")))
        here = documented / network * store if network and store else None
        out.append(Projection(name, documented, network, here))
    return out
