import os


def model(dbt, session):
    dbt.config(materialized="table")
    ok = os.path.exists("dbt_project.yml") and "name: echo" in open("dbt_project.yml").read()
    here = os.path.exists("w.duckdb")
    return session.sql(
        "select {} as cwd_is_echo, {} as db_in_cwd".format(str(ok).lower(), str(here).lower())
    )
