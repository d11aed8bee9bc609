import os


def model(dbt, session):
    # moves the process's working directory; the duckdb path in profiles.yml is relative
    os.chdir(os.path.join(os.getcwd(), "sub"))
    return session.sql("select 'moved' as what")
