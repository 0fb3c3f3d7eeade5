package integration

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/admission"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/routing"
)

// routedProxy starts a pooled proxy that routes reads to replicas.
func routedProxy(t *testing.T, replicas []string, edit func(*config.Config)) *testProxy {
	t.Helper()
	return startProxy(t, func(c *config.Config) {
		c.Mode = config.ModePooled
		c.Monitor.User, c.Monitor.Password = env.User, env.Password
		c.Backends.Replicas = replicas
		c.Replicas.PollInterval = 2 * time.Millisecond
		if edit != nil {
			edit(c)
		}
	})
}

// oneConn opens a handle on a single connection through addr.
func oneConn(t *testing.T, addr string) *sql.DB {
	t.Helper()
	db := openDB(t, addr, "")
	db.SetMaxOpenConns(1)
	return db
}

// sqlThread stops or starts the applier thread of the replica at addr.
func sqlThread(t *testing.T, addr string, run bool) {
	t.Helper()
	db := openDB(t, addr, "")
	defer db.Close()
	q := "STOP SLAVE SQL_THREAD"
	if run {
		q = "START SLAVE SQL_THREAD"
	}
	mustExec(t, db, q)
}

// readsTo returns the reads the proxy sent to backend addr for reason.
func readsTo(t *testing.T, p *testProxy, addr, reason string) float64 {
	return metricValue(t, p, "gatekeeper_reads_total", map[string]string{"backend": addr, "reason": reason})
}

// waitRoutable waits until the proxy's monitors have seen both replicas and read the
// triggers, cascades and views, and its binlog follower, where it has one, follows (or
// was refused).
func waitRoutable(t *testing.T, p *testProxy) {
	t.Helper()
	waitFor(t, 10*time.Second, "replicas up, the closure read and the follower live", func() bool {
		r := p.Router()
		for _, b := range r.Replicas() {
			if !b.Status().Up {
				return false
			}
		}
		if policy := p.Routing(); policy != nil {
			if _, f := policy.Writes(); f != nil {
				if l, ok := f.(interface{ Live() bool }); ok && !l.Live() && !f.Denied() {
					return false
				}
			}
		}
		return r.Versions().ClosureLoaded()
	})
}

// waitCaughtUp waits until every replica of the proxy has applied what the primary has
// now, and the proxy's monitors have seen them do it. The monitors alone are not enough:
// a status checked before the primary's last write reads no lag.
func waitCaughtUp(t *testing.T, p *testProxy) {
	t.Helper()
	primary := openDB(t, env.Primary, "")
	defer primary.Close()
	var pos string
	require.NoError(t, primary.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos))
	for _, b := range p.Router().Replicas() {
		db := openDB(t, b.Addr, "")
		var res int
		err := db.QueryRow("SELECT MASTER_GTID_WAIT(?, 10)", pos).Scan(&res)
		db.Close()
		require.NoError(t, err)
		require.Zero(t, res, "replica %s did not reach the primary's %s in 10 s", b.Addr, pos)
	}
	applied := time.Now()
	waitFor(t, 10*time.Second, "the monitors to see the replicas caught up", func() bool {
		for _, b := range p.Router().Replicas() {
			st := b.Status()
			if st.Checked.Before(applied) || st.LagTxns > 0 {
				return false
			}
		}
		return true
	})
}

// twoAtATime starts a proxy routing reads to replicas by balance (eventual consistency),
// with admission on and each backend running two units at most, which wait 3 s at most;
// it returns it, caught up, and its controllers, the primary's first.
func twoAtATime(t *testing.T, balance string, replicas ...string) (*testProxy, []*admission.Controller) {
	t.Helper()
	p := routedProxy(t, replicas, func(c *config.Config) {
		c.Routing.Consistency = "eventual"
		c.Routing.Balance = balance
		c.Admission.Enabled = true
		c.Admission.Capacity = config.Capacity(time.Hour)
		c.Admission.MaxConcurrency = 2
		c.Admission.QueueTimeout = 3 * time.Second
	})
	waitRoutable(t, p)
	waitCaughtUp(t, p)
	ctls := p.BackendAdmission()
	require.Len(t, ctls, 1+len(replicas))
	return p, ctls
}

