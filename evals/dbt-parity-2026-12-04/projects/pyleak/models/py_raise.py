def model(dbt, session):
    rel = session.sql("select 1 as never")
    if rel is not None:
        raise ValueError("pyleak: py_raise always fails")
    return rel
