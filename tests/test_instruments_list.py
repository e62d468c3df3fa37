"""The window's meters are one list (measure/registry.INSTRUMENTS, issue 76.2): every meter
of measure/ follows the one protocol and is listed there, or is the window's own (the
daemons it is about, the sampler and what it samples); the window builds no other by hand;
a meter's own figures are declared by it and by the registry alike."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from pytest_fsperf.figures import METRICS
from pytest_fsperf.measure import registry
from pytest_fsperf.measure.reading import When

pytestmark = pytest.mark.unit
MEASURE = Path(registry.__file__).parent
WINDOW = MEASURE.parent / "runner" / "window.py"
# the window's own: the daemons it is about (and their meters), the sampler and what it samples
OWN = {"Daemons", "DaemonMeter", "Sampled", "CacheDisk"}


def _meters() -> dict[str, type]:
    """Every class of measure/ that follows the protocol (start, stop(span), abort), but the
    protocol itself and the base of the per-process counters (reading.ProcessCounts)."""
    found = {}
    for path in MEASURE.glob("*.py"):
        module = importlib.import_module(f"pytest_fsperf.measure.{path.stem}")
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__ == module.__name__ \
                    and not getattr(obj, "_is_protocol", False) and not inspect.isabstract(obj) and all(
                    callable(getattr(obj, m, None)) for m in ("start", "stop", "abort")) \
                    and "span" in inspect.signature(obj.stop).parameters:
                found[name] = obj
    return found


def test_every_meter_is_listed_or_the_windows_own() -> None:
    listed = {node.id for node in ast.walk(ast.parse(Path(registry.__file__).read_text()))
              if isinstance(node, ast.Name)}
    meters = _meters()
    assert len(meters) >= 10, meters
    assert set(meters) - OWN <= listed, set(meters) - OWN - listed
    assert set(meters) >= OWN


def test_no_meter_is_made_by_hand_in_the_window() -> None:
    meters = _meters()
    made = set()
    for node in ast.walk(ast.parse(WINDOW.read_text())):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.value.id if isinstance(f, ast.Attribute) \
                and isinstance(f.value, ast.Name) else ""
            if name in meters:
                made.add(name)
    assert made <= OWN, made - OWN


def test_every_listed_meter_runs_at_a_declared_time() -> None:
    whens = [listed.when for listed in registry.INSTRUMENTS]
    assert whens == sorted(whens, key=[When.AROUND, When.PINNED].index)


def test_a_meters_own_figures_are_the_registrys_measured_ones() -> None:
    """Declared twice, checked here: the meter's FIGURES (what its stop() gives, None each
    where it cannot read) and figures.Metric.measured (None in a result until it is read)."""
    declared = [f for m in _meters().values() for f in getattr(m, "FIGURES", ())]
    assert len(declared) == len(set(declared)), declared
    assert set(declared) == {k for k, m in METRICS.items() if m.measured}
