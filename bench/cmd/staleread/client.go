package main

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"
)

// Writes that hit a deadlock or a lock wait timeout are tried up to maxAttempts times in
// all, after a pause of up to retryPause times the attempt.
const (
	maxAttempts = 5
	retryPause  = 5 * time.Millisecond
)

// readWeights is how often each kind of read is drawn, where no own write is to be read
// back. ownShare is the chance that a read after an acknowledged write of the connection (or
// of its pair partner) reads that write back instead.
var readWeights = [...]struct {
	kind   readKind
	weight int
}{{kindPoint, 30}, {kindPrepared, 25}, {kindJoin, 10}, {kindAudit, 15}, {kindChild, 10}, {kindReadOnlyTxn, 10}}

const ownShare = 0.5

// workload is what every client shares: the tables, the ledger, the versions handed out,
// the reads left to run, the tallies and the phases of the arms.
type workload struct {
	schema schema
	ledger *ledger
	// tally counts the whole run; byArm[a] is where an operation on arm a is counted: the
	// run's tally, and the arm's own when there are several arms.
	tally  *tally
	byArm  []tallies
	phases *phases
	// versions is the last version handed out; each write takes the next.
	versions atomic.Int64
	// readsLeft is how many reads may still start; a client stops when it runs out. A run
	// that compares arms has no such bound: it ends at a switch (phases.close).
	readsLeft     atomic.Int64
	writeFraction float64
	txFraction    float64
	// consistency is the comment that starts every read ("" when none).
	consistency string
}

// takeRead reports whether another read may run, and counts it.
func (w *workload) takeRead() bool { return w.readsLeft.Add(-1) >= 0 }

// write is an acknowledged (or about to be sent) write of version to a row.
type write struct {
	row     row
	version int64
}

// pair is two connections that share a session key: each writes with the key, publishes the
// write once acknowledged, and the other reads it back with the key, on its own connection.
type pair struct {
	key  string
	last [2]atomic.Pointer[write] // each side's last acknowledged write
}

// column is one version a read returns: the row it stands for in the ledger (for sr_audit
// and sr_child, the row of sr_t0 or sr_parent that wrote it), and the row it was read from,
// which the connection's monotonic check follows.
type column struct{ source, read row }

// probe is one read: a text query, or a prepared statement and its id argument.
type probe struct {
	kind     readKind
	db       int // index into the client's read handles
	query    string
	prepared bool
	id       int
	cols     []column
	own      int64 // the session's write the read must see; 0: none
	// txn, when set, starts the read-only transaction the query runs in.
	txn string
}

// handles are a client's connections on one arm: where its writes go, and where its reads
// go (the write handle itself, the arm's proxy beside a --write-dsn, or the --read-dsn
// servers), with the statements prepared on each read handle, by their text.
type handles struct {
	write *sql.DB
	reads []*sql.DB
	stmts []map[string]*sql.Stmt
}

// client is one connection (or a write and a read connection, or a set per arm) running
// reads and writes in turn until the reads run out or the run ends. Its fields are its
// own; only the workload and the pair are shared.
type client struct {
	w *workload
	// arms are its handles on each arm; cur is the arm of the operation under way, and
	// writeDB, readDBs and stmts its handles.
	arms    []handles
	cur     int
	writeDB *sql.DB
	readDBs []*sql.DB
	stmts   []map[string]*sql.Stmt
	rng     *rand.Rand
	// session starts every statement of a paired connection ("" when not paired); readPrefix
	// starts every read.
	session, readPrefix string
	pair                *pair
	side                int
	// seen is the newest version this connection read of each row it read.
	seen map[row]int64
	// pending is its last acknowledged write not yet read back (version 0: none);
	// partnerRead the version of the partner's last write it read back.
	pending     write
	partnerRead int64
}