// lockTable holds table locked for writing on the server at addr, so that reads of it there
// wait; unlock releases it, at the test's end at the latest.
func lockTable(t *testing.T, addr, table string) (unlock func()) {
	t.Helper()
	db := openDB(t, addr, "")
	conn, err := db.Conn(t.Context())
	require.NoError(t, err)
	_, err = conn.ExecContext(t.Context(), "LOCK TABLES "+table+" WRITE")
	require.NoError(t, err)
	var once sync.Once
	unlock = func() {
		once.Do(func() {
			_, err := conn.ExecContext(context.Background(), "UNLOCK TABLES")
			assert.NoError(t, err)
			conn.Close()
			db.Close()
		})
	}
	t.Cleanup(unlock)
	return unlock
}

// rowTable creates the test's table on the primary (direct), with one row: id 1, v 0.
func rowTable(t *testing.T, direct *sql.DB) string {
	t.Helper()
	tbl := tableName(t)
	mustExec(t, direct, "DROP TABLE IF EXISTS "+tbl)
	mustExec(t, direct, "CREATE TABLE "+tbl+" (id INT PRIMARY KEY, v INT NOT NULL)")
	mustExec(t, direct, "INSERT INTO "+tbl+" VALUES (1, 0)")
	return tbl
}

// Strong consistency: a read on one connection sees the write another connection had
// acknowledged, through a trigger, a cascade, a view and a stored function too, while one replica's applier
// is stopped; and reads still go to the replicas.
func TestRoutingReadsSeeAcknowledgedWrites(t *testing.T) {
	direct := openDB(t, env.Primary, "")
	defer direct.Close()
	tbl := tableName(t)
	for _, q := range []string{
		"DROP VIEW IF EXISTS " + tbl + "_v",
		"DROP FUNCTION IF EXISTS " + tbl + "_fn",
		"DROP TABLE IF EXISTS " + tbl + "_child, " + tbl + "_audit, " + tbl + ", " + tbl + "_parent",
		"CREATE TABLE " + tbl + " (id INT PRIMARY KEY, v INT NOT NULL)",
		"CREATE TABLE " + tbl + "_audit (id INT PRIMARY KEY, v INT NOT NULL)",
		"CREATE TRIGGER " + tbl + "_tr AFTER UPDATE ON " + tbl + " FOR EACH ROW REPLACE INTO " + tbl + "_audit VALUES (NEW.id, NEW.v)",
		"CREATE TABLE " + tbl + "_parent (id INT PRIMARY KEY, v INT NOT NULL, UNIQUE KEY (v))",
		"CREATE TABLE " + tbl + "_child (id INT PRIMARY KEY, pv INT, FOREIGN KEY (pv) REFERENCES " + tbl + "_parent (v) ON UPDATE CASCADE)",
		"CREATE VIEW " + tbl + "_v AS SELECT id, v FROM " + tbl,
		"CREATE FUNCTION " + tbl + "_fn(i INT) RETURNS INT READS SQL DATA RETURN (SELECT v FROM " + tbl + " WHERE id = i)",
		"INSERT INTO " + tbl + " VALUES (1, 0)",
		"INSERT INTO " + tbl + "_parent VALUES (1, 0)",
		"INSERT INTO " + tbl + "_child VALUES (1, 0)",
	} {
		mustExec(t, direct, q)
	}
	p := routedProxy(t, []string{env.Replica1, env.Replica2}, nil)
	waitRoutable(t, p)
	writer, reader := oneConn(t, p.Addr), oneConn(t, p.Addr)
	defer writer.Close()
	defer reader.Close()

	stopped := false
	defer func() {
		if stopped {
			sqlThread(t, env.Replica1, true)
		}
	}()
	reads := map[string]string{
		"table":    "SELECT v FROM " + tbl + " WHERE id = 1",
		"view":     "SELECT v FROM " + tbl + "_v WHERE id = 1",
		"trigger":  "SELECT v FROM " + tbl + "_audit WHERE id = 1",
		"cascade":  "SELECT pv FROM " + tbl + "_child WHERE id = 1",
		"function": "SELECT " + tbl + "_fn(1)",
	}
	stmt, err := reader.Prepare(reads["table"])
	require.NoError(t, err)
	defer stmt.Close()
	const rounds = 150
	for i := 1; i <= rounds; i++ {
		switch i {
		case rounds / 3:
			sqlThread(t, env.Replica1, false)
			stopped = true
		case 2 * rounds / 3:
			sqlThread(t, env.Replica1, true)
			stopped = false
		}
		mustExec(t, writer, fmt.Sprintf("UPDATE %s SET v = %d WHERE id = 1", tbl, i))
		mustExec(t, writer, fmt.Sprintf("UPDATE %s_parent SET v = %d WHERE id = 1", tbl, i))
		for what, q := range reads {
			var v int
			require.NoError(t, reader.QueryRow(q).Scan(&v))
			require.Equal(t, i, v, "round %d: the %s read missed an acknowledged write", i, what)
		}
		var v int
		require.NoError(t, stmt.QueryRow().Scan(&v))
		require.Equal(t, i, v, "round %d: the prepared read missed an acknowledged write", i)
	}
	onReplicas := 0.0
	for _, r := range []string{env.Replica1, env.Replica2} {
		onReplicas += readsTo(t, p, r, "routed") + readsTo(t, p, r, "waited")
	}
	fellBack := readsTo(t, p, env.Primary, "fell_back_to_primary")
	t.Logf("reads on replicas %.0f, fell back to the primary %.0f, writes %.0f", onReplicas, fellBack,
		readsTo(t, p, env.Primary, "write"))
	assert.Greater(t, onReplicas, float64(rounds), "most reads go to replicas")
	assert.Equal(t, float64(2*rounds), readsTo(t, p, env.Primary, "write"))
}

