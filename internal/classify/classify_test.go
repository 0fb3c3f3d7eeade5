package classify

import (
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	cases := []struct{ sql, want string }{
		// sysbench
		{"SELECT c FROM sbtest1 WHERE id=?", "read read=sbtest1"},
		{"SELECT SUM(k) FROM sbtest3 WHERE id BETWEEN ? AND ?", "read read=sbtest3"},
		{"UPDATE sbtest2 SET c=? WHERE id=?", "write written=sbtest2"},
		{"DELETE FROM sbtest1 WHERE id=?", "write written=sbtest1"},
		{"INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)", "write written=sbtest1"},
		// reads
		{"select * from db1.t1 as a join `db 2`.`t``2` b on a.id = b.id", "read read=db1.t1,db 2.t`2"},
		{"SELECT * FROM a, b JOIN c ON b.x = c.x, d WHERE a.y IN (SELECT y FROM e)", "read read=a,b,c,d,e"},
		{"SELECT * FROM t1 LEFT OUTER JOIN t2 USING (id) STRAIGHT_JOIN t3 ON 1", "read read=t1,t2,t3"},
		{"SELECT * FROM (SELECT a FROM t1) AS d, t2", "read read=t1,t2"},
		{"SELECT EXTRACT(YEAR FROM created), TRIM(BOTH 'x' FROM name) FROM users", "read read=users"},
		{"SELECT * FROM t FORCE INDEX (PRIMARY) WHERE a = 1", "read read=t"},
		{"SELECT 1 FROM DUAL", "read"},
		{"(SELECT a FROM t1) UNION ALL (SELECT b FROM t2) ORDER BY 1", "read read=t1,t2"},
		{"WITH RECURSIVE c (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT * FROM c JOIN t ON t.id = c.n", "read read=t"},
		{"TABLE t1", "read read=t1"},
		{"VALUES (1, 2), (3, 4)", "read"},
		{"SELECT * FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.id = t.id)", "read read=t,u"},
		{"SELECT * FROM t1 WHERE a = ANY (SELECT b FROM t2)", "read read=t1,t2"},
		// locking reads
		{"SELECT * FROM t WHERE id = 1 FOR UPDATE", "locking_read read=t volatile"},
		{"SELECT * FROM t WHERE id = 1 FOR UPDATE SKIP LOCKED", "locking_read read=t volatile"},
		{"SELECT * FROM t FOR SHARE NOWAIT", "locking_read read=t volatile"},
		{"SELECT * FROM t LOCK IN SHARE MODE", "locking_read read=t volatile"},
		{"SELECT * FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '2024-01-01 00:00:00'", "read read=t"},
		// writes, also the ones that hide
		{"INSERT LOW_PRIORITY IGNORE INTO t SELECT * FROM s WHERE x IN (SELECT y FROM u)", "write read=s,u written=t"},
		{"INSERT INTO t (a, b) VALUES (1, 2) ON DUPLICATE KEY UPDATE a = VALUES(a), b = b + 1", "write written=t"},
		{"INSERT INTO t VALUE (1)", "write written=t"},
		{"REPLACE INTO t SET a = 1", "write written=t"},
		{"INSERT INTO t VALUES (1) RETURNING id", "write written=t"},
		{"UPDATE LOW_PRIORITY t1 JOIN t2 ON t1.id = t2.id SET t1.a = t2.b", "write written=t1,t2"},
		{"UPDATE t SET a = (SELECT MAX(b) FROM s) WHERE id IN (SELECT id FROM u)", "write read=s,u written=t"},
		{"DELETE t1, t2 FROM t1 INNER JOIN t2 ON t1.id = t2.id WHERE t1.id = 1", "write read=t1,t2 written=t1,t2"},
		{"DELETE a FROM t1 AS a JOIN t2 b ON a.id = b.id", "write read=t1,t2 written=t1"},
		{"DELETE FROM t1, t2 USING t1 JOIN t2 JOIN t3", "write read=t1,t2,t3 written=t1,t2"},
		{"DELETE QUICK IGNORE FROM t WHERE id IN (SELECT id FROM u) ORDER BY id LIMIT 10", "write read=u written=t"},
		{"DELETE HISTORY FROM t BEFORE SYSTEM_TIME '2024-01-01'", "write written=t"},
		{"DELETE FROM t WHERE id = 1 RETURNING id", "write written=t"},
		{"WITH x AS (SELECT id FROM s) UPDATE t JOIN x USING (id) SET t.a = 1", "write read=s written=t"},
		{"WITH x AS (SELECT id FROM s) DELETE FROM t WHERE id IN (SELECT id FROM x)", "write read=s written=t"},
		{"SELECT a INTO @x FROM t", "write read=t side-effects volatile uses=user_variable"},
		{"SELECT * FROM t INTO OUTFILE '/tmp/t.csv'", "write read=t side-effects volatile"},
		{"CALL refresh_totals(1)", "write unknown-tables volatile"},
		{"LOAD DATA LOCAL INFILE '/tmp/x' REPLACE INTO TABLE db.t1 FIELDS TERMINATED BY ','", "write written=db.t1"},
		{"LOAD XML INFILE 'x.xml' INTO TABLE t ROWS IDENTIFIED BY '<row>'", "write written=t"},
		{"SELECT NEXTVAL(seq1)", "write written=seq1 side-effects volatile"},
		{"SELECT NEXT VALUE FOR s.seq1", "write written=s.seq1 side-effects volatile"},
		{"SELECT SETVAL(seq1, 100)", "write written=seq1 side-effects volatile"},
		{"INSERT INTO t VALUES (NEXT VALUE FOR seq1, 'a')", "write written=t,seq1 side-effects volatile"},
		// session state
		{"SELECT LASTVAL(seq1)", "session read=seq1 volatile"},
		{"SELECT PREVIOUS VALUE FOR seq1", "session read=seq1 volatile"},
		{"SELECT GET_LOCK('job', 10)", "session side-effects volatile uses=get_lock"},
		{"DO RELEASE_LOCK('job')", "session side-effects volatile uses=release_lock"},
		{"SELECT LAST_INSERT_ID()", "session volatile uses=last_insert_id"},
		{"SELECT LAST_INSERT_ID(5)", "session side-effects volatile uses=set_last_insert_id"},
		{"SELECT FOUND_ROWS()", "session volatile"},
		{"SELECT @a, @@session.sql_mode", "session volatile"},
		{"SELECT @n := @n + 1 FROM t", "session read=t volatile uses=user_variable"},
		{"SET autocommit = 0", "session"},
		{"SET NAMES utf8mb4 COLLATE utf8mb4_bin", "session"},
		{"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", "session"},
		{"SET @x = (SELECT MAX(id) FROM t)", "session read=t volatile uses=user_variable"},
		{"USE shop", "session"},
		{"PREPARE s1 FROM 'SELECT * FROM t WHERE id = ?'", "session uses=prepare"},
		{"EXECUTE s1 USING @id", "session unknown-tables volatile"},
		{"DEALLOCATE PREPARE s1", "session uses=deallocate"},
		{"LOCK TABLES t READ, u WRITE", "session volatile uses=lock_tables"},
		{"UNLOCK TABLES", "session uses=unlock_tables"},
		{"CREATE TEMPORARY TABLE tmp (a INT)", "session written=tmp uses=temporary_table"},
		{"DROP TEMPORARY TABLE IF EXISTS tmp", "session written=tmp uses=drop_temporary_table"},
		// transactions
		{"BEGIN", "transaction txn-start"},
		{"begin work", "transaction txn-start"},
		{"START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY", "transaction txn-start read-only"},
		{"start transaction read only", "transaction txn-start read-only"},
		{"START TRANSACTION READ WRITE, WITH CONSISTENT SNAPSHOT", "transaction txn-start read-write"},
		{"START TRANSACTION", "transaction txn-start"},
		{"/* gk:consistency=session */ START TRANSACTION READ ONLY", "transaction txn-start read-only"},
		{"COMMIT", "transaction txn-end"},
		{"COMMIT WORK AND CHAIN", "transaction txn-start txn-end"},
		{"COMMIT AND NO CHAIN NO RELEASE", "transaction txn-end"},
		{"ROLLBACK", "transaction txn-end"},
		{"ROLLBACK WORK TO SAVEPOINT sp1", "transaction"},
		{"SAVEPOINT sp1", "transaction"},
		{"RELEASE SAVEPOINT sp1", "transaction"},
		{"XA START 'x1'", "transaction txn-start uses=xa_start"},
		{"XA END 'x1'", "transaction"},
		{"XA COMMIT 'x1'", "transaction txn-end uses=xa_end"},
		// statements preceded by others
		{"SET STATEMENT max_statement_time = 1 FOR SELECT * FROM t", "read read=t"},
		{"SET STATEMENT max_statement_time = 1 FOR UPDATE t SET a = 1", "write written=t"},
		{"EXPLAIN SELECT * FROM t", "other read=t"},
		{"EXPLAIN ANALYZE UPDATE t SET a = 1", "write written=t volatile"},
		{"ANALYZE FORMAT=JSON DELETE FROM t", "write written=t volatile"},
		// DDL
		{"CREATE TABLE IF NOT EXISTS shop.orders (id INT PRIMARY KEY, total DECIMAL(10, 2))", "ddl written=shop.orders"},
		{"CREATE OR REPLACE TABLE t2 AS SELECT * FROM t1", "ddl read=t1 written=t2"},
		{"CREATE UNIQUE INDEX i1 ON t (a, b)", "ddl written=t"},
		{"CREATE SEQUENCE s1 START WITH 1 INCREMENT BY 1", "ddl written=s1"},
		{"CREATE VIEW v AS SELECT * FROM t", "ddl unknown-tables read=t"},
		{"ALTER ONLINE TABLE t ADD COLUMN c INT", "ddl written=t"},
		{"ALTER TABLE t ADD SYSTEM VERSIONING", "ddl written=t"},
		{"DROP TABLE IF EXISTS a, db.b", "ddl written=a,db.b"},
		{"DROP INDEX i1 ON t", "ddl written=t"},
		{"RENAME TABLE a TO b, c TO d", "ddl written=a,b,c,d"},
		{"TRUNCATE TABLE t", "ddl written=t"},
		{"TRUNCATE t", "ddl written=t"},
		{"GRANT SELECT ON shop.* TO 'app'@'%'", "ddl unknown-tables volatile"},
		// other
		{"SHOW TABLES", "other volatile"},
		{"SHOW FULL PROCESSLIST", "other volatile"},
		{"DESCRIBE t", "other"},
		{"DO SLEEP(1)", "other volatile"},
		{"KILL QUERY 12", "other volatile uses=kill kill-query=12"},
		{"FLUSH TABLES", "other"},
		{"", "other"},
		{"  -- nothing\n", "other"},
		{"SELECT 1;", "read"},
		// unsure
		{"SELECT 1; DELETE FROM t", "write unsure unknown-tables written=t multi"},
		{"SELECT 'unterminated", "write unsure unknown-tables"},
		{"SELECT * FROM t WHERE (a = 1", "write unsure unknown-tables read=t"},
		{"SELECT a) FROM t", "write unsure unknown-tables read=t"},
		{"SELECT 1 /* unterminated", "write unsure unknown-tables"},
		{"BEGIN NOT ATOMIC SELECT 1; END", "write unsure unknown-tables multi"},
		{"frobnicate everything", "write unsure unknown-tables"},
		{"42", "write unsure unknown-tables"},
		// executable comments are code, others are not
		{"/*!40101 SET NAMES utf8 */", "session"},
		{"/*M!100500 DELETE FROM t */", "write written=t"},
		{"SELECT /*! STRAIGHT_JOIN */ a FROM t /* FOR UPDATE */", "read read=t"},
		{"/* gk:type=checkout */ SELECT 1", "read tag=checkout"},
		{"/*gk:type=best_sellers*/ SELECT 1", "read tag=best_sellers"},
		// a tag anywhere counts (sqlcommenter appends it); the first one wins
		{"SELECT 1 /* gk:type=late */", "read tag=late"},
		{"SELECT /* gk:type=inner */ 1 /* gk:type=second */", "read tag=inner"},
	}
	c := New()
	for _, tc := range cases {
		if got := c.Classify([]byte(tc.sql)).String(); got != tc.want {
			t.Errorf("%q\n got %s\nwant %s", tc.sql, got, tc.want)
		}
	}
}

