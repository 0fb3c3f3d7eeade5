package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// dsn returns a go-sql-driver DSN for addr with the test user and extra parameters.
func dsn(addr, params string) string {
	d := fmt.Sprintf("%s:%s@tcp(%s)/%s?parseTime=true", env.User, env.Password, addr, env.Database)
	if params != "" {
		d += "&" + params
	}
	return d
}

func openDB(t *testing.T, addr, params string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn(addr, params))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t *testing.T, db interface {
	Exec(string, ...any) (sql.Result, error)
}, q string, args ...any) sql.Result {
	t.Helper()
	r, err := db.Exec(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return r
}

// tableName returns a table name unique to the test.
func tableName(t *testing.T) string {
	name := strings.ToLower(t.Name())
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, name)
	if len(name) > 48 {
		name = name[len(name)-48:]
	}
	return "t_" + name
}

func TestDriverTextAndBinaryProtocol(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		for _, params := range []string{"interpolateParams=false", "interpolateParams=true"} {
			t.Run(params, func(t *testing.T) {
				db := openDB(t, p.Addr, params)
				table := tableName(t)
				mustExec(t, db, "DROP TABLE IF EXISTS "+table)
				mustExec(t, db, "CREATE TABLE "+table+" (id INT PRIMARY KEY, name VARCHAR(64), price DECIMAL(10,2), at DATETIME(6), data BLOB, n DOUBLE NULL)")
				at := time.Date(2026, 11, 22, 10, 30, 0, 123456000, time.UTC)
				for i := 1; i <= 100; i++ {
					mustExec(t, db, "INSERT INTO "+table+" VALUES (?, ?, ?, ?, ?, ?)", i, fmt.Sprintf("item-%d", i), float64(i)+0.5, at, []byte{0, byte(i), 0xff}, nil)
				}
				var (
					name  string
					price float64
					got   time.Time
					data  []byte
					n     sql.NullFloat64
				)
				err := db.QueryRow("SELECT name, price, at, data, n FROM "+table+" WHERE id = ?", 42).Scan(&name, &price, &got, &data, &n)
				if err != nil {
					t.Fatal(err)
				}
				if name != "item-42" || price != 42.5 || !got.Equal(at) || !bytes.Equal(data, []byte{0, 42, 0xff}) || n.Valid {
					t.Errorf("row = %q %v %v %v %v", name, price, got, data, n)
				}
				rows, err := db.Query("SELECT id FROM "+table+" WHERE id BETWEEN ? AND ? ORDER BY id", 10, 59)
				if err != nil {
					t.Fatal(err)
				}
				count, sum := 0, 0
				for rows.Next() {
					var id int
					if err := rows.Scan(&id); err != nil {
						t.Fatal(err)
					}
					count, sum = count+1, sum+id
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
				if count != 50 || sum != 1725 {
					t.Errorf("range: %d rows summing to %d, want 50 and 1725", count, sum)
				}
				// A statement error is relayed as the server's own error and the connection lives on.
				_, err = db.Exec("INSERT INTO "+table+" (id) VALUES (?)", 1)
				var me *mysql.MySQLError
				if !errors.As(err, &me) || me.Number != 1062 {
					t.Errorf("duplicate key: err = %v, want MySQL error 1062", err)
				}
				if err := db.Ping(); err != nil {
					t.Errorf("ping after an error: %v", err)
				}
			})
		}
	})
}

func TestDriverTransactions(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		db := openDB(t, p.Addr, "")
		table := tableName(t)
		mustExec(t, db, "DROP TABLE IF EXISTS "+table)
		mustExec(t, db, "CREATE TABLE "+table+" (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
		mustExec(t, db, "INSERT INTO "+table+" VALUES (1, 0)")

		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, tx, "UPDATE "+table+" SET v = 1 WHERE id = 1")
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		tx, err = db.BeginTx(context.Background(), &sql.TxOptions{Isolation: sql.LevelSerializable})
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, tx, "UPDATE "+table+" SET v = 2 WHERE id = 1")
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		var v int
		if err := db.QueryRow("SELECT v FROM " + table + " WHERE id = 1").Scan(&v); err != nil || v != 2 {
			t.Fatalf("v = %d, %v; want 2", v, err)
		}
		units := metricValue(t, p, "gatekeeper_units_total", map[string]string{"kind": "transaction"})
		if units < 2 {
			t.Errorf("gatekeeper_units_total{kind=transaction} = %v, want at least 2", units)
		}
	})
}

