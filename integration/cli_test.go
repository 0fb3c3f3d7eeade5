package integration

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// runTool runs a command-line client and returns its standard output.
func runTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, needTool(t, name), args...)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

func cliArgs(t *testing.T, addr string, extra ...string) []string {
	host, port := hostPort(t, addr)
	return append([]string{"--protocol=TCP", "-h", host, "-P", port, "-u", env.User, "-p" + env.Password}, extra...)
}

func TestMariaDBClient(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		table := tableName(t)
		script := strings.Join([]string{
			"DROP TABLE IF EXISTS " + table,
			"CREATE TABLE " + table + " (id INT PRIMARY KEY, note TEXT)",
			"INSERT INTO " + table + " VALUES (1, 'one'), (2, 'two'), (3, NULL)",
			"BEGIN",
			"UPDATE " + table + " SET note = 'deux' WHERE id = 2",
			"COMMIT",
			"SELECT id, note FROM " + table + " ORDER BY id",
			"SELECT @@autocommit, DATABASE()",
		}, ";\n") + ";\n"
		out := runTool(t, "mariadb", cliArgs(t, p.Addr, "--batch", "--skip-column-names", "-D", env.Database, "-e", script)...)
		want := "1\tone\n2\tdeux\n3\tNULL\n1\t" + env.Database + "\n"
		if out != want {
			t.Errorf("mariadb output:\n%s\nwant:\n%s", out, want)
		}
		// The client's own commands: `use` sends COM_INIT_DB, `status` COM_STATISTICS.
		out = runTool(t, "mariadb", cliArgs(t, p.Addr, "--batch", "-e", "use mysql; select database(); \\s")...)
		if !strings.Contains(out, "mysql") || !strings.Contains(out, "Uptime:") {
			t.Errorf("mariadb use/status output:\n%s", out)
		}
		if v := metricValue(t, p, "gatekeeper_client_commands_total", map[string]string{"command": "init_db"}); v < 1 {
			t.Errorf("no COM_INIT_DB seen")
		}
	})
}

func TestMariaDBAdmin(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		out := runTool(t, "mariadb-admin", cliArgs(t, p.Addr, "ping")...)
		if !strings.Contains(out, "is alive") {
			t.Errorf("ping: %q", out)
		}
		out = runTool(t, "mariadb-admin", cliArgs(t, p.Addr, "status")...)
		if !strings.Contains(out, "Uptime:") {
			t.Errorf("status: %q", out)
		}
	})
}

func TestMariaDBClientTLS(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, func(c *config.Config) {
			c.TLS.CertFile, c.TLS.KeyFile = env.TLSCert, env.TLSKey
			c.TLS.Required = true
		}))
		out := runTool(t, "mariadb", cliArgs(t, p.Addr, "--ssl", "--ssl-ca="+env.TLSCA, "--ssl-verify-server-cert",
			"--batch", "--skip-column-names", "-e", "SELECT 'over tls'")...)
		if out != "over tls\n" {
			t.Errorf("output %q", out)
		}
	})
}

func TestSysbenchReadWrite(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		host, port := hostPort(t, p.Addr)
		common := []string{"oltp_read_write", "--db-driver=mysql", "--mysql-host=" + host, "--mysql-port=" + port,
			"--mysql-user=" + env.User, "--mysql-password=" + env.Password, "--mysql-db=" + env.Database,
			"--tables=2", "--table-size=2000"}
		runTool(t, "sysbench", append(common, "cleanup")...)
		runTool(t, "sysbench", append(common, "prepare")...)
		defer runTool(t, "sysbench", append(common, "cleanup")...)
		out := runTool(t, "sysbench", append(common, "--threads=8", "--time=5", "--report-interval=0", "run")...)
		// sysbench stops at the first error it does not ignore (it ignores deadlocks, which
		// eight threads on small tables do cause); it must not have had to reconnect.
		if !strings.Contains(out, "reconnects:                          0") {
			t.Errorf("sysbench reconnected:\n%s", out)
		}
		if !strings.Contains(out, "transactions:") {
			t.Fatalf("sysbench output:\n%s", out)
		}
		if v := metricValue(t, p, "gatekeeper_client_commands_total", map[string]string{"command": "stmt_execute"}); v < 100 {
			t.Errorf("only %v prepared statement executions seen; oltp_read_write should use them", v)
		}
	})
}