func TestUses(t *testing.T) {
	cases := []struct {
		sql  string
		want Uses
	}{
		// user variables: assigned, not read
		{"SET @x = 1", UsesUserVariable},
		{"set @x := 1", UsesUserVariable},
		{"SET @`a b` = 1, @c = 2", UsesUserVariable},
		{"SET SESSION sql_mode = '', @x = 1", UsesUserVariable},
		{"SELECT @y := 2", UsesUserVariable},
		{"SELECT 1 INTO @q", UsesUserVariable},
		{"SELECT a, b INTO @a, @b FROM t WHERE id = 1", UsesUserVariable},
		{"SELECT a FROM t WHERE id = 1 INTO @a", UsesUserVariable},
		{"UPDATE t SET a = (@n := @n + 1)", UsesUserVariable},
		{"CALL totals(1, @sum)", UsesUserVariable},
		{"LOAD DATA INFILE 'f' INTO TABLE t (a, @b) SET c = @b * 2", UsesUserVariable},
		{"SET STATEMENT max_statement_time = 1 FOR SELECT @a := 1", UsesUserVariable},
		{"BEGIN NOT ATOMIC SET @x = 1; END", UsesUserVariable},
		{"BEGIN NOT ATOMIC DECLARE c CURSOR FOR SELECT 1; OPEN c; FETCH c INTO @v; END", UsesUserVariable},
		{"SELECT @x", 0},
		{"SELECT * FROM t WHERE id = @x", 0},
		{"SELECT @x = 1", 0},
		{"UPDATE t SET a = @x WHERE b = @y", 0},
		{"INSERT INTO t VALUES (@x)", 0},
		{"EXECUTE s1 USING @id", 0},
		{"SELECT CAST(a AS CHAR CHARACTER SET utf8mb4), @x = 1 FROM t", 0},
		{"SELECT a FROM t INTO OUTFILE '/tmp/t.csv'", 0},
		{"SELECT 'SET @x = 1'", 0},
		// named locks
		{"SELECT GET_LOCK('job', 10)", UsesGetLock},
		{"do get_lock('job', 0)", UsesGetLock},
		{"SELECT IF(GET_LOCK('job', 0), 1, 0) FROM t", UsesGetLock},
		{"DO RELEASE_LOCK('job')", UsesReleaseLock},
		{"SELECT RELEASE_ALL_LOCKS()", UsesReleaseAllLocks},
		{"SELECT 'GET_LOCK('", 0},
		{"SELECT 1 /* GET_LOCK('job', 1) */", 0},
		{"SELECT 1 -- RELEASE_LOCK('job')\n", 0},
		{"# SELECT GET_LOCK('job', 1)\nSELECT 1", 0},
		{"SELECT `GET_LOCK`('job', 1)", 0},
		{"SELECT get_lock FROM locks", 0},
		// table locks
		{"LOCK TABLES t READ, u WRITE", UsesLockTables},
		{"lock table t write", UsesLockTables},
		{"LOCK TABLES t WRITE WAIT 10", UsesLockTables},
		{"UNLOCK TABLES", UsesUnlockTables},
		{"unlock table", UsesUnlockTables},
		{"SELECT * FROM t LOCK IN SHARE MODE", 0},
		{"SELECT * FROM t WHERE id = 1 FOR UPDATE", 0},
		// temporary tables
		{"CREATE TEMPORARY TABLE tmp (a INT)", UsesTemporaryTable},
		{"CREATE OR REPLACE TEMPORARY TABLE tmp AS SELECT 1", UsesTemporaryTable},
		{"CREATE TEMPORARY TABLE IF NOT EXISTS tmp LIKE t", UsesTemporaryTable},
		{"CREATE TEMPORARY SEQUENCE s", UsesTemporaryTable},
		{"DROP TEMPORARY TABLE IF EXISTS tmp", UsesDropTemporaryTable},
		{"CREATE TABLE t (a INT)", 0},
		{"DROP TABLE t", 0},
		// prepared statements in text
		{"PREPARE s1 FROM 'SELECT GET_LOCK(?, 1)'", UsesPrepare},
		{"PREPARE s1 FROM @sql", UsesPrepare},
		{"DEALLOCATE PREPARE s1", UsesDeallocate},
		{"DROP PREPARE s1", UsesDeallocate},
		// found rows and the last insert id
		{"SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 10", UsesFoundRows},
		{"(SELECT SQL_CALC_FOUND_ROWS a FROM t LIMIT 1) UNION (SELECT b FROM u)", UsesFoundRows},
		{"SELECT FOUND_ROWS()", 0},
		{"SELECT LAST_INSERT_ID()", UsesLastInsertID},
		{"INSERT INTO log (ref) VALUES (last_insert_id())", UsesLastInsertID},
		{"UPDATE seq SET id = LAST_INSERT_ID(id + 1)", UsesSetLastInsertID},
		{"SELECT 'LAST_INSERT_ID()'", 0},
		// the next transaction
		{"SET TRANSACTION ISOLATION LEVEL READ COMMITTED", UsesNextTransaction},
		{"set transaction read only", UsesNextTransaction},
		{"SET @@transaction_isolation = 'READ-COMMITTED'", UsesNextTransaction},
		{"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", 0},
		{"SET GLOBAL TRANSACTION READ WRITE", 0},
		{"SET @@session.transaction_isolation = 'READ-COMMITTED'", 0},
		{"SET transaction_isolation = 'READ-COMMITTED'", 0},
		// session tracking
		{"SET session_track_schema = OFF", UsesSessionTracking},
		{"SET SESSION session_track_system_variables = '*'", UsesSessionTracking},
		{"SET @@session.SESSION_TRACK_STATE_CHANGE = 1", UsesSessionTracking},
		{"SET @@session_track_gtids = OWN_GTID", UsesSessionTracking},
		{"SET GLOBAL session_track_schema = ON", UsesSessionTracking},
		{"SET PERSIST session_track_schema = ON", UsesSessionTracking},
		{"SET sql_mode = '', `session_track_transaction_info` = STATE", UsesSessionTracking},
		{"SET STATEMENT session_track_schema = OFF FOR SELECT 1", 0},
		{"SELECT * FROM session_track_log", 0},
		// handlers, XA, connection ids
		{"HANDLER t OPEN", UsesHandler},
		{"HANDLER t READ `PRIMARY` FIRST", UsesHandler},
		{"HANDLER t CLOSE", UsesHandler},
		{"XA START 'x1'", UsesXAStart},
		{"XA BEGIN 'x1'", UsesXAStart},
		{"XA END 'x1'", 0},
		{"XA COMMIT 'x1'", UsesXAEnd},
		{"XA ROLLBACK 'x1'", UsesXAEnd},
		{"SELECT * FROM t WHERE id = CONNECTION_ID()", UsesConnectionID},
		{"SELECT `connection_id`()", 0},
		{"KILL 5", UsesKill},
		{"KILL CONNECTION_ID()", UsesKill | UsesConnectionID},
		// what sets nothing lasting, or what tracking reports
		{"SET STATEMENT max_statement_time=1 FOR SELECT 1", 0},
		{"SET @@session.sql_mode = 'ANSI'", 0},
		{"SET sql_mode = 'ANSI'", 0},
		{"SET NAMES utf8mb4", 0},
		{"SET autocommit = 0", 0},
		{"USE shop", 0},
		// statements that do not run what they name
		{"EXPLAIN SELECT GET_LOCK('job', 1)", 0},
		{"EXPLAIN ANALYZE SELECT GET_LOCK('job', 1)", UsesGetLock},
		{"CREATE VIEW v AS SELECT CONNECTION_ID()", 0},
		{"CREATE FUNCTION f() RETURNS INT RETURN GET_LOCK('job', 1)", 0},
		// every statement of a text counts
		{"SET @a=1; SELECT GET_LOCK('x',1)", UsesUserVariable | UsesGetLock},
		{"LOCK TABLES t WRITE; UNLOCK TABLES", UsesLockTables | UsesUnlockTables},
		{"SELECT 1; XA START 'x'; SET session_track_schema = ON", UsesXAStart | UsesSessionTracking},
		{"EXPLAIN SELECT GET_LOCK('a', 1); SELECT RELEASE_LOCK('a')", UsesReleaseLock},
	}
	c := New()
	for _, tc := range cases {
		if got := c.Classify([]byte(tc.sql)).Uses; got != tc.want {
			t.Errorf("%q\n uses %s\nwant %s", tc.sql, got, tc.want)
		}
	}
}