func TestDriverMultiStatementsAndProcedure(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		db := openDB(t, p.Addr, "multiStatements=true")
		table := tableName(t)
		mustExec(t, db, "DROP TABLE IF EXISTS "+table+"; CREATE TABLE "+table+" (id INT PRIMARY KEY); INSERT INTO "+table+" VALUES (1),(2),(3)")
		mustExec(t, db, "DROP PROCEDURE IF EXISTS three_results")
		mustExec(t, db, `CREATE PROCEDURE three_results()
	BEGIN
	  SELECT 1 AS a;
	  SELECT id FROM `+table+` ORDER BY id;
	  SELECT 'x' AS b, 'y' AS c;
	END`)
		rows, err := db.Query("CALL three_results()")
		if err != nil {
			t.Fatal(err)
		}
		var sets [][]string
		for {
			var set []string
			cols, _ := rows.Columns()
			for rows.Next() {
				vals := make([]sql.RawBytes, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				var parts []string
				for _, v := range vals {
					parts = append(parts, string(v))
				}
				set = append(set, strings.Join(parts, ","))
			}
			sets = append(sets, set)
			if !rows.NextResultSet() {
				break
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		want := [][]string{{"1"}, {"1", "2", "3"}, {"x,y"}}
		if fmt.Sprint(sets) != fmt.Sprint(want) {
			t.Errorf("result sets = %v, want %v", sets, want)
		}

		// Several statements in one COM_QUERY, the last of them a read.
		rows, err = db.Query("UPDATE " + table + " SET id = id + 10 WHERE id = 3; SELECT COUNT(*) FROM " + table + " WHERE id > 10")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			for rows.Next() {
				if err := rows.Scan(&n); err != nil {
					t.Fatal(err)
				}
			}
			if !rows.NextResultSet() {
				break
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if n != 1 {
			t.Errorf("count after multi-statement update = %d, want 1", n)
		}
		if err := db.Ping(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDriverBlob40MiB(t *testing.T) {
	blob := make([]byte, 40<<20)
	if _, err := rand.Read(blob); err != nil {
		t.Fatal(err)
	}
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		for _, params := range []string{"interpolateParams=false&maxAllowedPacket=0", "interpolateParams=true&maxAllowedPacket=0"} {
			t.Run(params, func(t *testing.T) {
				db := openDB(t, p.Addr, params)
				table := tableName(t)
				mustExec(t, db, "DROP TABLE IF EXISTS "+table)
				mustExec(t, db, "CREATE TABLE "+table+" (id INT PRIMARY KEY, b LONGBLOB)")
				mustExec(t, db, "INSERT INTO "+table+" VALUES (1, ?)", blob)
				var got []byte
				if err := db.QueryRow("SELECT b FROM " + table + " WHERE id = 1").Scan(&got); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, blob) {
					t.Fatalf("got %d bytes back, want the same %d", len(got), len(blob))
				}
				var n int
				if err := db.QueryRow("SELECT LENGTH(b) FROM "+table+" WHERE id = ?", 1).Scan(&n); err != nil || n != len(blob) {
					t.Fatalf("LENGTH = %d, %v", n, err)
				}
			})
		}
	})
}

func TestDriverLoadDataLocal50MB(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.csv")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const rows = 500_000
	pad := strings.Repeat("x", 100)
	for i := range rows {
		fmt.Fprintf(f, "%d,%s\n", i, pad) // about 106 bytes a row
	}
	f.Close()
	st, _ := os.Stat(path)
	if st.Size() < 50_000_000 {
		t.Fatalf("file is %d bytes, want 50 MB", st.Size())
	}
	mysql.RegisterLocalFile(path)
	defer mysql.DeregisterLocalFile(path)

	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		db := openDB(t, p.Addr, "")
		table := tableName(t)
		mustExec(t, db, "DROP TABLE IF EXISTS "+table)
		mustExec(t, db, "CREATE TABLE "+table+" (id INT PRIMARY KEY, pad VARCHAR(100))")
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res := mustExec(t, db, "LOAD DATA LOCAL INFILE '"+path+"' INTO TABLE "+table+" FIELDS TERMINATED BY ','")
		runtime.ReadMemStats(&after)
		if n, _ := res.RowsAffected(); n != rows {
			t.Fatalf("loaded %d rows, want %d", n, rows)
		}
		// The client library and the proxy run in this process: had the proxy held the file,
		// allocation would have grown by the file's size at least.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(st.Size())/2 {
			t.Errorf("allocated %d MB while loading a %d MB file: the load is not streamed", alloc>>20, st.Size()>>20)
		}
		var count int
		if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&count); err != nil || count != rows {
			t.Fatalf("count = %d, %v", count, err)
		}
	})
}

