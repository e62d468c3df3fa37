"""Saved runs: read and named in one place."""