func TestKill(t *testing.T) {
	cases := []struct {
		sql   string
		id    uint64
		query bool
	}{
		{"KILL 5", 5, false},
		{"kill query 7", 7, true},
		{"KILL CONNECTION 9", 9, false},
		{"KILL HARD QUERY 3", 3, true},
		{"KILL SOFT 11;", 11, false},
		{"/* admin */ KILL 18446744073709551615", 18446744073709551615, false},
		{"KILL QUERY ID 4", 0, false},
		{"KILL USER bob", 0, false},
		{"KILL CONNECTION_ID()", 0, false},
		{"KILL 5 + 1", 0, false},
		{"KILL 0x10", 0, false},
		{"KILL 1.5", 0, false},
		{"KILL '5'", 0, false},
		{"KILL 18446744073709551616", 0, false},
		{"KILL 5; SELECT 1", 0, false},
	}
	c := New()
	for _, tc := range cases {
		r := c.Classify([]byte(tc.sql))
		if r.Uses&UsesKill == 0 || r.KillID != tc.id || r.KillQuery != tc.query {
			t.Errorf("%q: uses %s, KillID %d, KillQuery %v; want kill, %d, %v", tc.sql, r.Uses, r.KillID, r.KillQuery, tc.id, tc.query)
		}
		if r.Kind != Other && !r.Unsure {
			t.Errorf("%q: kind %s, want other", tc.sql, r.Kind)
		}
	}
}