func TestDriverTLSToProxy(t *testing.T) {
	pem, err := os.ReadFile(env.TLSCA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	if err := mysql.RegisterTLSConfig("gk-test", &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, func(c *config.Config) {
			c.TLS.CertFile, c.TLS.KeyFile = env.TLSCert, env.TLSKey
			c.TLS.Required = true
		}))
		db := openDB(t, p.Addr, "tls=gk-test")
		var cipher string
		var name string
		if err := db.QueryRow("SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &cipher); err != nil {
			t.Fatal(err)
		}
		// The backend link is plain (backends.tls.mode disabled); the client's is TLS, checked
		// against the CA by the driver, which would have refused otherwise.
		if cipher != "" {
			t.Errorf("backend link unexpectedly encrypted with %s", cipher)
		}

		plain := openDB(t, p.Addr, "tls=false")
		err := plain.Ping()
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 3159 || !strings.HasPrefix(me.Message, "gatekeeper:") {
			t.Errorf("plain connection to a TLS-only proxy: err = %v, want error 3159 from gatekeeper", err)
		}
	})
}

func TestDriverTLSToBackend(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, func(c *config.Config) {
			c.Backends.TLS.Mode = config.TLSVerifyIdentity
			c.Backends.TLS.CAFile = env.TLSCA
		}))
		db := openDB(t, p.Addr, "")
		var name, cipher string
		if err := db.QueryRow("SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &cipher); err != nil {
			t.Fatal(err)
		}
		if cipher == "" {
			t.Errorf("backend link not encrypted although backends.tls.mode is verify_identity")
		}
	})
}

func TestDriverWrongPassword(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		db, err := sql.Open("mysql", fmt.Sprintf("%s:wrong@tcp(%s)/", env.User, p.Addr))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		// Passthrough relays the primary's refusal; pooled mode checks the password itself
		// and refuses in the server's words.
		err = db.Ping()
		var me *mysql.MySQLError
		want := fmt.Sprintf("Access denied for user '%s'@'127.0.0.1' (using password: YES)", env.User)
		if !errors.As(err, &me) || me.Number != 1045 || me.Message != want {
			t.Fatalf("err = %v, want error 1045 %q", err, want)
		}
		waitFor(t, 5*time.Second, "the refused connection to close", func() bool { return p.Open() == 0 })
	})
}

func TestDriverEd25519(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		p := startProxy(t, inMode(mode, nil))
		db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/", env.EdUser, env.EdPassword, p.Addr))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var user string
		// Passthrough relays the primary's ed25519 challenge. Pooled mode checks the password
		// with its own mysql_native_password challenge and logs in to the primary as the
		// ed25519 account itself.
		//
		// go-sql-driver/mysql drops a trailing zero byte from an authentication switch's data, so
		// it refuses the server's random 32-byte ed25519 challenge as a malformed packet whenever
		// the challenge ends in zero: about one login in 256, directly to MariaDB as well. Such a
		// login is tried again; a login the proxy breaks fails every time.
		for attempt := 1; ; attempt++ {
			err = db.QueryRow("SELECT CURRENT_USER()").Scan(&user)
			if !errors.Is(err, mysql.ErrMalformPkt) || attempt == 3 {
				break
			}
			t.Logf("attempt %d: %v (the driver's zero-ended challenge); trying again", attempt, err)
		}
		if err != nil {
			t.Fatalf("ed25519 login through the proxy: %v", err)
		}
		if !strings.HasPrefix(user, env.EdUser+"@") {
			t.Errorf("current user = %q", user)
		}
	})
}

func TestDriver500Connections(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		// The check is of 500 connections each running a statement at once, not of how
		// fast the adaptive capacity grows for them on a loaded machine: a fixed capacity
		// admits them all.
		p := startProxy(t, inMode(mode, func(c *config.Config) { c.Admission.Capacity = config.Capacity(time.Hour) }))
		db := openDB(t, p.Addr, "")
		const n = 500
		db.SetMaxOpenConns(n)
		db.SetMaxIdleConns(n)
		ctx := context.Background()
		conns := make([]*sql.Conn, n)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range conns {
			wg.Go(func() {
				c, err := db.Conn(ctx)
				if err != nil {
					errs <- err
					return
				}
				conns[i] = c
				var id int
				if err := c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		if p.Open() != n {
			t.Errorf("proxy has %d connections open, want %d", p.Open(), n)
		}
		// All at once, each on its own connection.
		start := make(chan struct{})
		for _, c := range conns {
			if c == nil {
				continue
			}
			wg.Go(func() {
				<-start
				var v int
				if err := c.QueryRowContext(ctx, "SELECT 1 FROM DUAL WHERE SLEEP(0.05) = 0").Scan(&v); err != nil {
					errs <- err
				}
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		db.Close()
		waitFor(t, 10*time.Second, "all connections to close", func() bool { return p.Open() == 0 })
	})
}
