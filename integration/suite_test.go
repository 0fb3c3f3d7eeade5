package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// mariadbSuiteDir is where Debian's mariadb-test package puts MariaDB's own test suite.
const mariadbSuiteDir = "/usr/share/mysql/mysql-test"

// mariadbSuiteTests are tests of MariaDB's own suite that run against a plain server as the
// integration backends start it (without mysql-test-run's settings): stored procedures and
// their cursors, variables, dynamic SQL, ROW types and OUT parameters, prepared statements,
// multi-statements, and the result shapes of temporal, decimal, SET and JSON values. main.sp
// is left out: one of its EXPLAINs shows the optimizer's row estimate, which varies between
// runs of the same server.
var mariadbSuiteTests = []string{
	"sp-cursor", "sp-vars", "sp-dynamic", "sp-row", "sp-inout", "sp-bugs", "sp-for-loop",
	"ps_1general", "ps_11bugs", "multi_statement",
	"type_datetime", "type_newdecimal", "type_set", "type_json", "func_json",
}

// TestMariaDBSuite runs tests of MariaDB's own suite with its client, mariadb-test: each is
// recorded directly against the primary, then run through the proxy, in both modes, and
// must give the same result file, byte for byte. The suite's tests drive the client
// library (libmariadb) through shapes the integration tests do not write by hand.
func TestMariaDBSuite(t *testing.T) {
	mariadbTest := needTool(t, "mariadb-test")
	if _, err := os.Stat(filepath.Join(mariadbSuiteDir, "main", "sp-cursor.test")); err != nil {
		t.Fatalf("MariaDB's test suite is not installed: the integration suite needs it (apt-get install mariadb-test): %v", err)
	}
	// What mysql-test-run would have set up: its suppression procedure, and functions that
	// may be created with binary logging on.
	admin, err := client.Connect(env.Primary, "root", "", "")
	if err != nil {
		t.Fatalf("root on the primary: %v", err)
	}
	t.Cleanup(func() { admin.Close() })
	for _, q := range []string{
		"CREATE DATABASE IF NOT EXISTS mtr",
		"CREATE PROCEDURE IF NOT EXISTS mtr.add_suppression(pattern VARCHAR(255)) BEGIN END",
		"SET GLOBAL log_bin_trust_function_creators = 1",
	} {
		if _, err := admin.Execute(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { _, _ = admin.Execute("SET GLOBAL log_bin_trust_function_creators = 0") })

	dir := t.TempDir()
	vardir := filepath.Join(dir, "var")
	if err := os.MkdirAll(filepath.Join(vardir, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	// run runs one suite test against addr: with record, writing result; else comparing
	// with it. It returns mariadb-test's output and whether it passed.
	run := func(t *testing.T, addr, test, result string, record bool) (string, bool) {
		t.Helper()
		for _, q := range []string{"DROP DATABASE IF EXISTS test", "CREATE DATABASE test",
			"DROP DATABASE IF EXISTS mysqltest", "DROP DATABASE IF EXISTS mysqltest1"} {
			if _, err := admin.Execute(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		host, port := hostPort(t, addr)
		args := []string{"--protocol=tcp", "--host=" + host, "--port=" + port, "--user=root",
			"--database=test", "--silent", "--test-file=" + filepath.Join("main", test+".test"),
			"--result-file=" + result, "--logdir=" + dir, "--tmpdir=" + filepath.Join(vardir, "tmp")}
		if record {
			args = append(args, "--record")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, mariadbTest, args...)
		cmd.Dir = mariadbSuiteDir
		cmd.Env = append(os.Environ(), "MYSQLTEST_VARDIR="+vardir, "MYSQL_TMP_DIR="+filepath.Join(vardir, "tmp"),
			"MASTER_MYPORT="+port, "MYSQL_TEST_DIR="+mariadbSuiteDir)
		out, err := cmd.CombinedOutput()
		return string(out), err == nil
	}
	usersFile := filepath.Join(dir, "users.yaml")
	if err := os.WriteFile(usersFile, []byte("users:\n  - user: root\n    password: \"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, func(c *config.Config) {
			if mode == config.ModePooled {
				c.Auth.UsersFile = usersFile // the suite's client logs in as root
			}
		}))
		for _, test := range mariadbSuiteTests {
			t.Run(test, func(t *testing.T) {
				result := filepath.Join(dir, mode+"-"+test+".result")
				if out, ok := run(t, env.Primary, test, result, true); !ok {
					t.Fatalf("main.%s fails directly against the primary, so it cannot be compared:\n%s", test, lastLines(out, 20))
				}
				if out, ok := run(t, p.Addr, test, result, false); !ok {
					t.Errorf("main.%s gives another result through the proxy:\n%s", test, lastLines(out, 60))
				}
			})
		}
	})
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