// With both appliers stopped, an eventual read shows the replica's old row, which proves
// the reads really go there; a session read with the writer's key does not, and neither
// does a strong one: both wait out routing.causal_wait and go to the primary.
func TestRoutingConsistencyModes(t *testing.T) {
	direct := openDB(t, env.Primary, "")
	defer direct.Close()
	tbl := rowTable(t, direct)
	p := routedProxy(t, []string{env.Replica1, env.Replica2}, nil)
	waitRoutable(t, p)
	waitCaughtUp(t, p)
	writer, reader := oneConn(t, p.Addr), oneConn(t, p.Addr)
	defer writer.Close()
	defer reader.Close()
	for _, r := range []string{env.Replica1, env.Replica2} {
		sqlThread(t, r, false)
		defer sqlThread(t, r, true)
	}
	mustExec(t, writer, "/* gk:session=cart-7 */ UPDATE "+tbl+" SET v = 1 WHERE id = 1")
	read := func(hints string) int {
		var v int
		require.NoError(t, reader.QueryRow(hints+" SELECT v FROM "+tbl+" WHERE id = 1").Scan(&v))
		return v
	}
	assert.Equal(t, 0, read("/* gk:consistency=eventual */"), "eventual reads the replica's old row")
	assert.Equal(t, 1, read("/* gk:consistency=session gk:session=cart-7 */"), "the session's own write")
	assert.Equal(t, 1, read(""), "strong (the default)")
	assert.GreaterOrEqual(t, readsTo(t, p, env.Primary, "fell_back_to_primary"), 2.0)
	assert.Equal(t, 2.0, metricValue(t, p, "gatekeeper_causal_wait_seconds", nil), "two reads waited")
	// Another session's key does not wait for this one's writes.
	assert.Equal(t, 0, read("/* gk:consistency=session gk:session=cart-8 */"))
}

// Writes, transactions and session-dependent reads stay on the primary.
func TestRoutingKeepsWhatMustStayOnThePrimary(t *testing.T) {
	p := routedProxy(t, []string{env.Replica1, env.Replica2}, nil)
	waitRoutable(t, p)
	db := oneConn(t, p.Addr)
	defer db.Close()
	var id1, id2 string
	require.NoError(t, db.QueryRow("SELECT @@server_id").Scan(&id1))
	mustExec(t, db, "SET autocommit = 0")
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.TABLES").Scan(new(int)))
	mustExec(t, db, "COMMIT")
	mustExec(t, db, "SET autocommit = 1")
	mustExec(t, db, "SET @x = 5")
	require.NoError(t, db.QueryRow("SELECT @x + COUNT(*) FROM information_schema.TABLES").Scan(new(int)))
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.TABLES").Scan(new(int)))
	require.NoError(t, db.QueryRow("SELECT @@server_id").Scan(&id2))
	assert.Equal(t, id1, id2)
	assert.Equal(t, 1.0, readsTo(t, p, env.Primary, "in_transaction"))
	assert.Equal(t, 1.0, readsTo(t, p, env.Primary, "pinned"))
}

