package integration

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// matrixClient is a client stack outside Go: a command that connects, runs the statement
// it reads from stdin and prints "ok" or "code|message".
type matrixClient struct {
	name string
	args []string // the command and its first arguments; host, port, user, password and database follow
}

// clientMatrix returns the client stacks of the matrix: PyMySQL (pure Python), MySQLdb
// (libmariadb, the C library under the mariadb CLI and most non-Java drivers), and PHP's
// mysqli and PDO (mysqlnd, PHP's own implementation). It fails the test when one is
// missing.
func clientMatrix(t *testing.T) []matrixClient {
	t.Helper()
	// Debian's interpreter, where Debian's drivers are, before any other on the path.
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		python = needTool(t, "python3")
	}
	if out, err := exec.Command(python, "-c", "import pymysql, MySQLdb").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import PyMySQL and MySQLdb: the integration suite needs them (apt-get install python3-pymysql python3-mysqldb): %s", python, out)
	}
	php := needTool(t, "php")
	if out, err := exec.Command(php, "-r", `exit(extension_loaded("mysqli") && extension_loaded("pdo_mysql") ? 0 : 1);`).CombinedOutput(); err != nil {
		t.Fatalf("php has no mysqli or pdo_mysql: the integration suite needs them (apt-get install php-cli php-mysql): %s", out)
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "clients"))
	if err != nil {
		t.Fatal(err)
	}
	py, ph := filepath.Join(dir, "client.py"), filepath.Join(dir, "client.php")
	return []matrixClient{
		{"PyMySQL", []string{python, py, "pymysql"}},
		{"MySQLdb", []string{python, py, "mysqldb"}},
		{"PHP mysqli", []string{php, ph, "mysqli"}},
		{"PHP PDO", []string{php, ph, "pdo"}},
	}
}

// run runs the client against addr with statement and returns what it printed.
func (c matrixClient) run(t *testing.T, addr, statement string) string {
	t.Helper()
	host, port := hostPort(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append(c.args[1:len(c.args):len(c.args)], host, port, env.User, env.Password, env.Database)
	cmd := exec.CommandContext(ctx, c.args[0], args...)
	cmd.Stdin = strings.NewReader(statement) // the statement may be larger than an argument may
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", c.name, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestClientMatrixReadsGatekeeperErrors checks that the errors the proxy writes in its own
// name reach every client stack with their code and whole message: the connection error of
// a primary that cannot be reached (1043), a queue timeout (1205) and a packet over
// client.max_packet_size (1153). The mariadb CLI and Go's drivers are checked where these
// errors are tested (failure_test.go, reliability_test.go).
func TestClientMatrixReadsGatekeeperErrors(t *testing.T) {
	clients := clientMatrix(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	// each runs every client against the proxy at addr and checks that it printed code and
	// message (a client that tries TLS first may wrap an error sent before it, "... cannot
	// be verified: 1043 - gatekeeper: ...", but shows it whole).
	each := func(t *testing.T, addr, statement, code, message string) {
		t.Helper()
		for _, c := range clients {
			out := c.run(t, addr, statement)
			t.Logf("%s: %s", c.name, out)
			if !strings.HasPrefix(out, code+"|") && !strings.Contains(out, code+" - ") || !strings.Contains(out, message) {
				t.Errorf("%s printed %q, want error %s with %q", c.name, out, code, message)
			}
		}
	}
	eachMode(t, func(t *testing.T, mode string) {
		t.Run("primary unreachable", func(t *testing.T) {
			p := startProxy(t, inMode(mode, func(c *config.Config) {
				c.Backends.Primary = dead
				c.Backends.ConnectTimeout = time.Second
			}))
			each(t, p.Addr, "SELECT 1", "1043", "gatekeeper: cannot reach the primary backend "+dead)
		})
		t.Run("packet too large", func(t *testing.T) {
			p := startProxy(t, inMode(mode, func(c *config.Config) { c.Client.MaxPacketSize = 1 << 20 }))
			each(t, p.Addr, "SELECT LENGTH('"+strings.Repeat("x", 2<<20)+"')", "1153", "gatekeeper: got a packet bigger than")
		})
		t.Run("queue timeout", func(t *testing.T) {
			p := startProxy(t, inMode(mode, func(c *config.Config) {
				c.Admission.Enabled = true
				c.Admission.Capacity = config.Capacity(10 * time.Millisecond)
				c.Admission.QueueTimeout = 300 * time.Millisecond
			}))
			// A statement of a type never measured is charged the whole capacity: while
			// one runs, every other waits, here past the queue timeout.
			marker := fmt.Sprintf("matrix-%d", time.Now().UnixNano())
			holder := openDB(t, p.Addr, "")
			held := make(chan error, 1)
			go func() { _, err := holder.Exec("DO SLEEP(20) /* " + marker + " */"); held <- err }()
			waitFor(t, 5*time.Second, "the SLEEP to be admitted", func() bool {
				return metricValue(t, p, "gatekeeper_admission_running", nil) >= 1
			})
			each(t, p.Addr, "SELECT 1", "1205", "gatekeeper: queue timeout")
			killByMarker(t, marker)
			<-held
		})
	})
}

// killByMarker ends, on the primary directly, the statement whose text holds marker.
func killByMarker(t *testing.T, marker string) {
	t.Helper()
	db, err := sql.Open("mysql", env.User+":"+env.Password+"@tcp("+env.Primary+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id int64
	if err := db.QueryRow("SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND ID <> CONNECTION_ID()",
		"%"+marker+"%").Scan(&id); err != nil {
		t.Fatalf("finding the statement %s: %v", marker, err)
	}
	if _, err := db.Exec(fmt.Sprintf("KILL QUERY %d", id)); err != nil {
		t.Fatal(err)
	}
}

// TestClientMatrixCache runs each client stack twice through a proxy with the result cache
// on: the second run is answered from the cache and prints what the database's own answer
// prints; a query rule's deny reaches each of them as its error.
func TestClientMatrixCache(t *testing.T) {
	clients := clientMatrix(t)
	// Python's drivers open a transaction with the first statement unless told otherwise, and
	// reads in a transaction are not cached.
	t.Setenv("GK_AUTOCOMMIT", "1")
	setupShapes(t)
	p := cachedProxy(t, nil, func(c *config.Config) {
		c.Rules = []config.Rule{{Name: "no-load", Match: config.RuleMatch{Table: "shapes_load"}, Deny: "loads go to the batch proxy"}}
	})
	const read = "SELECT * FROM shapes_types ORDER BY id"
	for _, c := range clients {
		want := c.run(t, env.Primary, read)
		if !strings.HasSuffix(want, "\nok") || strings.Count(want, "\n") != 2 {
			t.Fatalf("%s printed %q directly, want the two rows and ok", c.name, want)
		}
		if got := c.run(t, p.Addr, read); got != want {
			t.Errorf("%s: through the proxy printed %q, directly %q", c.name, got, want)
		}
		before := cacheHits(t, p)
		if got := c.run(t, p.Addr, read); got != want {
			t.Errorf("%s: from the cache printed %q, directly %q", c.name, got, want)
		}
		if hits := cacheHits(t, p) - before; hits != 1 {
			t.Errorf("%s: the second run had %v hits, want 1", c.name, hits)
		}
		out := c.run(t, p.Addr, "SELECT * FROM shapes_load")
		if !strings.HasPrefix(out, "1148|") && !strings.Contains(out, "1148 - ") ||
			!strings.Contains(out, `gatekeeper: refused by query rule "no-load": loads go to the batch proxy`) {
			t.Errorf("%s printed %q, want error 1148 naming the rule", c.name, out)
		}
	}
}
