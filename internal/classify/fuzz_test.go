package classify

import (
	"bytes"
	"testing"
)

// FuzzClassify: any text classifies without panicking, in one pass, within the bounds, and
// the same way every time.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{
		"SELECT c FROM sbtest1 WHERE id=?",
		"INSERT INTO t (a) VALUES (1), (2) ON DUPLICATE KEY UPDATE a = VALUES(a)",
		"DELETE a FROM t1 AS a JOIN t2 b USING (id)",
		"WITH RECURSIVE c AS (SELECT 1) SELECT * FROM c",
		"/*!40101 SET NAMES utf8 */; /* gk:type=x */ SELECT 'a''b' FOR UPDATE",
		"SELECT `a``b`.c FROM `x`.`y` WHERE d IN (-1, +2, 0x1f, b'1', N'x')",
		"SET STATEMENT a=1 FOR SELECT NEXT VALUE FOR s",
		"SET @a := 1, SESSION session_track_schema = ON; KILL HARD QUERY 5",
		"SELECT CONNECTION_ID() AS `a``b`;",
		"BEGIN NOT ATOMIC SET TRANSACTION READ ONLY, @x = 1; END",
		"SELECT NOW(), CURRENT_TIMESTAMP, t.current_date, `now`, db.rand(1), @@x FROM t FOR SHARE",
		"((((", "))))", "/*", "'", "`", "-- ", "#", "@", "@@", "/*!", "*/",
	} {
		f.Add([]byte(s))
	}
	a, b := New(), New()
	f.Fuzz(func(t *testing.T, sql []byte) {
		r := a.Classify(sql)
		if len(r.Digest) > MaxDigest {
			t.Fatalf("digest of %d bytes", len(r.Digest))
		}
		if r.Kind >= NumKinds {
			t.Fatalf("kind %d", r.Kind)
		}
		if len(r.Read) > maxTables || len(r.Written) > maxTables {
			t.Fatalf("%d tables read, %d written", len(r.Read), len(r.Written))
		}
		if r.Unsure && (!r.UnknownTables || r.Kind != Write && r.Kind != DDL && r.Kind != Session) {
			t.Fatalf("unsure but %s", r)
		}
		if r.Hash != Hash(r.Digest) {
			t.Fatal("hash is not the digest's")
		}
		if r.KillID != 0 && (r.Uses&UsesKill == 0 || r.MultiStatement) {
			t.Fatalf("kill of %d but %s", r.KillID, r)
		}
		if r.CallsFunction && !r.Volatile || r.Kind == LockingRead && !r.Volatile {
			t.Fatalf("calls an unknown function or locks but not volatile: %s", r)
		}
		if r.ConnectionIDOnly && (r.Uses != UsesConnectionID || r.MultiStatement || r.Kind != Read) {
			t.Fatalf("connection id only but %s", r)
		}
		want := r.String()
		digest := bytes.Clone(r.Digest)
		r2 := b.Classify(sql)
		if r2.String() != want || !bytes.Equal(r2.Digest, digest) {
			t.Fatalf("two classifiers disagree:\n%s %q\n%s %q", want, digest, r2, r2.Digest)
		}
	})
}