// A replica that dies costs the clients nothing: reads in flight to it run again on the
// primary when nothing of their answer was relayed, later reads go to the other replica,
// and the replica takes reads again once it answers.
func TestRoutingSurvivesAReplicaDeath(t *testing.T) {
	dead := newCutter(t, env.Replica1)
	replica := dead.addr()
	p := routedProxy(t, []string{replica}, func(c *config.Config) { c.Routing.Consistency = "eventual" })
	waitRoutable(t, p)
	const clients = 16
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	stop := make(chan struct{})
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db := oneConn(t, p.Addr)
			defer db.Close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				var n int
				if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.COLLATIONS").Scan(&n); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	before := readsTo(t, p, replica, "routed")
	dead.setDown(true)
	dead.cut()
	waitFor(t, 5*time.Second, "the replica marked down", func() bool { return !p.Router().Replicas()[0].Status().Up })
	time.Sleep(300 * time.Millisecond)
	dead.setDown(false)
	waitFor(t, 5*time.Second, "the replica back", func() bool { return p.Router().Replicas()[0].Status().Up })
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err, "a client saw the replica's death")
	}
	after := readsTo(t, p, replica, "routed")
	assert.Greater(t, before, 0.0)
	assert.Greater(t, after, before, "reads went to the replica again")
	assert.Greater(t, readsTo(t, p, env.Primary, "fell_back_to_primary"), 0.0)
}

// Each backend has its own admission capacity: reads stuck on a replica (a table locked
// there) fill only that replica's capacity, and writes to the primary go on; a read that
// waits out the queue timeout for the replica's capacity is told which backend was full, and
// leaves nothing counted against the replica.
func TestRoutingReplicaHasItsOwnCapacity(t *testing.T) {
	direct := openDB(t, env.Primary, "")
	defer direct.Close()
	stuck, other := tableName(t)+"_r", tableName(t)+"_w"
	for _, tb := range []string{stuck, other} {
		mustExec(t, direct, "DROP TABLE IF EXISTS "+tb)
		mustExec(t, direct, "CREATE TABLE "+tb+" (id INT PRIMARY KEY AUTO_INCREMENT, v INT)")
	}
	mustExec(t, direct, "INSERT INTO "+stuck+" (v) VALUES (1)")
	p, ctls := twoAtATime(t, "self", env.Replica1)
	// Measured once, the read's type is not a probe that others of its type wait for.
	warm := oneConn(t, p.Addr)
	require.NoError(t, warm.QueryRow("SELECT COUNT(*) FROM "+stuck).Scan(new(int)))
	warm.Close()

	// Hold the table on the replica: reads of it there wait for the lock.
	unlock := lockTable(t, env.Replica1, stuck)

	const readers = 3
	errs := make(chan error, readers)
	hold := make(chan struct{}) // the readers keep their sessions until the end
	defer close(hold)
	for range readers {
		go func() {
			db := oneConn(t, p.Addr)
			defer db.Close()
			var n int
			errs <- db.QueryRow("SELECT COUNT(*) FROM " + stuck).Scan(&n)
			<-hold
		}()
	}
	waitFor(t, 5*time.Second, "two reads running and one waiting for capacity", func() bool {
		running, queued := 0, 0
		for _, c := range ctls {
			s := c.Snapshot()
			running, queued = running+s.Running, queued+s.Queued
		}
		return running == 2 && queued == 1
	})

	// The primary's capacity is its own: writes go through at once.
	writer := oneConn(t, p.Addr)
	defer writer.Close()
	for i := range 5 {
		start := time.Now()
		mustExec(t, writer, fmt.Sprintf("INSERT INTO %s (v) VALUES (%d)", other, i))
		assert.Less(t, time.Since(start), 2*time.Second, "a write waited behind the replica's reads")
	}
	assert.Equal(t, 0, ctls[0].Snapshot().Queued, "nothing waits for the primary")
	s := ctls[1].Snapshot()
	assert.Equal(t, [2]int{2, 1}, [2]int{s.Running, s.Queued}, "the replica's reads run and wait at the replica")
	assert.Equal(t, 1.0, metricValue(t, p, "gatekeeper_backend_admission_queue_length", map[string]string{"backend": env.Replica1}))

	// The waiting read times out; then the lock goes and the two running reads end.
	var timedOut error
	select {
	case timedOut = <-errs:
	case <-time.After(10 * time.Second):
		t.Fatal("the read waiting for the replica's capacity never timed out")
	}
	var me *mysql.MySQLError
	require.ErrorAs(t, timedOut, &me)
	assert.Equal(t, uint16(1205), me.Number)
	assert.Contains(t, me.Message, "while replica "+env.Replica1+" was at capacity")
	unlock()
	for range readers - 1 {
		select {
		case err := <-errs:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("a read on the replica never ended")
		}
	}
	assert.Equal(t, 3.0, readsTo(t, p, env.Replica1, "routed"), "the warm-up and the two that ran")
	waitFor(t, 5*time.Second, "the replica's capacity free again", func() bool {
		s := ctls[1].Snapshot()
		return s.Running == 0 && s.Queued == 0
	})
	work, n := p.Router().Replicas()[0].Outstanding()
	assert.Equal(t, [2]int64{0, 0}, [2]int64{int64(work), n}, "reads still counted on the replica")
}

