"""Dagster definitions: thin assets that read inputs, call one core function, report metadata."""
