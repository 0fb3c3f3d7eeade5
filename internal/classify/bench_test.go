package classify

import "testing"

// The statements of sysbench's oltp_read_write, as its Lua scripts send them.
var sysbenchStatements = []string{
	"SELECT c FROM sbtest1 WHERE id=?",
	"SELECT c FROM sbtest3 WHERE id BETWEEN ? AND ?",
	"SELECT SUM(k) FROM sbtest2 WHERE id BETWEEN ? AND ?",
	"SELECT c FROM sbtest4 WHERE id BETWEEN ? AND ? ORDER BY c",
	"SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
	"UPDATE sbtest2 SET k=k+1 WHERE id=?",
	"UPDATE sbtest3 SET c=? WHERE id=?",
	"DELETE FROM sbtest4 WHERE id=?",
	"INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)",
	"BEGIN",
	"COMMIT",
	// The same with the literals of the text protocol.
	"SELECT c FROM sbtest1 WHERE id=4973",
	"SELECT c FROM sbtest2 WHERE id BETWEEN 4973 AND 5072 ORDER BY c",
	"UPDATE sbtest3 SET c='36129578843-51536545787-21234925449-25307436378-11452924227-46447236596-80133302125-78546473578-71512591131-09431009395' WHERE id=5019",
	"INSERT INTO sbtest4 (id, k, c, pad) VALUES (5019, 5036, '46585464592-55893478217-53216470436-67521577788-15436428546-34416546434-36620347813-71325815018-11014839624-79009812236', '14358428617-02693604916-60697488236-62658627357')",
}

// Statements whose connection state a pooled proxy reads from the result.
var connectionStateStatements = []string{
	"SET @a = 1, session_track_schema = ON",
	"SELECT GET_LOCK('job', 10)",
	"KILL QUERY 42",
	"SELECT CONNECTION_ID()",
	"SELECT CONNECTION_ID() AS `a``b`",
	"SELECT CONNECTION_ID() AS 'it''s'",
	"BEGIN NOT ATOMIC SET @x = 1; END",
	"SELECT NOW(), CURRENT_USER, @@session.time_zone, shop.price_of(id) FROM t FOR UPDATE",
}

func TestClassifyAllocatesNothing(t *testing.T) {
	c := New()
	for _, s := range append(sysbenchStatements, connectionStateStatements...) {
		sql := []byte(s)
		c.Classify(sql) // grow the buffers
		if n := testing.AllocsPerRun(100, func() { c.Classify(sql) }); n != 0 {
			t.Errorf("%q: %.1f allocations per statement, want 0", s, n)
		}
	}
}

func BenchmarkClassify(b *testing.B) {
	b.Run("sysbench", func(b *testing.B) {
		c := New()
		stmts := make([][]byte, len(sysbenchStatements))
		n := 0
		for i, s := range sysbenchStatements {
			stmts[i] = []byte(s)
			n += len(s)
		}
		b.SetBytes(int64(n / len(stmts)))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			c.Classify(stmts[i%len(stmts)])
		}
	})
	for _, bc := range []struct{ name, sql string }{
		{"point_select", "SELECT c FROM sbtest1 WHERE id=?"},
		{"update_text", sysbenchStatements[13]},
		{"tpcc_stock_level", "SELECT COUNT(DISTINCT (s_i_id)) FROM order_line, stock WHERE ol_w_id = 1 AND ol_d_id = 5 AND ol_o_id < 3001 AND ol_o_id >= 2981 AND s_w_id = 1 AND s_i_id = ol_i_id AND s_quantity < 15"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := New()
			sql := []byte(bc.sql)
			b.SetBytes(int64(len(sql)))
			b.ReportAllocs()
			for b.Loop() {
				c.Classify(sql)
			}
		})
	}
}
