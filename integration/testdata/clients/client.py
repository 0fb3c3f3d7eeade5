"""Connects with a Python driver, runs the statement read from stdin and prints "ok", or
the error as "code|message". Usage: client.py pymysql|mysqldb HOST PORT USER PASSWORD DATABASE"""
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
    cur = conn.cursor()
    cur.execute(sql)
    cur.fetchall()
    print("ok")
except Exception as e:  # the driver's error, whatever its class
    args = getattr(e, "args", ())
    if len(args) >= 2:
        print("%s|%s" % (args[0], args[1]))
    else:
        print("?|%s: %s" % (type(e).__name__, e))