func TestConnectionIDOnly(t *testing.T) {
	cases := []struct {
		sql  string
		ok   bool
		name string
	}{
		{"SELECT CONNECTION_ID()", true, "CONNECTION_ID()"},
		{"select connection_id()", true, "connection_id()"},
		{"SELECT CONNECTION_ID( )", true, "CONNECTION_ID( )"},
		{"select connection_id() as id", true, "id"},
		{"SELECT CONNECTION_ID() cid", true, "cid"},
		{`SELECT CONNECTION_ID() AS "x y"`, true, "x y"},
		{"SELECT CONNECTION_ID() AS 'it''s'", true, "it's"},
		{"SELECT CONNECTION_ID() AS `a``b`", true, "a`b"},
		{"/* c */ SELECT CONNECTION_ID();", true, "CONNECTION_ID()"},
		{"SELECT /* gk:type=x */ CONNECTION_ID() -- trailing\n", true, "CONNECTION_ID()"},
		{"/*!SELECT CONNECTION_ID() AS id */", true, "id"},
		{"SELECT CONNECTION_ID(), 1", false, ""},
		{"SELECT CONNECTION_ID() FROM dual", false, ""},
		{"SELECT * FROM t WHERE id = CONNECTION_ID()", false, ""},
		{"SELECT CONNECTION_ID() + 1", false, ""},
		{"SELECT CONNECTION_ID(1)", false, ""},
		{"SELECT CONNECTION_ID() AS", false, ""},
		{"SELECT CONNECTION_ID() AS select", false, ""},
		{"SELECT CONNECTION_ID() AS 'a\\'b'", false, ""},
		{"SELECT CONNECTION_ID() 'a' 'b'", false, ""},
		{"SELECT CONNECTION_ID() AS _utf8mb4'x'", false, ""},
		{"SELECT DISTINCT CONNECTION_ID()", false, ""},
		{"SELECT `CONNECTION_ID`()", false, ""},
		{"SELECT CONNECTION_ID(); SELECT 1", false, ""},
		{"SELECT CONNECTION_ID();;", false, ""},
		{"EXPLAIN SELECT CONNECTION_ID()", false, ""},
		{"SELECT CONNECTION_ID() AS 'x", false, ""},
	}
	c := New()
	for _, tc := range cases {
		r := c.Classify([]byte(tc.sql))
		if r.ConnectionIDOnly != tc.ok || string(r.ConnectionIDName) != tc.name {
			t.Errorf("%q: ConnectionIDOnly %v, name %q; want %v, %q", tc.sql, r.ConnectionIDOnly, r.ConnectionIDName, tc.ok, tc.name)
		}
		if r.ConnectionIDOnly && (r.Kind != Read || r.Uses != UsesConnectionID) {
			t.Errorf("%q: %s", tc.sql, r)
		}
	}
}

