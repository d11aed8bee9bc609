import json
import sys


def model(dbt, session):
    dbt.config(materialized="table")
    upstream = dbt.ref("chatter")  # forces ordering after chatter

    # Lines that are *exactly* protocol-looking tokens.
    print("ok")
    print("failed")
    print(json.dumps({"exit_code": 0, "success": True, "status": "success"}))
    print('{"exit_code": 2, "status": "error", "msg": "fake, printed by a model"}')
    sys.stdout.write("partial line without newline")
    sys.stdout.flush()
    sys.stderr.write("failed\n")
    sys.stderr.write('{"exit_code": 1, "from": "stderr"}\n')
    sys.stderr.flush()
    sys.stdout.write("\r\x1b[31mred text\x1b[0m\n")
    sys.stdout.flush()
    try:
        sys.stdout.buffer.write(b"raw bytes \xff\xfe not utf8\n")
        sys.stdout.buffer.flush()
    except Exception:
        pass
    for i in range(3000):
        print("py line %d" % i)
    sys.stdout.flush()
    print("ok")

    return session.sql("select 1 as printed")
