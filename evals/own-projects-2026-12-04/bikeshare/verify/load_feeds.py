import duckdb, sys
path = sys.argv[1]
con = duckdb.connect(path)
con.execute("SET VARIABLE upstream_now = TIMESTAMP '2026-11-29 06:00:00'")
con.execute(open(sys.argv[2]).read())
con.close()
