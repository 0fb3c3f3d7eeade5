package mysqltest

import (
	"reflect"
	"testing"
)

func TestParseStatement(t *testing.T) {
	sys := func(name, value string) assignment { return assignment{name: name, value: value} }
	for _, tc := range []struct {
		q    string
		want statement
	}{
		{"SET SESSION sql_mode='ANSI'", statement{kind: kindSet, sets: []assignment{sys("sql_mode", "ANSI")}}},
		{"  set @@session.Time_Zone = \"+01:00\" ; ", statement{kind: kindSet, sets: []assignment{sys("time_zone", "+01:00")}}},
		{"SET @@wait_timeout=28800, LOCAL net_write_timeout := 60", statement{kind: kindSet, sets: []assignment{
			sys("wait_timeout", "28800"), sys("net_write_timeout", "60"),
		}}},
		{"SET sql_mode = 'a,b', @`My Var` = 'x''y', @v2='it\\'s'", statement{kind: kindSet, sets: []assignment{
			sys("sql_mode", "a,b"), {user: true, name: "my var", value: "x'y"}, {user: true, name: "v2", value: "it's"},
		}}},
		{"SET autocommit=0", statement{kind: kindSet, sets: []assignment{sys("autocommit", "OFF")}}},
		{"SET autocommit=true", statement{kind: kindSet, sets: []assignment{sys("autocommit", "ON")}}},
		{"SET session_track_state_change = on", statement{kind: kindSet, sets: []assignment{sys("session_track_state_change", "ON")}}},
		{"SET sql_mode = CONCAT(@@sql_mode, ',ANSI')", statement{kind: kindSet, sets: []assignment{sys("sql_mode", "CONCAT(@@sql_mode, ',ANSI')")}}},
		{"SET NAMES utf8mb4 COLLATE utf8mb4_unicode_ci", statement{kind: kindSet, sets: []assignment{
			sys("character_set_client", "utf8mb4"), sys("character_set_connection", "utf8mb4"),
			sys("character_set_results", "utf8mb4"), sys("collation_connection", "utf8mb4_unicode_ci"),
		}}},
		{"SET NAMES 'latin1'", statement{kind: kindSet, sets: []assignment{
			sys("character_set_client", "latin1"), sys("character_set_connection", "latin1"),
			sys("character_set_results", "latin1"),
		}}},
		{"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED, READ ONLY", statement{kind: kindSet, sets: []assignment{
			sys("tx_isolation", "READ-COMMITTED"), sys("tx_read_only", "ON"),
		}}},
		{"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", statement{kind: kindSet}},
		{"SET GLOBAL max_connections = 10", statement{}},
		{"SET @@global.max_connections = 10", statement{}},
		{"SET SESSION TRANSACTION ISOLATION LEVEL SOMETIMES", statement{}},
		{"SET x", statement{}},
		{"SETTINGS", statement{}},
		{"USE `my db`", statement{kind: kindUse, schema: "my db"}},
		{"use shop;", statement{kind: kindUse, schema: "shop"}},
		{"BEGIN", statement{kind: kindBegin}},
		{"begin work", statement{kind: kindBegin}},
		{"START TRANSACTION WITH CONSISTENT SNAPSHOT", statement{kind: kindBegin}},
		{"COMMIT", statement{kind: kindCommit}},
		{"ROLLBACK WORK", statement{kind: kindRollback}},
		{"ROLLBACK TO SAVEPOINT a", statement{}},
		{"SELECT @@sql_mode", statement{kind: kindSelect, items: []selectItem{{itemSysVar, "@@sql_mode", "sql_mode"}}}},
		{"select @@SESSION.tx_isolation AS iso, @Cart, connection_id( ), DATABASE()", statement{kind: kindSelect, items: []selectItem{
			{itemSysVar, "iso", "tx_isolation"}, {itemUserVar, "@Cart", "cart"},
			{itemConnectionID, "connection_id( )", ""}, {itemDatabase, "DATABASE()", ""},
		}}},
		{"SELECT @@global.version", statement{}},
		{"SELECT @@version FROM dual", statement{}},
		{"SELECT 1", statement{}},
		{"DO SLEEP(1)", statement{kind: kindDo}},
		{"KILL 7", statement{kind: kindKill, killID: 7}},
		{"KILL QUERY 7", statement{kind: kindKill, killID: 7, killQuery: true}},
		{"kill hard connection 12", statement{kind: kindKill, killID: 12}},
		{"KILL USER app", statement{}},
		{"CREATE TEMPORARY TABLE t (a INT)", statement{changesState: true}},
		{"PREPARE s FROM 'SELECT 1'", statement{changesState: true}},
		{"DEALLOCATE PREPARE s", statement{changesState: true}},
		{"CREATE TABLE t (a INT)", statement{}},
	} {
		if got := parseStatement(tc.q); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseStatement(%q)\n got %+v\nwant %+v", tc.q, got, tc.want)
		}
	}
}

func TestCountParams(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want int
	}{
		{"SELECT 1", 0},
		{"SELECT ?, ?", 2},
		{"SELECT '?', \"?\", `?`, ? -- ?\n, ? # ?\n /* ? */", 2},
		{"SELECT 'it\\'s ?', ?", 1},
		{"SELECT 'it''s ?', ?", 1},
	} {
		if got := countParams(tc.q); got != tc.want {
			t.Errorf("countParams(%q) = %d, want %d", tc.q, got, tc.want)
		}
	}
}

func TestSplitStatements(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"SELECT 1", []string{"SELECT 1"}},
		{"SELECT 1;", []string{"SELECT 1"}},
		{"SET @a='x;y'; SELECT @a /* ; */ ;; DO 1", []string{"SET @a='x;y'", "SELECT @a /* ; */", "DO 1"}},
		{" ; ", []string{""}},
	} {
		if got := splitStatements(tc.q); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitStatements(%q) = %q, want %q", tc.q, got, tc.want)
		}
	}
}

func TestTrackingVars(t *testing.T) {
	for _, tc := range []struct {
		value   string
		tracked []string
		not     []string
	}{
		{"*", []string{"time_zone", "sql_mode"}, nil},
		{"autocommit, *", []string{"time_zone"}, nil},
		{"Time_Zone,sql_mode", []string{"time_zone", "sql_mode"}, []string{"autocommit"}},
		{"", nil, []string{"time_zone"}},
	} {
		var tr tracking
		tr.setVars(tc.value)
		for _, name := range tc.tracked {
			if !tr.tracks(name) {
				t.Errorf("%q does not track %s", tc.value, name)
			}
		}
		for _, name := range tc.not {
			if tr.tracks(name) {
				t.Errorf("%q tracks %s", tc.value, name)
			}
		}
	}
}