// A replica lost after part of a read's result was relayed: the client gets an error in
// place of the rest, never a result that looks complete, and keeps its connection.
func TestRoutingReplicaLostMidResult(t *testing.T) {
	cut := newCutter(t, env.Replica1)
	p := routedProxy(t, []string{cut.addr()}, func(c *config.Config) { c.Routing.Consistency = "eventual" })
	waitRoutable(t, p)
	db := openDB(t, p.Addr, "")
	defer db.Close()
	conn, err := db.Conn(t.Context())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(t.Context(), "SET @@session.sql_mode = 'ANSI_QUOTES'")
	require.NoError(t, err)

	rows, err := conn.QueryContext(t.Context(), "SELECT seq, REPEAT('x', 200) FROM seq_1_to_2000000")
	require.NoError(t, err)
	n := 0
	for rows.Next() {
		if n++; n == 1000 {
			cut.cut()
		}
	}
	err = rows.Err()
	rows.Close()
	var me *mysql.MySQLError
	require.ErrorAs(t, err, &me, "after %d rows of 2000000", n)
	assert.Equal(t, uint16(1317), me.Number)
	assert.Contains(t, me.Message, "gatekeeper: lost the connection to replica "+cut.addr())
	assert.Less(t, n, 2000000)

	// The same connection goes on, with its session.
	var mode string
	require.NoError(t, conn.QueryRowContext(t.Context(), "SELECT @@session.sql_mode").Scan(&mode))
	assert.Equal(t, "ANSI_QUOTES", mode)
	assert.Equal(t, 1, p.Open())
	assert.Equal(t, 1.0, metricValue(t, p, "gatekeeper_backend_lost_total", nil))
	assert.Equal(t, 1.0, readsTo(t, p, cut.addr(), "routed"))
}

// Read-only transactions run whole on a replica that has every acknowledged write; a
// statement in one that would tie the session to the replica is refused, and the
// session's later writes go to the primary.
func TestRoutingReadOnlyTransactions(t *testing.T) {
	direct := openDB(t, env.Primary, "")
	defer direct.Close()
	tbl := rowTable(t, direct)
	var primaryID int
	require.NoError(t, direct.QueryRow("SELECT @@server_id").Scan(&primaryID))
	p := routedProxy(t, []string{env.Replica1, env.Replica2}, nil)
	waitRoutable(t, p)
	waitCaughtUp(t, p)
	db := oneConn(t, p.Addr)
	defer db.Close()
	serverIn := func(begin string) int {
		t.Helper()
		mustExec(t, db, begin)
		var id, v int
		require.NoError(t, db.QueryRow("SELECT @@server_id").Scan(&id))
		require.NoError(t, db.QueryRow("SELECT v FROM "+tbl+" WHERE id = 1").Scan(&v))
		mustExec(t, db, "COMMIT")
		return id
	}
	assert.NotEqual(t, primaryID, serverIn("START TRANSACTION READ ONLY"), "on a replica")
	assert.Equal(t, primaryID, serverIn("START TRANSACTION"), "a read-write transaction")
	mustExec(t, db, "SET SESSION TRANSACTION READ ONLY")
	assert.NotEqual(t, primaryID, serverIn("BEGIN"), "BEGIN in a read-only session")
	mustExec(t, db, "SET SESSION TRANSACTION READ WRITE")
	assert.Equal(t, primaryID, serverIn("BEGIN"))

	// State that would outlive the transaction on the replica is refused; the
	// transaction goes on.
	mustExec(t, db, "START TRANSACTION READ ONLY")
	_, err := db.Exec("SET @x = 1")
	var me *mysql.MySQLError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, uint16(1792), me.Number)
	assert.Contains(t, me.Message, "gatekeeper: this read-only transaction runs on replica")
	var found int
	require.NoError(t, db.QueryRow("SELECT SQL_CALC_FOUND_ROWS v FROM "+tbl).Scan(new(int)))
	require.NoError(t, db.QueryRow("SELECT FOUND_ROWS()").Scan(&found))
	assert.Equal(t, 1, found)
	mustExec(t, db, "COMMIT")
	// What the transaction left for the next statement does not hold the session there.
	mustExec(t, db, "UPDATE "+tbl+" SET v = 1 WHERE id = 1")

	// Strong: the transaction needs every acknowledged write, so with both appliers
	// stopped it runs on the primary.
	for _, r := range []string{env.Replica1, env.Replica2} {
		sqlThread(t, r, false)
		defer sqlThread(t, r, true)
	}
	mustExec(t, db, "UPDATE "+tbl+" SET v = 2 WHERE id = 1")
	mustExec(t, db, "START TRANSACTION READ ONLY")
	var v int
	require.NoError(t, db.QueryRow("SELECT v FROM "+tbl+" WHERE id = 1").Scan(&v))
	mustExec(t, db, "COMMIT")
	assert.Equal(t, 2, v)
	assert.GreaterOrEqual(t, readsTo(t, p, env.Primary, "fell_back_to_primary"), 1.0)
	for _, b := range p.Router().Replicas() {
		work, n := b.Outstanding()
		assert.Equal(t, [2]int64{0, 0}, [2]int64{int64(work), n}, "transactions still counted on %s", b.Addr)
	}

	// routing.read_only_transactions: primary keeps them there.
	onPrimary := routedProxy(t, []string{env.Replica1, env.Replica2}, func(c *config.Config) {
		c.Routing.ReadOnlyTransactions = "primary"
		c.Routing.Consistency = "eventual"
	})
	waitRoutable(t, onPrimary)
	db = oneConn(t, onPrimary.Addr)
	defer db.Close()
	assert.Equal(t, primaryID, serverIn("START TRANSACTION READ ONLY"))
}

