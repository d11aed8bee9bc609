"""The demo estate: raw vendor and shop feeds generated into DuckDB, built by dbt."""
