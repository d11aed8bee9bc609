"""The estate's two jobs and the asset names other areas launch or read.

They select by key, so they need no asset defined here: the reliability and remediation areas,
the command line and the light definitions import them without importing dagster-dbt.
"""

import dagster as dg

RAW_FEEDS = "raw_feeds"
PROFILES = "warehouse_profiles"
OUTCOME = "build_outcome"
REFRESH_JOB = "estate_refresh"
ESTATE_JOBS = ("estate_build", REFRESH_JOB)  # they build dbt: a record of what they built
REBUILD_TAG = "upstream/rebuilt"  # a refresh's dbt selection, e.g. "source:shop.orders+"
# the tests on a refresh's changed sources (dbt's selection of the models below leaves them out)
SOURCE_TESTS_TAG = "upstream/source_tests"
# everything up to the build's outcome; the refresh leaves the raw feeds as they are now
BUILD = dg.AssetSelection.assets(OUTCOME).upstream().materializable()
REFRESH = BUILD - dg.AssetSelection.groups(RAW_FEEDS)

estate_build_job = dg.define_asset_job(
    "estate_build",
    selection=BUILD,
    description="Generate the raw feeds, build every dbt model and test, run the monitors, "
    "profile every relation, and ingest the result into DataHub. `make demo` runs it.",
)
estate_refresh_job = dg.define_asset_job(
    "estate_refresh",
    selection=REFRESH,
    description="Rebuild the dbt models over the raw feeds as they are now (for example "
    "after a scenario changed them or an incident's fix was applied), run the monitors, "
    "profile, and re-ingest into DataHub.",
)