// With admission on, a read goes to a replica whose capacity has room before one that is
// full, whatever the balance policy: round robin here, with reads stuck on the first
// replica (a table locked there) up to its concurrency bound.
func TestRoutingPrefersReplicasWithRoom(t *testing.T) {
	direct := openDB(t, env.Primary, "")
	defer direct.Close()
	tbl := rowTable(t, direct)
	p, ctls := twoAtATime(t, "rr", env.Replica1, env.Replica2)
	read := func(db *sql.DB) error { return db.QueryRow("SELECT v FROM " + tbl + " WHERE id = 1").Scan(new(int)) }
	warm := oneConn(t, p.Addr)
	for range 2 { // the type measured, on both replicas
		require.NoError(t, read(warm))
	}
	warm.Close()

	unlock := lockTable(t, env.Replica1, tbl)

	// Readers until two hang on the first replica, its bound.
	errs := make(chan error, 16)
	hold := make(chan struct{})
	defer close(hold)
	for started := 0; ctls[1].Snapshot().Running < 2; started++ {
		require.Less(t, started, 8, "reads never reached the first replica")
		go func() {
			db := oneConn(t, p.Addr)
			defer db.Close()
			errs <- read(db)
			<-hold
		}()
		time.Sleep(100 * time.Millisecond)
	}
	before := readsTo(t, p, env.Replica2, "routed")
	db := oneConn(t, p.Addr)
	defer db.Close()
	for i := range 10 {
		start := time.Now()
		require.NoError(t, read(db), "read %d", i)
		assert.Less(t, time.Since(start), time.Second, "read %d waited", i)
	}
	assert.Equal(t, 0, ctls[1].Snapshot().Queued, "nothing waits for the full replica")
	assert.Equal(t, 10.0, readsTo(t, p, env.Replica2, "routed")-before, "every read went to the replica with room")

	unlock()
	waitFor(t, 5*time.Second, "the stuck reads to end", func() bool { return ctls[1].Snapshot().Running == 0 })
}

