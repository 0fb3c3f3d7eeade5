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
		{"SELECT * FROM t WHERE id = 1 FOR UPDATE", "locking_read read=t"},
		{"SELECT * FROM t WHERE id = 1 FOR UPDATE SKIP LOCKED", "locking_read read=t"},
		{"SELECT * FROM t FOR SHARE NOWAIT", "locking_read read=t"},
		{"SELECT * FROM t LOCK IN SHARE MODE", "locking_read read=t"},
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
		{"SELECT a INTO @x FROM t", "write read=t side-effects"},
		{"SELECT * FROM t INTO OUTFILE '/tmp/t.csv'", "write read=t side-effects"},
		{"CALL refresh_totals(1)", "write unknown-tables"},
		{"LOAD DATA LOCAL INFILE '/tmp/x' REPLACE INTO TABLE db.t1 FIELDS TERMINATED BY ','", "write written=db.t1"},
		{"LOAD XML INFILE 'x.xml' INTO TABLE t ROWS IDENTIFIED BY '<row>'", "write written=t"},
		{"SELECT NEXTVAL(seq1)", "write written=seq1 side-effects"},
		{"SELECT NEXT VALUE FOR s.seq1", "write written=s.seq1 side-effects"},
		{"SELECT SETVAL(seq1, 100)", "write written=seq1 side-effects"},
		{"INSERT INTO t VALUES (NEXT VALUE FOR seq1, 'a')", "write written=t,seq1 side-effects"},
		// session state
		{"SELECT LASTVAL(seq1)", "session read=seq1"},
		{"SELECT PREVIOUS VALUE FOR seq1", "session read=seq1"},
		{"SELECT GET_LOCK('job', 10)", "session side-effects"},
		{"DO RELEASE_LOCK('job')", "session side-effects"},
		{"SELECT LAST_INSERT_ID()", "session"},
		{"SELECT LAST_INSERT_ID(5)", "session side-effects"},
		{"SELECT FOUND_ROWS()", "session"},
		{"SELECT @a, @@session.sql_mode", "session"},
		{"SELECT @n := @n + 1 FROM t", "session read=t"},
		{"SET autocommit = 0", "session"},
		{"SET NAMES utf8mb4 COLLATE utf8mb4_bin", "session"},
		{"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", "session"},
		{"SET @x = (SELECT MAX(id) FROM t)", "session read=t"},
		{"USE shop", "session"},
		{"PREPARE s1 FROM 'SELECT * FROM t WHERE id = ?'", "session"},
		{"EXECUTE s1 USING @id", "session unknown-tables"},
		{"DEALLOCATE PREPARE s1", "session"},
		{"LOCK TABLES t READ, u WRITE", "session"},
		{"UNLOCK TABLES", "session"},
		{"CREATE TEMPORARY TABLE tmp (a INT)", "session written=tmp"},
		{"DROP TEMPORARY TABLE IF EXISTS tmp", "session written=tmp"},
		// transactions
		{"BEGIN", "transaction txn-start"},
		{"begin work", "transaction txn-start"},
		{"START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY", "transaction txn-start"},
		{"COMMIT", "transaction txn-end"},
		{"COMMIT WORK AND CHAIN", "transaction txn-start txn-end"},
		{"COMMIT AND NO CHAIN NO RELEASE", "transaction txn-end"},
		{"ROLLBACK", "transaction txn-end"},
		{"ROLLBACK WORK TO SAVEPOINT sp1", "transaction"},
		{"SAVEPOINT sp1", "transaction"},
		{"RELEASE SAVEPOINT sp1", "transaction"},
		{"XA START 'x1'", "transaction txn-start"},
		{"XA END 'x1'", "transaction"},
		{"XA COMMIT 'x1'", "transaction txn-end"},
		// statements preceded by others
		{"SET STATEMENT max_statement_time = 1 FOR SELECT * FROM t", "read read=t"},
		{"SET STATEMENT max_statement_time = 1 FOR UPDATE t SET a = 1", "write written=t"},
		{"EXPLAIN SELECT * FROM t", "other read=t"},
		{"EXPLAIN ANALYZE UPDATE t SET a = 1", "write written=t"},
		{"ANALYZE FORMAT=JSON DELETE FROM t", "write written=t"},
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
		{"GRANT SELECT ON shop.* TO 'app'@'%'", "ddl unknown-tables"},
		// other
		{"SHOW TABLES", "other"},
		{"SHOW FULL PROCESSLIST", "other"},
		{"DESCRIBE t", "other"},
		{"DO SLEEP(1)", "other"},
		{"KILL QUERY 12", "other"},
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