// newClient returns a client on its handles of each arm (reads nil: reads go to the write
// handle), in pair p on side (p nil: not paired).
func newClient(w *workload, arms []handles, rng *rand.Rand, p *pair, side int) *client {
	c := &client{w: w, rng: rng, pair: p, side: side, seen: map[row]int64{}, readPrefix: w.consistency}
	for _, h := range arms {
		if len(h.reads) == 0 {
			h.reads = []*sql.DB{h.write}
		}
		for range h.reads {
			h.stmts = append(h.stmts, map[string]*sql.Stmt{})
		}
		c.arms = append(c.arms, h)
	}
	c.use(0)
	if p != nil {
		c.session = "/* gk:session=" + p.key + " */ "
		c.readPrefix += c.session
	}
	return c
}

// use makes arm the one the next operation runs on.
func (c *client) use(arm int) {
	h := &c.arms[arm]
	c.cur, c.writeDB, c.readDBs, c.stmts = arm, h.write, h.reads, h.stmts
}

// run does reads and writes, drawn at random, until the reads run out or ctx is done; each
// runs within one phase, on that phase's arm.
func (c *client) run(ctx context.Context) {
	for ctx.Err() == nil {
		arm, open := c.w.phases.enter()
		more := open
		if open {
			c.use(arm)
			more = c.step(ctx)
		}
		c.w.phases.leave()
		if !more {
			return
		}
	}
}

// step does one read or write, drawn at random; it reports false when the reads have run
// out.
func (c *client) step(ctx context.Context) bool {
	if c.rng.Float64() < c.w.writeFraction {
		c.write(ctx)
		return true
	}
	if !c.w.takeRead() {
		return false
	}
	c.read(ctx)
	return true
}

// tallies is where the operation under way is counted.
func (c *client) tallies() tallies { return c.w.byArm[c.cur] }

// read draws a read, takes what the ledger says each of its rows must be at least, sends
// it and judges what came back.
func (c *client) read(ctx context.Context) {
	p := c.nextProbe()
	want := make([]expectation, len(p.cols))
	for i, col := range p.cols {
		seen, ok := c.seen[col.read]
		want[i] = expectation{acked: c.w.ledger.acked(col.source), own: p.own, seen: seen, haveSeen: ok}
	}
	got := make([]int64, len(p.cols))
	start := time.Now()
	err := c.query(ctx, p, got)
	took := time.Since(start)
	if err != nil {
		if ctx.Err() == nil {
			c.tallies().failed(err)
		}
		return
	}
	v, ex := c.judgeAll(p, want, got)
	c.tallies().read(p.kind, took, v, ex)
}

// judgeAll judges each version a read returned, notes the newest the connection has seen
// of each row, and describes the first column that failed a check.
func (c *client) judgeAll(p probe, want []expectation, got []int64) (verdict, example) {
	var v verdict
	ex := example{Kind: p.kind.String()}
	for i, col := range p.cols {
		vi := judge(got[i], want[i])
		if vi != (verdict{}) && ex.Table == "" {
			ex.Table, ex.ID, ex.Got = c.w.schema.name(col.read.table), col.read.id, got[i]
			ex.Acked, ex.Own = want[i].acked, want[i].own
			if want[i].haveSeen {
				ex.Seen = &want[i].seen
			}
		}
		v = v.or(vi)
		if !want[i].haveSeen || got[i] > want[i].seen {
			c.seen[col.read] = got[i]
		}
	}
	return v, ex
}

// query sends p and scans its versions into got.
func (c *client) query(ctx context.Context, p probe, got []int64) error {
	dest := make([]any, len(got))
	for i := range got {
		dest[i] = &got[i]
	}
	if p.txn != "" {
		return c.inTxn(ctx, p, dest)
	}
	if !p.prepared {
		return c.readDBs[p.db].QueryRowContext(ctx, p.query).Scan(dest...)
	}
	stmt, ok := c.stmts[p.db][p.query]
	if !ok {
		var err error
		if stmt, err = c.readDBs[p.db].PrepareContext(ctx, p.query); err != nil {
			return err
		}
		c.stmts[p.db][p.query] = stmt
	}
	return stmt.QueryRowContext(ctx, p.id).Scan(dest...)
}

