"""Load feeds.sql into a DuckDB file with the clock pinned: verify.sh's stand-in for Upstream."""

import sys
from pathlib import Path

import duckdb

con = duckdb.connect(sys.argv[1])
con.execute("SET VARIABLE upstream_now = TIMESTAMP '2026-11-29 06:00:00'")
con.execute(Path(sys.argv[2]).read_text(encoding="utf-8"))
con.close()
