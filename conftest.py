"""Repository-level pytest configuration: the plugin's own test suite lives in tests/."""

collect_ignore = ["examples", "benchmarks"]
