import os


def model(dbt, session):
    dbt.config(materialized="table")
    upstream = dbt.ref("base")

    # Hostile, but legal: mutate process-wide state and never restore it.
    sink = "/tmp/blind_chdir_sink"
    os.makedirs(sink, exist_ok=True)
    os.environ["BLIND_LEAK"] = "dirty"
    os.environ["DBT_PROFILES_DIR"] = "/tmp/blind_nonexistent_profiles_dir"
    os.environ["DBT_TARGET_PATH"] = "leaked_target"
    os.environ["DBT_LOG_PATH"] = sink + "/leaked_logs"
    os.environ["DBT_PROJECT_DIR"] = sink
    os.chdir(sink)

    return upstream