// inTxn runs p's query inside the transaction p.txn starts, on one connection, and ends
// it. The versions it must see are those acknowledged before the transaction began.
func (c *client) inTxn(ctx context.Context, p probe, dest []any) error {
	conn, err := c.readDBs[p.db].Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, p.txn); err != nil {
		return err
	}
	if err := conn.QueryRowContext(ctx, p.query).Scan(dest...); err != nil {
		_, _ = conn.ExecContext(ctx, "ROLLBACK")
		return err
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	return err
}

// nextProbe draws the next read: the connection's own last write read back, or its
// partner's, or else a read of a random kind on a random row. With a hot table, whose
// writes are not to be read, it never reads a write back, nor the hot table.
func (c *client) nextProbe() probe {
	if c.w.schema.hot() >= 0 {
		return c.drawProbe()
	}
	if c.pending.version > 0 && c.rng.Float64() < ownShare {
		w := c.pending
		c.pending = write{}
		return c.point(kindOwn, w.row, w.version)
	}
	if c.pair != nil && c.rng.Float64() < ownShare {
		if w := c.pair.last[1-c.side].Load(); w != nil && w.version > c.partnerRead {
			c.partnerRead = w.version
			return c.point(kindSession, w.row, w.version)
		}
	}
	return c.drawProbe()
}

// drawProbe draws a read of a random kind on a random row, of a table other than the hot
// one.
func (c *client) drawProbe() probe {
	s := c.w.schema
	id := 1 + c.rng.IntN(s.rows)
	switch kind := c.drawKind(); kind {
	case kindPrepared:
		r := row{c.readTable(s.written(), -1), id}
		p := c.point(kindPrepared, r, 0)
		p.prepared, p.id, p.query = true, r.id, c.readPrefix+"SELECT v FROM "+s.name(r.table)+" WHERE id = ?"
		return p
	case kindJoin, kindReadOnlyTxn:
		a := c.readTable(s.tables, -1)
		b := c.readTable(s.tables, a)
		p := probe{kind: kindJoin, db: c.rng.IntN(len(c.readDBs)), query: c.readPrefix +
			"SELECT a.v, b.v FROM " + s.name(a) + " a JOIN " + s.name(b) + " b ON b.id = a.id WHERE a.id = " + strconv.Itoa(id),
			cols: []column{{row{a, id}, row{a, id}}, {row{b, id}, row{b, id}}}}
		if kind == kindReadOnlyTxn {
			p.kind, p.txn = kind, c.readPrefix+"START TRANSACTION READ ONLY"
		}
		return p
	case kindAudit:
		return probe{kind: kindAudit, db: c.rng.IntN(len(c.readDBs)), query: c.readPrefix +
			"SELECT v FROM sr_audit WHERE tbl = 0 AND id = " + strconv.Itoa(id),
			cols: []column{{row{0, id}, row{s.audit(), id}}}}
	case kindChild:
		return probe{kind: kindChild, db: c.rng.IntN(len(c.readDBs)), query: c.readPrefix +
			"SELECT v FROM sr_child WHERE id = " + strconv.Itoa(id),
			cols: []column{{row{s.parent(), id}, row{s.child(), id}}}}
	}
	return c.point(kindPoint, row{c.readTable(s.written(), -1), id}, 0)
}

// readTable draws one of the first n tables, other than the hot table and than not (-1:
// none); the schema leaves at least one.
func (c *client) readTable(n, not int) int {
	hot := c.w.schema.hot()
	left := 0
	for t := range n {
		if t != hot && t != not {
			left++
		}
	}
	k := c.rng.IntN(left)
	for t := range n {
		if t == hot || t == not {
			continue
		}
		if k == 0 {
			return t
		}
		k--
	}
	panic("readTable: no table left to read") // validate keeps enough tables
}

// point is a point select of r as a text query, held to the session's write own (0: none).
func (c *client) point(kind readKind, r row, own int64) probe {
	return probe{kind: kind, db: c.rng.IntN(len(c.readDBs)), own: own,
		query: c.readPrefix + "SELECT v FROM " + c.w.schema.name(r.table) + " WHERE id = " + strconv.Itoa(r.id),
		cols:  []column{{r, r}}}
}

