"""Upstream: a desired-state control plane for DataHub, shipped as a Dagster code location."""
