"""Benchmarks: scripts that print ratios and counts measured in one run (not timed tests)."""