// A read admitted against a replica's capacity that runs on the primary after all (the
// replica gave it no connection) is charged to the primary's capacity while it runs, and
// gives the replica's back: admission sees the work where it runs.
func TestRoutingFallbackMovesTheCharge(t *testing.T) {
	direct := openDB(t, env.Primary, "")
	defer direct.Close()
	tbl := rowTable(t, direct)
	p := routedProxy(t, []string{env.Replica1}, func(c *config.Config) {
		c.Routing.Consistency = "eventual"
		c.Routing.PrimaryReads = false
		c.Admission.Enabled = true
		c.Admission.Capacity = config.Capacity(time.Hour)
		c.Admission.MaxConcurrency = 4
		c.Pools.MaxOpen, c.Pools.MaxIdle = 1, 1
		c.Pools.WaitTimeout = 200 * time.Millisecond
	})
	waitRoutable(t, p)
	waitCaughtUp(t, p)
	ctls := p.BackendAdmission()
	require.Len(t, ctls, 2)
	read := func(db *sql.DB) error { return db.QueryRow("SELECT v FROM " + tbl + " WHERE id = 1").Scan(new(int)) }
	warm := oneConn(t, p.Addr)
	require.NoError(t, read(warm)) // the type measured: not a probe the next waits for
	warm.Close()

	// Reads of the table wait on either server; the replica has one connection.
	unlockReplica := lockTable(t, env.Replica1, tbl)
	unlockPrimary := lockTable(t, env.Primary, tbl)
	errs := make(chan error, 2)
	reader := func() {
		db := oneConn(t, p.Addr)
		defer db.Close()
		errs <- read(db)
	}
	go reader()
	waitFor(t, 5*time.Second, "a read holding the replica's connection", func() bool { return ctls[1].Snapshot().Running == 1 })
	go reader() // admitted at the replica, which has no connection for it: it runs on the primary
	waitFor(t, 5*time.Second, "the read that fell back charged to the primary", func() bool {
		return ctls[0].Snapshot().Running == 1
	})
	assert.Equal(t, 1, ctls[1].Snapshot().Running, "the replica is charged only for the read it runs")
	assert.Equal(t, 1.0, readsTo(t, p, env.Primary, "fell_back_to_primary"))

	unlockPrimary()
	unlockReplica()
	for range 2 {
		select {
		case err := <-errs:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("a read never ended")
		}
	}
	waitFor(t, 5*time.Second, "both capacities free again", func() bool {
		return ctls[0].Snapshot().Running == 0 && ctls[1].Snapshot().Running == 0
	})
}

// Writes straight to the primary, in each of the binary log's formats (rows, statements
// as text, mixed), are seen by strong reads through the proxy: the follower learns them
// from the log. The replica behind on the written table still serves reads of another.
func TestRoutingStrongSeesWritesThatBypassTheProxy(t *testing.T) {
	p := routedProxy(t, []string{env.Replica1, env.Replica2}, nil)
	waitRoutable(t, p)
	waitFor(t, 10*time.Second, "the binlog follower up", func() bool {
		return metricValue(t, p, "gatekeeper_binlog_follower_up", nil) == 1
	})
	for _, format := range []string{"ROW", "STATEMENT", "MIXED"} {
		t.Run(format, func(t *testing.T) {
			direct := openDB(t, env.Primary, "")
			defer direct.Close()
			tbl := rowTable(t, direct)
			other := rowTable2(t, direct)
			waitCaughtUp(t, p)
			writer, err := direct.Conn(t.Context())
			require.NoError(t, err)
			defer writer.Close()
			_, err = writer.ExecContext(t.Context(), "SET SESSION binlog_format = "+format)
			require.NoError(t, err)
			sqlThread(t, env.Replica1, false) // replica 1 falls behind
			defer sqlThread(t, env.Replica1, true)

			routed1 := readsTo(t, p, env.Replica1, "routed")
			onReplica2 := readsTo(t, p, env.Replica2, "routed") + readsTo(t, p, env.Replica2, "waited")
			txns := metricValue(t, p, "gatekeeper_binlog_transactions_total", nil)
			db := oneConn(t, p.Addr)
			defer db.Close()
			for i := 1; i <= 100; i++ {
				_, err := writer.ExecContext(t.Context(), fmt.Sprintf("UPDATE %s SET v = %d WHERE id = 1", tbl, i))
				require.NoError(t, err)
				var v int
				require.NoError(t, db.QueryRow("SELECT v FROM "+tbl+" WHERE id = 1").Scan(&v))
				require.Equal(t, i, v, "read %d through the proxy after a write straight to the primary", i)
				// A table nobody writes reads on a replica however far the hot one has gone.
				require.NoError(t, db.QueryRow("SELECT v FROM "+other+" WHERE id = 1").Scan(&v))
			}
			assert.Greater(t, readsTo(t, p, env.Replica2, "routed")+readsTo(t, p, env.Replica2, "waited")-onReplica2, 100.0,
				"reads still go to the replica that keeps up")
			assert.Greater(t, readsTo(t, p, env.Replica1, "routed")-routed1, 0.0,
				"the replica behind on the written table still serves reads of the other")
			assert.GreaterOrEqual(t, metricValue(t, p, "gatekeeper_binlog_transactions_total", nil)-txns, 100.0)
		})
	}
}

