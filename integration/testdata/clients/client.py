"""Connects with a Python driver, runs the statement read from stdin and prints the rows
it returned, one repr a line, then "ok"; or the error as "code|message". With GK_AUTOCOMMIT=1
in the environment the connection runs in autocommit, as the server's default is, rather than
the driver's (PEP 249: a transaction from the first statement).
Usage: client.py pymysql|mysqldb HOST PORT USER PASSWORD DATABASE"""
import os
import sys

driver, host, port, user, password, database = sys.argv[1:7]
sql = sys.stdin.read()
try:
    if driver == "pymysql":
        import pymysql
        conn = pymysql.connect(host=host, port=int(port), user=user, password=password, database=database)
    else:
        import MySQLdb
        conn = MySQLdb.connect(host=host, port=int(port), user=user, passwd=password, db=database)
    if os.environ.get("GK_AUTOCOMMIT") == "1":
        conn.autocommit(True)
    cur = conn.cursor()
    cur.execute(sql)
    for row in cur.fetchall():
        print(repr(row))
    print("ok")
except Exception as e:  # the driver's error, whatever its class
    args = getattr(e, "args", ())
    if len(args) >= 2:
        print("%s|%s" % (args[0], args[1]))
    else:
        print("?|%s: %s" % (type(e).__name__, e))
