from upstream_dagster.cli import app

app()
