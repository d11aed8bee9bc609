"""The pure core: scoring over frozen facts. Imports neither dagster nor datahub."""
