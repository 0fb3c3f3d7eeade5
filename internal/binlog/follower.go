package binlog

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// Config is a follower's.
type Config struct {
	// Addr is the primary's host:port; User and Password the account the follower logs in
	// with (monitor.user), which needs REPLICATION SLAVE and REPLICATION CLIENT.
	Addr, User, Password string
	// ServerID is the server_id the follower registers with; it must differ from every
	// other replica's of the primary (see ServerID).
	ServerID uint32
	// Heartbeat is how often the primary sends a heartbeat on a quiet log, so that a dead
	// connection is noticed within three of them. Zero means 1s.
	Heartbeat time.Duration
}

// Follower reads the primary's binary log and records each committed transaction in the
// version map. Run follows; Recorded tells when the map holds every write up to a position.
type Follower struct {
	cfg      Config
	versions *replicas.Versions
	// ddl is called after DDL committed: the closure must be read again.
	ddl     func()
	log     *slog.Logger
	m       *followerMetrics
	metrics *Metrics

	// Owned by Run's goroutine.
	cls classify.Classifier
	txn txn

	// mu guards the fields below it.
	mu sync.Mutex
	// addr is the primary's address: cfg.Addr until Repoint.
	addr string
	// stop ends the present connection's stream (Repoint); repointed says why it ended.
	stop      context.CancelFunc
	repointed bool
	// pos is the position up to which every transaction is recorded; nil before the
	// follower first started.
	pos replicas.Pos
	// live: the follower streams the log; denied: the primary refused it for want of a
	// grant. advanced is closed (and replaced) when pos or live changes.
	live, denied bool
	advanced     chan struct{}
}

// Errors of Recorded.
var (
	// ErrNotFollowing: the follower is not following the log (disconnected, refused, not
	// started): it cannot say what was written.
	ErrNotFollowing = errors.New("binlog: the follower is not following the primary's log")
)

// New returns a follower of cfg's primary that records writes in versions and calls ddl
// after each DDL. Its metrics are registered with m.
func New(cfg Config, versions *replicas.Versions, ddl func(), log *slog.Logger, m *Metrics) *Follower {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = time.Second
	}
	f := &Follower{cfg: cfg, versions: versions, ddl: ddl, log: log.With("follower", cfg.Addr),
		metrics: m, advanced: make(chan struct{}), addr: cfg.Addr}
	m.watch(f)
	f.m = &m.follower
	return f
}

// Status is what an operator sees of a follower.
type Status struct {
	// Live: it streams the primary's log; Denied: the primary refused it for want of a
	// grant.
	Live, Denied bool
	// Pos is the position up to which it recorded every committed transaction.
	Pos replicas.Pos
	// LagTransactions and LagSeconds are how far it is behind the primary; NaN until known.
	LagTransactions, LagSeconds float64
	// ServerID is the server_id it registers with.
	ServerID uint32
}

// Status returns the follower's state now.
func (f *Follower) Status() Status {
	f.mu.Lock()
	st := Status{Live: f.live, Denied: f.denied, Pos: f.pos, ServerID: f.cfg.ServerID}
	f.mu.Unlock()
	st.LagTransactions, st.LagSeconds = f.metrics.Lag(time.Now())
	return st
}

// Repoint follows the log of the primary at addr from now on, after a failover: from its
// present position, every write before which counts as written to every table (the floor).
func (f *Follower) Repoint(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if addr == f.addr {
		return
	}
	f.addr, f.pos, f.live, f.repointed = addr, nil, false, true
	if f.stop != nil {
		f.stop()
	}
	f.signalLocked()
	f.log.Info("binlog follower: the primary changed; following the new one's log from its present position", "primary", addr)
}

// primary returns the address of the primary whose log is followed.
func (f *Follower) primary() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addr
}

// Pos returns the position up to which every committed transaction is recorded.
func (f *Follower) Pos() replicas.Pos {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pos
}

// Live tells whether the follower streams the log now.
func (f *Follower) Live() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.live
}

// Denied tells whether the primary refused the follower for want of a grant: it then
// retries now and then, and strong reads count only the writes the proxy acknowledged.
func (f *Follower) Denied() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.denied
}