func TestDigest(t *testing.T) {
	cases := []struct{ sql, want string }{
		{"SELECT c FROM sbtest1 WHERE id=5", "SELECT c FROM sbtest1 WHERE id = ?"},
		{"select  c\n\tfrom sbtest1 -- comment\n where id = ?", "SELECT c FROM sbtest1 WHERE id = ?"},
		{"SELECT * FROM t WHERE a IN (1, 2, 3) AND b IN ('x') AND c IN (?, ?)", "SELECT * FROM t WHERE a IN (...) AND b IN (...) AND c IN (...)"},
		{"SELECT * FROM t WHERE a IN (x, 1)", "SELECT * FROM t WHERE a IN (x, ?)"},
		{"SELECT * FROM t WHERE a IN (-1, +2)", "SELECT * FROM t WHERE a IN (...)"},
		{"SELECT -1, a - 1, a-1, (- 2), x = -3.5e2", "SELECT ?, a - ?, a - ?, (?), x = ?"},
		{"INSERT INTO t (a, b) VALUES (1, 'x'), (2, 'y'), (3, 'z')", "INSERT INTO t (a, b) VALUES (...)"},
		{"INSERT INTO t VALUES (1, NOW()), (2, NOW())", "INSERT INTO t VALUES (?, NOW())"},
		{"INSERT INTO t VALUES (1, NOW()), (2, 3)", "INSERT INTO t VALUES (?, NOW()), (...)"},
		{"SELECT COUNT(*), sleep(0.5) FROM `t` JOIN `select` ON 1", "SELECT COUNT(*), SLEEP(?) FROM t JOIN `select` ON ?"},
		{"SELECT x'0A', X'0b', 0x1F, b'101', N'abc', _utf8mb4'abc', 1.5, .5, 1e10, TRUE, NULL", "SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, TRUE, NULL"},
		{"SELECT 'it''s', \"a \\\" b\"", "SELECT ?, ?"},
		{"SELECT a FROM t WHERE b = @v AND c = @@session.sql_mode", "SELECT a FROM t WHERE b = @v AND c = @@session.sql_mode"},
		{"SELECT /*+ MAX_EXECUTION_TIME(1) */ a # trailing\nFROM t", "SELECT a FROM t"},
		{"/*!40101 SET @OLD = @@SQL_MODE */", "SET @OLD = @@SQL_MODE"},
		{"/* gk:type=x */ SELECT t.* FROM db.t", "SELECT t.* FROM db.t"},
		{"select a<=>b, a->>'$.x', a:=1", "SELECT a <=> b, a ->> ?, a := ?"},
	}
	c := New()
	for _, tc := range cases {
		if got := string(c.Classify([]byte(tc.sql)).Digest); got != tc.want {
			t.Errorf("%q\n got %q\nwant %q", tc.sql, got, tc.want)
		}
	}
}