// rowTable2 is rowTable's second table, for a test that reads one table and writes another.
func rowTable2(t *testing.T, direct *sql.DB) string {
	t.Helper()
	tbl := tableName(t) + "_2"
	mustExec(t, direct, "DROP TABLE IF EXISTS "+tbl)
	mustExec(t, direct, "CREATE TABLE "+tbl+" (id INT PRIMARY KEY, v INT NOT NULL)")
	mustExec(t, direct, "INSERT INTO "+tbl+" VALUES (1, 0)")
	return tbl
}

// noReplicationUser creates, on the primary (and so on the replicas), an account that may
// monitor the servers but not read the binary log, and returns its name and password.
func noReplicationUser(t *testing.T, direct *sql.DB) (user, password string) {
	t.Helper()
	user, password = "gk_norepl", "norepl"
	mustExec(t, direct, "DROP USER IF EXISTS '"+user+"'@'%'")
	mustExec(t, direct, "CREATE USER '"+user+"'@'%' IDENTIFIED BY '"+password+"'")
	mustExec(t, direct, "GRANT SELECT, PROCESS, BINLOG MONITOR, SLAVE MONITOR ON *.* TO '"+user+"'@'%'")
	t.Cleanup(func() { _, _ = direct.Exec("DROP USER IF EXISTS '" + user + "'@'%'") })
	return user, password
}

// A monitor.user the primary refuses the binary log: the proxy says so and counts it, and
// strong reads go on counting the writes it acknowledged (proxy_local), on the replicas.
func TestRoutingFollowerRefusedFallsBackToProxyLocal(t *testing.T) {
	direct := openDB(t, env.Primary, "")
	defer direct.Close()
	tbl := rowTable(t, direct)
	user, password := noReplicationUser(t, direct)
	p := routedProxy(t, []string{env.Replica1, env.Replica2}, func(c *config.Config) {
		c.Monitor.User, c.Monitor.Password = user, password
	})
	waitRoutable(t, p)
	waitCaughtUp(t, p)
	waitFor(t, 10*time.Second, "the follower refused", func() bool {
		return metricValue(t, p, "gatekeeper_binlog_denied_total", nil) >= 1
	})
	assert.Equal(t, routing.ProxyLocal, p.Routing().Rule())
	db := oneConn(t, p.Addr)
	defer db.Close()
	for i := 1; i <= 20; i++ {
		mustExec(t, db, fmt.Sprintf("UPDATE %s SET v = %d WHERE id = 1", tbl, i))
		var v int
		require.NoError(t, db.QueryRow("SELECT v FROM "+tbl+" WHERE id = 1").Scan(&v))
		require.Equal(t, i, v, "a read after a write through the proxy")
	}
	assert.Greater(t, readsTo(t, p, env.Replica1, "routed")+readsTo(t, p, env.Replica2, "routed")+
		readsTo(t, p, env.Replica1, "waited")+readsTo(t, p, env.Replica2, "waited"), 0.0, "reads still on replicas")
}

// check-config says whether monitor.user may read the primary's binary log: a warning that
// names the grant when it may not, and the configuration still valid.
func TestCheckConfigNamesTheBinlogGrant(t *testing.T) {
	direct := openDB(t, env.Primary, "")
	defer direct.Close()
	user, password := noReplicationUser(t, direct)
	bin := gatekeeperBinary(t)
	for _, tc := range []struct{ user, password, want string }{
		{env.User, env.Password, "may read the binary log of the primary"},
		{user, password, "lacks REPLICATION SLAVE on the primary"},
	} {
		file := filepath.Join(t.TempDir(), "gatekeeper.yaml")
		require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(
			"mode: pooled\nauth:\n  from_backend: true\nbackends:\n  primary: %s\n  replicas: [%s]\nmonitor:\n  user: %s\n  password: %s\n",
			env.Primary, env.Replica1, tc.user, tc.password)), 0o600))
		out, err := exec.Command(bin, "check-config", file).CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "configuration is valid")
		assert.Contains(t, string(out), tc.want)
	}
}
