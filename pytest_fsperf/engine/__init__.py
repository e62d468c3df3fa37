"""Workload engines: what drives the load."""