// drawKind draws a kind of read by readWeights.
func (c *client) drawKind() readKind {
	total := 0
	for _, rw := range readWeights {
		total += rw.weight
	}
	n := c.rng.IntN(total)
	for _, rw := range readWeights {
		if n < rw.weight {
			return rw.kind
		}
		n -= rw.weight
	}
	return kindPoint
}

// write sets a random row, or in a share of transactions two rows of two tables, to fresh
// versions, and once acknowledged records them in the ledger and as the connection's (and
// its pair's) own write to read back.
func (c *client) write(ctx context.Context) {
	ws := c.drawWrites()
	err := c.apply(ctx, ws)
	for attempt := 1; attempt < maxAttempts && err != nil && retryable(err) && ctx.Err() == nil; attempt++ {
		c.tallies().retried(err)
		time.Sleep(time.Duration(c.rng.Int64N(int64(retryPause) * int64(attempt))))
		err = c.apply(ctx, ws)
	}
	if err != nil {
		if ctx.Err() == nil {
			c.tallies().failed(err)
		}
		return
	}
	for _, w := range ws {
		c.w.ledger.record(w.row, w.version)
	}
	c.pending = ws[0]
	if c.pair != nil {
		c.pair.last[c.side].Store(&ws[0])
	}
	c.tallies().wrote(len(ws) > 1)
}

// drawWrites draws one row, or with the transaction share two rows of two tables, each
// with a fresh version; with a hot table, every row is one of its own.
func (c *client) drawWrites() []write {
	s := c.w.schema
	t := c.rng.IntN(s.written())
	if hot := s.hot(); hot >= 0 {
		t = hot
	}
	ws := []write{{row{t, 1 + c.rng.IntN(s.rows)}, c.w.versions.Add(1)}}
	if c.rng.Float64() < c.w.txFraction {
		t2 := (t + 1 + c.rng.IntN(s.written()-1)) % s.written()
		if s.hot() >= 0 {
			t2 = t
		}
		ws = append(ws, write{row{t2, 1 + c.rng.IntN(s.rows)}, c.w.versions.Add(1)})
	}
	return ws
}

// apply sends the writes: one autocommit UPDATE, or BEGIN, the UPDATEs and COMMIT. A
// failed transaction is rolled back. Each UPDATE keeps the greater of the row's version and
// its own, so that a row never goes back when two writes of it commit out of the order
// their versions were handed out in.
func (c *client) apply(ctx context.Context, ws []write) error {
	if len(ws) == 1 {
		return c.exec(ctx, c.update(ws[0]))
	}
	stmts := []string{c.session + "BEGIN"}
	for _, w := range ws {
		stmts = append(stmts, c.update(w))
	}
	stmts = append(stmts, c.session+"COMMIT")
	for _, stmt := range stmts {
		if err := c.exec(ctx, stmt); err != nil {
			c.rollback(ctx)
			return err
		}
	}
	return nil
}

// rollbackTimeout bounds the ROLLBACK after a failed transaction.
const rollbackTimeout = 5 * time.Second

// rollback ends what is left of a failed transaction, even when ctx is done; if that fails
// too, the connection is broken and the next statement gets a new one.
func (c *client) rollback(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	_ = c.exec(ctx, c.session+"ROLLBACK") // the transaction's own error is the one reported
}

// update is the UPDATE of one write.
func (c *client) update(w write) string {
	v := strconv.FormatInt(w.version, 10)
	return c.session + "UPDATE " + c.w.schema.name(w.row.table) + " SET v = GREATEST(v, " + v + ") WHERE id = " + strconv.Itoa(w.row.id)
}

// exec sends a statement as a text query (no arguments: the driver does not prepare it).
func (c *client) exec(ctx context.Context, stmt string) error {
	_, err := c.writeDB.ExecContext(ctx, stmt)
	return err
}
