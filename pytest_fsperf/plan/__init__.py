"""The frozen plan a test states with the fsperf marker (thresholds, rounds, tolerance)."""
