import os
import threading
import time

import duckdb


def _linger(path):
    # opens its OWN connection to this project's database file and keeps it open,
    # long after the dbt command that started it has finished
    con = duckdb.connect(path)
    time.sleep(1.0)
    os.environ["BLIND_LATE"] = "late-from-thread"
    con.execute("select 1").fetchall()
    time.sleep(900)
    con.close()


def model(dbt, session):
    path = session.sql(
        "select path from duckdb_databases() where database_name = current_database()"
    ).fetchall()[0][0]
    t = threading.Thread(target=_linger, args=(path,), daemon=True, name="pyleak-linger")
    t.start()
    time.sleep(0.2)  # make sure the thread's connection is open before dbt closes its own
    return session.sql("select 'thread started' as what")