// Recorded returns once every transaction committed up to p is in the version map, or an
// error: ErrNotFollowing while the follower does not stream the log, ctx's when it ends.
func (f *Follower) Recorded(ctx context.Context, p replicas.Pos) error {
	for {
		f.mu.Lock()
		live, covered, ch := f.live, f.pos != nil && f.pos.Covers(p), f.advanced
		f.mu.Unlock()
		switch {
		case covered:
			return nil
		case !live:
			return ErrNotFollowing
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// signalLocked wakes the waiters of Recorded. f.mu is held.
func (f *Follower) signalLocked() {
	close(f.advanced)
	f.advanced = make(chan struct{})
}

// Backoff between the follower's attempts to connect: from minRetry, doubling to maxRetry;
// a refusal for want of a grant is tried again every deniedRetry.
const (
	minRetry    = 100 * time.Millisecond
	maxRetry    = 5 * time.Second
	deniedRetry = 10 * time.Second
)

// Run follows the primary's log until ctx ends, connecting again after each failure from
// the last position it recorded.
func (f *Follower) Run(ctx context.Context) {
	retry := minRetry
	for ctx.Err() == nil {
		started := time.Now()
		fctx, stop := context.WithCancel(ctx)
		f.mu.Lock()
		f.stop, f.repointed = stop, false
		f.mu.Unlock()
		err := f.follow(fctx)
		stop()
		if ctx.Err() != nil {
			break
		}
		f.mu.Lock()
		repointed := f.repointed
		f.repointed = false
		f.mu.Unlock()
		if repointed {
			retry = minRetry
			continue // from the new primary's position, at once
		}
		f.stopped(err)
		if time.Since(started) > maxRetry {
			retry = minRetry // it followed a while: this is a new failure
		}
		wait := retry
		if f.Denied() {
			wait = deniedRetry
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		retry = min(2*retry, maxRetry)
	}
	f.mu.Lock()
	f.live = false
	f.signalLocked()
	f.mu.Unlock()
}

// follow streams the log over one connection until it fails.
func (f *Follower) follow(ctx context.Context) error {
	start, err := f.startingAt(ctx)
	if err != nil {
		return err
	}
	syncer := replication.NewBinlogSyncer(f.syncerConfig())
	// Closing kills the dump thread over a new connection to the primary, which may take
	// the library's whole dial timeout (10 s) when the primary is unreachable: the follower
	// stops and says so without waiting for it.
	defer func() { go syncer.Close() }() // ends when Close does, within the library's dial timeout
	gset, err := mysql.ParseMariadbGTIDSet(start.String())
	if err != nil {
		return err
	}
	stream, err := syncer.StartSyncGTID(gset)
	if err != nil {
		return err
	}
	f.txn.reset()
	first := true
	for {
		ev, err := stream.GetEvent(ctx)
		if err != nil {
			return err
		}
		if first {
			f.started(start)
			first = false
		}
		f.handle(ev)
	}
}

// startingAt returns the position to follow from: where the follower stopped, or on its
// first start the primary's present position, every write before which counts as written
// to every table (the floor).
func (f *Follower) startingAt(ctx context.Context) (replicas.Pos, error) {
	if p := f.Pos(); p != nil {
		return p, nil
	}
	return f.resync(ctx)
}

// resync starts over from the primary's present position: what came before it is
// recorded as a floor every read needs.
func (f *Follower) resync(ctx context.Context) (replicas.Pos, error) {
	p, err := primaryPosition(ctx, f.primary(), f.cfg.User, f.cfg.Password)
	if err != nil {
		return nil, err
	}
	f.versions.Covered(p)
	f.mu.Lock()
	f.pos = p
	f.signalLocked()
	f.mu.Unlock()
	return p, nil
}

// started marks the follower live once the primary streams the log from start.
func (f *Follower) started(start replicas.Pos) {
	f.mu.Lock()
	wasDenied := f.denied
	f.live, f.denied = true, false
	f.signalLocked()
	f.mu.Unlock()
	f.m.up.Set(1)
	f.m.refused.Set(0)
	if wasDenied {
		f.log.Info("binlog follower: the primary accepts it now; strong reads count every writer again", "position", start.String())
	} else {
		f.log.Info("binlog follower: following the primary's log", "position", start.String())
	}
}

// stopped records why following stopped, once a transition: a log line and a count.
func (f *Follower) stopped(err error) {
	f.mu.Lock()
	wasLive, wasDenied := f.live, f.denied
	f.live = false
	f.denied = deniedGrant(err)
	f.signalLocked()
	f.mu.Unlock()
	f.m.up.Set(0)
	if f.Denied() {
		f.m.refused.Set(1)
	} else {
		f.m.refused.Set(0)
	}
	switch {
	case f.Denied() && !wasDenied:
		f.m.denied.Inc()
		f.log.Error("binlog follower: the primary refused monitor.user the binary log; GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* to it. "+
			"Until then strong reads count only the writes this proxy acknowledged (as routing.strong_rule: proxy_local), and may be stale for writes that bypass it",
			"user", f.cfg.User, "err", errText(err))
	case purged(err):
		f.m.resyncs.Inc()
		f.log.Warn("binlog follower: its position is no longer in the primary's log (purged); it starts again from the primary's present position, which every read now needs",
			"position", f.Pos().String(), "err", errText(err))
		f.mu.Lock()
		f.pos = nil // the next start resyncs
		f.mu.Unlock()
	case wasLive:
		f.m.reconnects.Inc()
		f.log.Warn("binlog follower: lost the primary's log; strong reads go to the primary until it follows again", "err", errText(err))
	default:
		f.log.Debug("binlog follower: cannot follow the primary's log yet", "err", errText(err))
	}
}

// errText is err's message alone: the replication library's errors print stack traces
// when formatted whole.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// deniedGrant tells whether err is the primary's refusal for want of a privilege.
func deniedGrant(err error) bool {
	var me *mysql.MyError
	return errors.As(err, &me) && (me.Code == mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR || me.Code == mysql.ER_ACCESS_DENIED_ERROR ||
		me.Code == mysql.ER_DBACCESS_DENIED_ERROR)
}

// purged tells whether err says the position asked for is no longer in the primary's log.
func purged(err error) bool {
	var me *mysql.MyError
	return errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG
}

// syncerConfig is the configuration of the replication connection.
func (f *Follower) syncerConfig() replication.BinlogSyncerConfig {
	host, portText, _ := net.SplitHostPort(f.primary())
	port, _ := strconv.ParseUint(portText, 10, 16)
	return replication.BinlogSyncerConfig{
		ServerID: f.cfg.ServerID, Flavor: mysql.MariaDBFlavor,
		Host: host, Port: uint16(port), User: f.cfg.User, Password: f.cfg.Password,
		HeartbeatPeriod: f.cfg.Heartbeat, ReadTimeout: 3 * f.cfg.Heartbeat,
		DisableRetrySync: true, MaxReconnectAttempts: 1,
		// Only the header of a rows event is read: its table, not its rows.
		RowsEventDecodeFunc: func(e *replication.RowsEvent, data []byte) error {
			_, err := e.DecodeHeader(data)
			return err
		},
		Logger: slog.New(quiet{f.log.Handler()}),
	}
}

// handle records what one event says.
func (f *Follower) handle(ev *replication.BinlogEvent) {
	f.m.events.Inc()
	switch e := ev.Event.(type) {
	case *replication.MariadbGTIDEvent:
		f.txn.begin(replicas.GTID{Domain: e.GTID.DomainID, Server: e.GTID.ServerID, Seq: e.GTID.SequenceNumber},
			e.IsStandalone(), e.IsDDL())
	case *replication.RowsEvent:
		if e.Table != nil {
			f.txn.wrote(e.Table.Schema, e.Table.Table)
		}
	case *replication.QueryEvent:
		f.query(e)
	case *replication.XIDEvent:
		f.commit()
	}
}

// query records a statement logged as text: the tables a write names, or, for DDL and
// what the classifier cannot read, that any table may have been written.
func (f *Follower) query(e *replication.QueryEvent) {
	switch boundary(e.Query) {
	case "BEGIN":
		return
	case "COMMIT", "ROLLBACK":
		f.commit()
		return
	}
	r := f.cls.Classify(e.Query)
	switch {
	case r.Kind == classify.DDL:
		f.txn.ddl = true
	case r.Kind == classify.Write && !r.Unsure && !r.UnknownTables && !r.MultiStatement && !r.CallsFunction:
		for _, t := range r.Written {
			schema := t.Schema
			if len(schema) == 0 {
				schema = e.Schema
			}
			f.txn.wrote(schema, t.Name)
		}
	case r.Kind == classify.Transaction && !r.Unsure && boundary(e.Query) != "XA":
		// SAVEPOINT and the like: no tables.
	default:
		f.txn.unknown = true
	}
	if f.txn.standalone {
		f.commit()
	}
}

// commit records the open transaction at its GTID and moves the follower's position.
func (f *Follower) commit() {
	t := &f.txn
	if !t.open {
		return
	}
	if t.ddl || t.unknown {
		f.versions.Wrote(nil, true, t.gtid)
	} else {
		f.versions.Wrote(t.tables, false, t.gtid)
	}
	if t.ddl {
		f.ddl()
	}
	f.mu.Lock()
	f.pos = f.pos.With(t.gtid)
	f.signalLocked()
	f.mu.Unlock()
	f.m.transactions.Inc()
	t.reset()
}

// txn is the transaction being read from the log.
type txn struct {
	open bool
	gtid replicas.GTID
	// standalone: a single statement without COMMIT (DDL); ddl and unknown: it may have
	// written any table.
	standalone, ddl, unknown bool
	// tables are the keys of the tables it wrote (replicas.TableKey), reused.
	tables [][]byte
}

func (t *txn) begin(g replicas.GTID, standalone, ddl bool) {
	t.reset()
	t.open, t.gtid, t.standalone, t.ddl = true, g, standalone, ddl
}

func (t *txn) reset() {
	t.open, t.standalone, t.ddl, t.unknown = false, false, false, false
	t.tables = t.tables[:0]
}

// wrote adds schema.table to the tables the transaction wrote.
func (t *txn) wrote(schema, table []byte) {
	if len(t.tables) < cap(t.tables) {
		t.tables = t.tables[:len(t.tables)+1]
	} else {
		t.tables = append(t.tables, nil)
	}
	i := len(t.tables) - 1
	t.tables[i] = replicas.TableKey(t.tables[i][:0], schema, table)
}

// boundary returns the first word of a logged statement in upper case when it is one of
// the words that bound a transaction (BEGIN, COMMIT, ROLLBACK, XA), else "".
func boundary(q []byte) string {
	i := 0
	for i < len(q) && (q[i] == ' ' || q[i] == '\t' || q[i] == '\n' || q[i] == '\r') {
		i++
	}
	j := i
	for j < len(q) && (q[j] >= 'a' && q[j] <= 'z' || q[j] >= 'A' && q[j] <= 'Z') {
		j++
	}
	word := q[i:j]
	for _, w := range [...]string{"BEGIN", "COMMIT", "ROLLBACK", "XA"} {
		if len(word) == len(w) && equalFold(word, w) {
			return w
		}
	}
	return ""
}

func equalFold(b []byte, upper string) bool {
	for i := range b {
		c := b[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}

// quiet passes the replication library's warnings and errors to the follower's log at
// debug level, and drops the rest: its info lines include the connection's configuration,
// password and all, and the failures it reports the follower reports itself, once each.
type quiet struct{ h slog.Handler }

func (q quiet) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && q.h.Enabled(ctx, slog.LevelDebug)
}

func (q quiet) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return q.h.Handle(ctx, r)
}

func (q quiet) WithAttrs(attrs []slog.Attr) slog.Handler { return quiet{q.h.WithAttrs(attrs)} }

func (q quiet) WithGroup(name string) slog.Handler { return quiet{q.h.WithGroup(name)} }
