"""The reliability controller's pure core: scenarios, SQL guard, health, walk, critic, remedies.

Imports neither dagster nor datahub: every function takes plain frozen records, so the same
evidence gives the same conclusion on every machine (and in `upstream eval --replay`).
"""
