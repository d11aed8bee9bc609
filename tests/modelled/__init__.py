"""Modelled DataHub servers: HTTP exchanges and per-release servers built from DataHub's own
source, tests and schema (no DataHub server can run where these tests run)."""
