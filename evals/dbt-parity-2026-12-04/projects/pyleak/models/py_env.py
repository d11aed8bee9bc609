import os


def model(dbt, session):
    # poisons the process environment: a later command that reuses this
    # process would see BLIND_LEAK in env_var()
    os.environ["BLIND_LEAK"] = "leaked-by-pyleak"
    return session.sql("select 'set' as what")
