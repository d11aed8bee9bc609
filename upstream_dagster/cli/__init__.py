"""`upstream`: the command line. It drives the same Dagster definitions the UI shows; each
module registers its commands on the one app."""

from upstream_dagster.cli import coverage, estate, evaluate, incidents
from upstream_dagster.cli.app import app

__all__ = ["app", "coverage", "estate", "evaluate", "incidents"]
