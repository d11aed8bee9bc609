"""`upstream`: the command line. It drives the same Dagster definitions the UI shows; each
module registers its commands on the one app."""

import warnings

# sqlglotrs arrives with a dependency and warns on its first import, which happens while the
# commands load; nothing a user can act on, so it is silenced before anything imports sqlglot.
warnings.filterwarnings("ignore", message=r"sqlglot\[rs\] is deprecated")

from upstream_dagster.cli import coverage, estate, evaluate, incidents  # noqa: E402
from upstream_dagster.cli.app import app, main  # noqa: E402

__all__ = ["app", "coverage", "estate", "evaluate", "incidents", "main"]
