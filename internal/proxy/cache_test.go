package proxy

import (
	"bytes"
	"testing"
)

// TestExecuteScope keys an execution by its prepared text and bound values, and refuses
// one that opens a cursor or leans on types sent with an earlier execution.
func TestExecuteScope(t *testing.T) {
	text := []byte("SELECT a FROM t WHERE id = ?")
	// COM_STMT_EXECUTE, id 1, no cursor, one iteration, one parameter: null bitmap 0,
	// types bound, LONGLONG, value 7.
	bound := []byte{0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 8, 0, 7, 0, 0, 0, 0, 0, 0, 0}
	k1, ok := executeScope(nil, text, 1, bound)
	if !ok {
		t.Fatal("a bound execution was refused")
	}
	other := bytes.Clone(bound)
	other[14] = 8
	k2, _ := executeScope(nil, text, 1, other)
	if bytes.Equal(k1, k2) {
		t.Error("two values gave one key")
	}
	k3, _ := executeScope(nil, []byte("SELECT b FROM t WHERE id = ?"), 1, bound)
	if bytes.Equal(k1, k3) {
		t.Error("two texts gave one key")
	}
	cursor := bytes.Clone(bound)
	cursor[5] = 1
	if _, ok := executeScope(nil, text, 1, cursor); ok {
		t.Error("an execution that opens a cursor was keyed")
	}
	unbound := bytes.Clone(bound)
	unbound[11] = 0
	if _, ok := executeScope(nil, text, 1, unbound[:12]); ok {
		t.Error("an execution without its types was keyed")
	}
	if _, ok := executeScope(nil, []byte("SELECT 1"), 0, []byte{0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0}); !ok {
		t.Error("an execution without parameters was refused")
	}
	if _, ok := executeScope(nil, text, 1, bound[:8]); ok {
		t.Error("a cut execution was keyed")
	}
}

// TestSystemSchema refuses the tables whose contents change without a write in the
// binary log.
func TestSystemSchema(t *testing.T) {
	for table, want := range map[string]bool{
		"information_schema.tables": true, "performance_schema.threads": true, "mysql.user": true, "sys.x": true,
		"shop.orders": false, "mysqlx.t": false, "system.t": false,
	} {
		if got := systemSchema([]byte(table)); got != want {
			t.Errorf("systemSchema(%q) = %v, want %v", table, got, want)
		}
	}
}