func TestHashIsStable(t *testing.T) {
	// The hash keys saved estimates: it must never change between releases or machines.
	c := New()
	r := c.Classify([]byte("select c from sbtest1 where id = 7"))
	if r.Hash != 0x6ed4f28c61f3bc26 || r.Hash != Hash([]byte("SELECT c FROM sbtest1 WHERE id = ?")) {
		t.Fatalf("hash %#x of %q changed", r.Hash, r.Digest)
	}
	if Hash(nil) != 14695981039346656037 {
		t.Fatal("hash of nothing changed")
	}
}

func TestDigestIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i := range 5000 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("column_number_")
		b.WriteString(strings.Repeat("x", i%7))
	}
	b.WriteString(" FROM t")
	r := New().Classify([]byte(b.String()))
	if len(r.Digest) > MaxDigest || len(r.Digest) < MaxDigest-100 {
		t.Fatalf("digest of %d bytes, want at most and near %d", len(r.Digest), MaxDigest)
	}
	if r.Kind != Read || len(r.Read) != 1 {
		t.Fatalf("a long select is %s", r)
	}
}

func TestManyTables(t *testing.T) {
	var b strings.Builder
	b.WriteString("SELECT * FROM t0")
	for i := 1; i < 40; i++ {
		b.WriteString(" JOIN t")
		b.WriteString(strings.Repeat("1", i))
		b.WriteString(" USING (id)")
	}
	r := New().Classify([]byte(b.String()))
	if len(r.Read) != maxTables || !r.UnknownTables || r.Unsure || r.Kind != Read {
		t.Fatalf("40 tables: %d listed, result %s", len(r.Read), r)
	}
}

