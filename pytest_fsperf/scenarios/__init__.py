"""Every workload the source documents measure, one stable id away (see library.py)."""

from pytest_fsperf.scenarios.library import SCENARIOS, Scenario, Step, get

__all__ = ["SCENARIOS", "Scenario", "Step", "get"]