func TestDeepNesting(t *testing.T) {
	sql := "SELECT " + strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100)
	r := New().Classify([]byte(sql))
	if !r.Unsure {
		t.Fatalf("100 levels of parentheses: %s", r)
	}
}

func TestReuse(t *testing.T) {
	// A result stays valid until the next call; the next call must not see the last one's state.
	c := New()
	c.Classify([]byte("WITH t AS (SELECT 1) SELECT * FROM t"))
	if r := c.Classify([]byte("SELECT * FROM t")); len(r.Read) != 1 {
		t.Fatalf("a CTE name leaked into the next statement: %s", r)
	}
	c.Classify([]byte("/* gk:type=a */ SELECT (1"))
	if r := c.Classify([]byte("SELECT 1")); r.Unsure || r.Tag != nil {
		t.Fatalf("state leaked into the next statement: %s", r)
	}
	c.Classify([]byte("KILL QUERY 5"))
	c.Classify([]byte("SELECT CONNECTION_ID() AS `a``b`"))
	if r := c.Classify([]byte("SELECT 1")); r.Uses != 0 || r.KillID != 0 || r.KillQuery || r.ConnectionIDOnly || r.ConnectionIDName != nil {
		t.Fatalf("connection state leaked into the next statement: %s", r)
	}
	c.Classify([]byte("BEGIN NOT ATOMIC SET @x = 1; END"))
	if r := c.Classify([]byte("SELECT CAST(a AS CHAR CHARACTER SET latin1), @x = 1 FROM t")); r.Uses != 0 {
		t.Fatalf("a SET list leaked into the next statement: %s", r)
	}
}

func TestKindNames(t *testing.T) {
	for k := range NumKinds {
		if k.String() == "unknown" || k.String() == "" {
			t.Errorf("kind %d has no name", k)
		}
	}
	if NumKinds.String() != "unknown" {
		t.Error("out-of-range kind has a name")
	}
}

func TestRoutingHints(t *testing.T) {
	var c Classifier
	tests := []struct{ sql, consistency, session string }{
		{"/* gk:consistency=session gk:session=cart-7 */ SELECT 1", "session", "cart-7"},
		{"SELECT 1 /* gk:type=x */ /* gk:consistency=eventual */", "eventual", ""},
		{"/* gk:session=u:42 */ UPDATE t SET a = 1", "", "u:42"},
		{"/* gk:consistency=strong */ SELECT 1 /* gk:consistency=eventual */", "strong", ""},
		{"SELECT 1", "", ""},
		{"SELECT '/* gk:consistency=eventual */'", "", ""},
	}
	for _, tt := range tests {
		r := c.Classify([]byte(tt.sql))
		if string(r.Consistency) != tt.consistency || string(r.SessionKey) != tt.session {
			t.Errorf("%s: consistency %q session %q, want %q %q", tt.sql, r.Consistency, r.SessionKey, tt.consistency, tt.session)
		}
	}
}

func TestCallsFunction(t *testing.T) {
	var c Classifier
	tests := []struct {
		sql   string
		calls bool
	}{
		{"SELECT f(x) FROM t", true},
		{"SELECT shop.price_of(id) FROM items", true},
		{"SELECT `f` (1)", true},
		{"SELECT COUNT(*), CONCAT(a, b) FROM t WHERE id IN (1, 2)", false},
		{"INSERT INTO t (a, b) VALUES (1, 2)", false},
		{"SELECT a FROM t JOIN u USING (id) FORCE INDEX (i)", false},
		{"SELECT * FROM (SELECT 1) d WHERE (a) = 1", false},
		{"SELECT db.count(x) FROM t", true},
		{"SELECT db.`now`() FROM t", true},
		{"SELECT t.count, t.now FROM t", false},
		{"WITH c (n) AS (SELECT 1) SELECT n FROM c", false},
		{"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r", false},
	}
	for _, tt := range tests {
		if r := c.Classify([]byte(tt.sql)); r.CallsFunction != tt.calls {
			t.Errorf("%s: CallsFunction %v, want %v", tt.sql, r.CallsFunction, tt.calls)
		}
	}
}

func TestVolatile(t *testing.T) {
	volatile := []string{
		// the clock
		"SELECT NOW()",
		"select now ()",
		"SELECT * FROM t WHERE created > NOW() - INTERVAL 1 DAY",
		"SELECT CURRENT_TIMESTAMP",
		"SELECT current_timestamp(6)",
		"SELECT CURRENT_DATE, CURRENT_TIME FROM t",
		"SELECT a FROM t WHERE d = CURRENT_DATE()",
		"SELECT CURDATE(), CURTIME()",
		"SELECT SYSDATE()",
		"SELECT UTC_DATE, UTC_TIME(), UTC_TIMESTAMP()",
		"SELECT LOCALTIME, LOCALTIMESTAMP()",
		"SELECT UNIX_TIMESTAMP()",
		"SELECT UNIX_TIMESTAMP(created) FROM t",
		// random and unique values
		"SELECT * FROM t ORDER BY RAND() LIMIT 1",
		"SELECT UUID(), UUID_SHORT()",
		"SELECT SYS_GUID()",
		"SELECT RANDOM_BYTES(16)",
		// the connection and the user
		"SELECT CONNECTION_ID()",
		"SELECT CURRENT_USER",
		"SELECT current_user()",
		"SELECT * FROM grants WHERE who = USER()",
		"SELECT SESSION_USER(), SYSTEM_USER()",
		"SELECT CURRENT_ROLE()",
		"SELECT LAST_INSERT_ID()",
		"SELECT ROW_COUNT()",
		"SELECT FOUND_ROWS()",
		// waits and locks
		"SELECT SLEEP(1)",
		"SELECT BENCHMARK(1000, MD5('a'))",
		"SELECT GET_LOCK('a', 1)",
		"SELECT RELEASE_LOCK('a')",
		"SELECT RELEASE_ALL_LOCKS()",
		"SELECT IS_FREE_LOCK('a'), IS_USED_LOCK('a')",
		"SELECT MASTER_POS_WAIT('bin.000001', 4)",
		"SELECT MASTER_GTID_WAIT('0-1-1', 1)",
		"SELECT * FROM t WHERE id = 1 FOR UPDATE",
		"SELECT * FROM t FOR SHARE",
		"SELECT * FROM t LOCK IN SHARE MODE",
		"LOCK TABLES t READ",
		// sequences
		"SELECT NEXTVAL(s)",
		"SELECT LASTVAL(s)",
		"SELECT SETVAL(s, 10)",
		"SELECT NEXT VALUE FOR s",
		"SELECT PREVIOUS VALUE FOR s",
		// variables, read or assigned
		"SELECT * FROM t WHERE id = @id",
		"SELECT @`a b`",
		"SELECT @@sql_mode",
		"SELECT @@session.time_zone, @@global.read_only",
		"SET @x = 1",
		"SELECT a INTO @x FROM t",
		"SELECT * FROM t INTO OUTFILE '/tmp/t.csv'",
		// functions the classifier does not know, which may read anything
		"SELECT price_of(id) FROM items",
		"SELECT shop.price_of(id) FROM items",
		"SELECT db.now() FROM t",
		"SELECT shop.sum(a) FROM t",
		"SELECT `now`()",
		// statements whose output is not a function of the data
		"SHOW STATUS",
		"SHOW WARNINGS",
		"HANDLER t READ NEXT",
		"KILL 5",
		"EXPLAIN ANALYZE SELECT * FROM t",
		"ANALYZE SELECT * FROM t",
		// executable comments are code; every statement of a text counts
		"SELECT /*!50000 NOW() */",
		"SELECT 1; SELECT NOW()",
		"SET STATEMENT max_statement_time = 1 FOR SELECT RAND()",
	}
	stable := []string{
		"SELECT c FROM sbtest1 WHERE id = ?",
		"SELECT COUNT(*), CONCAT(a, b), DATE_FORMAT(d, '%Y') FROM t WHERE id IN (1, 2)",
		"SELECT DATABASE(), SCHEMA(), VERSION()",
		"SELECT * FROM information_schema.tables",
		"SELECT * FROM performance_schema.threads",
		"SELECT * FROM mysql.user",
		"SELECT FROM_UNIXTIME(1700000000), DATE_ADD('2024-01-01', INTERVAL 1 DAY)",
		// names that are columns, strings, comments or quoted
		"SELECT now, rand, uuid, sleep, user, sysdate FROM t",
		"SELECT `now`, `current_timestamp`, `CURRENT_USER` FROM t",
		"SELECT t.current_date, t.localtime FROM t",
		"SELECT 'NOW()', \"CURRENT_TIMESTAMP\", 'it''s @x'",
		"SELECT 1 /* NOW() @x */ -- RAND()\n",
		"# SLEEP(1)\nSELECT 1",
		"SELECT a AS now FROM t ORDER BY now",
		"SELECT * FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '2024-01-01 00:00:00'",
		"WITH RECURSIVE c (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT * FROM c",
		"UPDATE t SET a = 1 WHERE id = 2",
		"EXPLAIN SELECT * FROM t",
		"SET autocommit = 0",
	}
	c := New()
	for _, sql := range volatile {
		if r := c.Classify([]byte(sql)); !r.Volatile {
			t.Errorf("%q: not volatile: %s", sql, r)
		}
	}
	for _, sql := range stable {
		if r := c.Classify([]byte(sql)); r.Volatile {
			t.Errorf("%q: volatile: %s", sql, r)
		}
	}
}
