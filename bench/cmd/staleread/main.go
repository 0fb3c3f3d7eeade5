// Command staleread checks whether reads through a proxy ever return data older than what
// was already acknowledged to writers: the check of a proxy that routes reads to replicas.
//
//	go run ./bench/cmd/staleread --dsn 'gk:gk@tcp(127.0.0.1:6033)/gktest' \
//		--primary-dsn 'gk:gk@tcp(127.0.0.1:13306)/gktest' \
//		--replica-dsn 'gk:gk@tcp(127.0.0.1:13307)/gktest' --replica-dsn 'gk:gk@tcp(127.0.0.1:13308)/gktest' \
//		--consistency strong --inject-lag 2s --inject-every 5s \
//		--metrics http://127.0.0.1:6080/metrics --primary 127.0.0.1:13306
//
// It creates its tables on the primary (--primary-dsn) and waits until every replica has
// them (--prepare does only that, so that a proxy started next finds the trigger and the
// foreign key in place, as it would a production schema). Then --connections clients, each on a connection of its own through the proxy
// (--dsn), write and read at random. A write sets a row to a fresh version, taken from one
// counter, so versions are unique and grow; once the server acknowledges it, the ledger
// notes it as the row's highest acknowledged version. A read first takes from the ledger
// what each row it reads must be at least, then sends the read, and judges what came back:
//
//   - stale: older than a version acknowledged before the read was sent;
//   - own-write miss: older than the session's own write: the connection's last write read
//     back on the same connection, or a pair partner's read back on the other connection of
//     the pair, both marked /* gk:session=KEY */;
//   - monotonic-read violation: older than what the same connection read of the row before.
//
// Reads are point selects as text and as prepared statements, joins of two tables (also
// inside START TRANSACTION READ ONLY, held to the versions acknowledged before it began),
// and reads of rows that a trigger (sr_audit, from sr_t0) or a foreign key's cascade
// (sr_child, from sr_parent) wrote, checked against the versions written to their sources.
// --consistency starts every read with /* gk:consistency=MODE */.
//
// To make a lagging replica likely, --inject-lag stops a replica's SQL thread (or with
// --inject-all every replica's) for that long every --inject-every, and --master-delay
// delays the first replica's replication; both are undone at the end, after an error or a
// signal too. --metrics and --primary read the proxy's gatekeeper_reads_total before and
// after, for the share of reads replicas served, and its reads of the primary's position
// (gatekeeper_binlog_position_reads_total and _read_statements_total) where it has them.
// Each read's latency at the client is kept in a histogram, by kind.
//
// Who writes: by default each client reads and writes on one connection to --dsn;
// --write-dsn sends the writes elsewhere (a second proxy, the primary itself), each client
// writing on a connection of its own there, so that the check covers writes the readers'
// proxy never saw. --hot-table sends every write to one table and every read to the others.
//
// Comparing proxies: given several times, --dsn names the arms of a comparison (--arm
// their names, --metrics their endpoints). The clients take turns on them, a phase of
// --inject-every each with one lag injection; at each switch every operation of the phase
// has ended and the replicas have applied the primary's position before the next phase
// begins, so that each proxy is held to the writes of its own phase. The run ends at the
// switch after every arm has had --reads reads; the report has each arm's counts.
//
// The exit status is 0 whatever the checks found (the caller judges them), 1 when the setup
// failed or more than 1% of the operations failed, 2 for bad flags. bench/staleread.sh runs
// it through gatekeeper in each consistency mode.
package main

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/bench/listflag"
)

// maxErrorShare is the share of failed operations past which the run fails.
const maxErrorShare = 0.01

// errTooManyErrors says that more than maxErrorShare of the operations failed.
var errTooManyErrors = errors.New("more than 1% of the operations failed")

type options struct {
	// dsns are the arms' proxies, metrics their endpoints and armNames their names, in
	// the same order.
	dsns, metrics, armNames   listflag.Strings
	primaryDSN, writeDSN      string
	replicaDSNs, readDSNs     listflag.Strings
	hotTable                  bool
	tables, rows, connections int
	pairs                     int
	writeFraction, txFraction float64
	reads                     int64
	duration, setupTimeout    time.Duration
	consistency               string
	injectLag, injectEvery    time.Duration
	injectAll                 bool
	masterDelay               int
	primary                   string
	json                      string
	prepare                   bool
	seed                      uint64
	flags                     map[string]string // every flag's value, for the report
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "staleread:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "staleread:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("staleread", flag.ContinueOnError)
	fs.Var(&o.dsns, "dsn", "go-sql-driver DSN of the clients: the proxy (required), e.g. gk:gk@tcp(127.0.0.1:6033)/gktest; given more than once, the arms of a comparison: the clients take turns on each, a phase of --inject-every each, the replicas caught up with the primary at each switch, until every arm has had --reads reads")
	fs.Var(&o.armNames, "arm", "name of each --dsn in the report, in the same order (repeatable; default arm1, arm2, ...)")
	fs.StringVar(&o.writeDSN, "write-dsn", "", "send the writes here (another proxy, the primary itself) and only the reads to --dsn, each client on a connection to each")
	fs.BoolVar(&o.hotTable, "hot-table", false, "every write goes to one hot table (the last sr_tN), every read to the other tables; no read reads a write back")
	fs.StringVar(&o.primaryDSN, "primary-dsn", "", "DSN straight to the primary, where the tables are created (required)")
	fs.Var(&o.replicaDSNs, "replica-dsn", "DSN straight to a replica (repeatable): waited for after the setup, and held back by --inject-lag and --master-delay")
	fs.Var(&o.readDSNs, "read-dsn", "testing the checker itself: send the reads to this DSN (repeatable: each read picks one) and only the writes to --dsn (one --dsn)")
	fs.IntVar(&o.tables, "tables", 16, "tables sr_t0..sr_tN-1, besides sr_parent, sr_child and sr_audit")
	fs.IntVar(&o.rows, "rows", 100, "rows of each table")
	fs.IntVar(&o.connections, "connections", 32, "clients, each on a connection of its own")
	fs.IntVar(&o.pairs, "session-pairs", 4, "pairs of clients that share a session key and read each other's writes back")
	fs.Float64Var(&o.writeFraction, "write-fraction", 0.1, "share of operations that are writes")
	fs.Float64Var(&o.txFraction, "tx-fraction", 0.2, "share of writes that are transactions updating two tables")
	fs.Int64Var(&o.reads, "reads", 100000, "reads in all, or at least on each arm (the run then ends at the switch after the last arm had them); the run ends when they are done or after --duration")
	fs.DurationVar(&o.duration, "duration", 5*time.Minute, "longest run")
	fs.DurationVar(&o.setupTimeout, "setup-timeout", time.Minute, "how long each replica may take to have the tables")
	fs.StringVar(&o.consistency, "consistency", "", "strong, session or eventual: start every read with /* gk:consistency=MODE */ (empty: no comment)")
	fs.DurationVar(&o.injectLag, "inject-lag", 0, "stop a replica's SQL thread for this long, one replica after another (0: never)")
	fs.DurationVar(&o.injectEvery, "inject-every", 5*time.Second, "how often --inject-lag stops one")
	fs.BoolVar(&o.injectAll, "inject-all", false, "--inject-lag stops every replica's SQL thread at once, not one replica after another: every replica then trails the primary")
	fs.IntVar(&o.masterDelay, "master-delay", 0, "during the run, the first replica applies events this many seconds late (MASTER_DELAY; 0: not changed)")
	fs.Var(&o.metrics, "metrics", "the proxy's Prometheus endpoint, e.g. http://127.0.0.1:6080/metrics, for the reads each backend served and its position reads; one for each --dsn, in the same order")
	fs.StringVar(&o.primary, "primary", "", "the primary's address as the proxy's backend label has it, e.g. 127.0.0.1:13306 (with --metrics)")
	fs.StringVar(&o.json, "json", "", "also write the result to this file as JSON")
	fs.BoolVar(&o.prepare, "prepare", false, "create the tables and wait for the replicas to have them, then exit (a proxy started next sees the trigger and the foreign key at its start)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the clients' random choices")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o.flags = map[string]string{}
	fs.VisitAll(func(f *flag.Flag) { o.flags[f.Name] = maskFlag(f) })
	if len(o.armNames) == 0 {
		for i := range o.dsns {
			o.armNames = append(o.armNames, fmt.Sprintf("arm%d", i+1))
		}
	}
	return o, o.validate()
}

func (o options) validate() error {
	switch {
	case o.primaryDSN == "" || (len(o.dsns) == 0 && !o.prepare):
		return errors.New("--primary-dsn is required, and --dsn unless --prepare")
	case len(o.metrics) > 0 && len(o.metrics) != len(o.dsns):
		return fmt.Errorf("%d --metrics for %d --dsn: give one for each, in the same order", len(o.metrics), len(o.dsns))
	case len(o.armNames) != len(o.dsns) || len(slices.Compact(slices.Sorted(slices.Values(o.armNames)))) != len(o.armNames):
		return fmt.Errorf("--arm names %q: give a different one for each --dsn, in the same order", o.armNames)
	case len(o.readDSNs) > 0 && (len(o.dsns) > 1 || o.writeDSN != ""):
		return errors.New("--read-dsn takes one --dsn and no --write-dsn")
	case len(o.dsns) > 1 && len(o.replicaDSNs) == 0:
		return errors.New("several --dsn need --replica-dsn: the replicas catch up at each switch, so that each arm is held to its own writes")
	case o.tables < 2 || o.rows < 1:
		return errors.New("--tables must be at least 2 (joins take two) and --rows at least 1")
	case o.hotTable && o.tables < 3:
		return errors.New("--hot-table needs --tables 3 at least: the joins take two tables besides the hot one")
	case o.connections < 1 || o.pairs < 0 || 2*o.pairs > o.connections:
		return errors.New("--connections must be at least 1 and at least twice --session-pairs")
	case o.writeFraction < 0 || o.writeFraction >= 1 || o.txFraction < 0 || o.txFraction > 1:
		return errors.New("--write-fraction must be in [0, 1) and --tx-fraction in [0, 1]")
	case o.reads < 1 || o.duration <= 0 || o.setupTimeout <= 0:
		return errors.New("--reads, --duration and --setup-timeout must be positive")
	case o.consistency != "" && o.consistency != "strong" && o.consistency != "session" && o.consistency != "eventual":
		return fmt.Errorf("--consistency %q: want strong, session, eventual or empty", o.consistency)
	case (o.injectLag > 0 || o.masterDelay > 0) && len(o.replicaDSNs) == 0:
		return errors.New("--inject-lag and --master-delay need --replica-dsn")
	case o.injectLag < 0 || o.injectEvery <= 0 || o.masterDelay < 0:
		return errors.New("--inject-lag and --master-delay must not be negative, --inject-every must be positive")
	case len(o.metrics) > 0 && o.primary == "":
		return errors.New("--metrics needs --primary, the primary's address as the proxy's metrics name it")
	}
	return nil
}

// maskFlag is a flag's value for the report, with the password of a DSN masked.
func maskFlag(f *flag.Flag) string {
	if !strings.HasSuffix(f.Name, "dsn") {
		return f.Value.String()
	}
	var masked []string
	for _, dsn := range strings.Fields(f.Value.String()) {
		masked = append(masked, maskDSN(dsn))
	}
	return strings.Join(masked, " ")
}

// maskDSN is dsn with its password replaced by stars.
func maskDSN(dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "(not a DSN)"
	}
	if cfg.Passwd != "" {
		cfg.Passwd = "***"
	}
	return cfg.FormatDSN()
}

// openDB opens a handle of at most one connection on dsn, its queries sent as text unless
// prepared (interpolateParams off: a query with arguments is prepared and executed with
// COM_STMT_EXECUTE); database is used where the DSN names none.
func openDB(dsn, database string) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("DSN %s: %w", maskDSN(dsn), err)
	}
	cfg.DBName = cmp.Or(cfg.DBName, database)
	cfg.InterpolateParams = false
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	// A broken connection is counted as an error; the driver's own line for each would bury
	// the report when a proxy restarts.
	cfg.Logger = &mysql.NopLogger{}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("DSN %s: %w", maskDSN(dsn), err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	return db, nil
}

// dsnAddr is the address a DSN connects to, for messages.
func dsnAddr(dsn string) string {
	if cfg, err := mysql.ParseDSN(dsn); err == nil {
		return cfg.Addr
	}
	return "(not a DSN)"
}

func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	s := schema{tables: o.tables, rows: o.rows, hotWrites: o.hotTable}
	database, err := prepare(ctx, s, o)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	rs, err := openReplicas(ctx, s, o, database, stderr)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	defer rs.close()
	if o.prepare {
		fmt.Fprintf(stderr, "staleread: %d tables of %d rows, sr_audit, sr_parent and sr_child created in %s on the primary and every replica\n",
			o.tables, o.rows, database)
		return nil
	}
	defer func() {
		if err := rs.restore(); err != nil {
			fmt.Fprintf(stderr, "staleread: restoring replication: %v\n", err)
		}
	}()

	w := newWorkload(s, o)
	clients, closeAll, err := connect(ctx, w, o, database)
	defer closeAll()
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if o.masterDelay > 0 {
		if err := rs.setDelay(o.masterDelay); err != nil {
			return fmt.Errorf("setup: --master-delay: %w", err)
		}
	}

	res := &result{Flags: o.flags}
	before := scrapeArms(ctx, o, nil, stderr)
	w.phases = newPhases(len(o.dsns), time.Now) // the first arm's phase begins with the run
	enough := func() bool {
		for a := range o.dsns {
			if reads, _, _, _ := w.armTally(a).totals(); reads < o.reads {
				return false
			}
		}
		return true
	}
	elapsed, tt := drive(ctx, o, clients, rs, w.phases, enough, w.tally, stderr)
	res.setCounts(w.tally, elapsed)
	res.LagInjections, res.Switches, res.LateCatchUps = tt.injections, tt.switches, tt.lateCatchUps
	active, turns := w.phases.end()
	res.Arms = make([]armResult, len(o.dsns))
	for i := range res.Arms {
		a := &res.Arms[i]
		a.Name, a.DSN, a.Phases, a.ActiveS = o.armNames[i], maskDSN(o.dsns[i]), turns[i], active[i].Seconds()
		a.counts.setCounts(w.armTally(i))
		if a.ActiveS > 0 {
			a.ReadsPerSecond = float64(a.Reads) / a.ActiveS
		}
	}
	if err := ctx.Err(); err != nil {
		res.Interrupted = true
		res.writeSummary(stdout)
		return fmt.Errorf("interrupted after %.1fs (the counts above are of the part that ran; no --json written): %w", elapsed.Seconds(), err)
	}
	scrapeArms(ctx, o, before, stderr).setReads(o, before, res)
	res.writeSummary(stdout)
	if o.json != "" {
		if err := res.writeJSON(o.json); err != nil {
			return err
		}
	}
	if res.ErrorShare > maxErrorShare {
		return fmt.Errorf("%d of %d operations: %w", res.ErrorsTotal, res.Reads+res.Writes+res.ErrorsTotal, errTooManyErrors)
	}
	return nil
}

// newWorkload returns what the clients of o share, on schema s.
func newWorkload(s schema, o options) *workload {
	w := &workload{schema: s, ledger: newLedger(s.written(), s.rows), tally: newTally(),
		writeFraction: o.writeFraction, txFraction: o.txFraction}
	if o.consistency != "" {
		w.consistency = "/* gk:consistency=" + o.consistency + " */ "
	}
	w.readsLeft.Store(o.reads)
	if len(o.dsns) > 1 {
		w.readsLeft.Store(math.MaxInt64)
	}
	for range max(len(o.dsns), 1) {
		if len(o.dsns) > 1 {
			w.byArm = append(w.byArm, tallies{w.tally, newTally()})
		} else {
			w.byArm = append(w.byArm, tallies{w.tally})
		}
	}
	return w
}

// armTally is what was counted on arm a alone.
func (w *workload) armTally(a int) *tally { return w.byArm[a][len(w.byArm[a])-1] }

// prepare creates the tables on the primary and returns the database they are in.
func prepare(ctx context.Context, s schema, o options) (string, error) {
	cfg, err := mysql.ParseDSN(o.primaryDSN)
	if err != nil {
		return "", fmt.Errorf("--primary-dsn: %w", err)
	}
	if cfg.DBName == "" {
		return "", errors.New("--primary-dsn names no database (…/DBNAME)")
	}
	db, err := openDB(o.primaryDSN, "")
	if err != nil {
		return "", err
	}
	defer db.Close()
	if err := s.create(ctx, db); err != nil {
		return "", fmt.Errorf("primary %s: %w", cfg.Addr, err)
	}
	return cfg.DBName, nil
}

// openReplicas opens every --replica-dsn and waits until each has the tables.
func openReplicas(ctx context.Context, s schema, o options, database string, log io.Writer) (*replicaSet, error) {
	rs := &replicaSet{log: log}
	primary, err := openDB(o.primaryDSN, database)
	if err != nil {
		return nil, err
	}
	rs.primary = primary
	for _, dsn := range o.replicaDSNs {
		db, err := openDB(dsn, database)
		if err != nil {
			rs.close()
			return nil, err
		}
		rs.replicas = append(rs.replicas, replica{addr: dsnAddr(dsn), db: db})
	}
	for _, r := range rs.replicas {
		if err := s.waitReplica(ctx, r.db, o.setupTimeout); err != nil {
			rs.close()
			return nil, fmt.Errorf("replica %s: %w", r.addr, err)
		}
	}
	return rs, nil
}

// connect opens every client's handles and connects them, so that the run measures
// statements and not logins; closeAll closes whatever was opened, even after an error.
// Each client has, on each arm, a connection to its --dsn that reads and writes; or beside
// a --write-dsn connection (one for every arm) one to its --dsn that reads; or beside one
// --dsn connection that writes, one to each --read-dsn.
func connect(ctx context.Context, w *workload, o options, database string) ([]*client, func(), error) {
	var dbs []*sql.DB
	closeAll := func() {
		for _, db := range dbs {
			db.Close()
		}
	}
	open := func(dsn string) (*sql.DB, error) {
		db, err := openDB(dsn, database)
		if err != nil {
			return nil, err
		}
		dbs = append(dbs, db)
		if err := db.PingContext(ctx); err != nil {
			return nil, fmt.Errorf("connect to %s: %w", dsnAddr(dsn), err)
		}
		return db, nil
	}
	pairs := make([]*pair, o.pairs)
	for i := range pairs {
		pairs[i] = &pair{key: fmt.Sprintf("staleread-%d-%d", os.Getpid(), i)}
	}
	var clients []*client
	for i := range o.connections {
		var shared *sql.DB
		if o.writeDSN != "" {
			var err error
			if shared, err = open(o.writeDSN); err != nil {
				return nil, closeAll, err
			}
		}
		var arms []handles
		for _, dsn := range o.dsns {
			db, err := open(dsn)
			if err != nil {
				return nil, closeAll, err
			}
			h := handles{write: db}
			if shared != nil {
				h = handles{write: shared, reads: []*sql.DB{db}}
			}
			for _, dsn := range o.readDSNs {
				db, err := open(dsn)
				if err != nil {
					return nil, closeAll, err
				}
				h.reads = append(h.reads, db)
			}
			arms = append(arms, h)
		}
		var p *pair
		if i < 2*o.pairs {
			p = pairs[i/2]
		}
		clients = append(clients, newClient(w, arms, newRand(o.seed, i), p, i%2))
	}
	return clients, closeAll, nil
}

// scrapes are each arm's proxy's metrics at one moment (nil: not read, MetricsNote says
// why), or nil when the run has no --metrics.
type scrapes []*exposition

// scrapeArms reads each arm's proxy's metrics; an arm whose proxy could not be read, or
// did not count reads before (earlier nil or not), is left nil, and said so on log.
func scrapeArms(ctx context.Context, o options, earlier scrapes, log io.Writer) scrapes {
	if len(o.metrics) == 0 {
		return nil
	}
	out := make(scrapes, len(o.metrics))
	for i, url := range o.metrics {
		if earlier != nil && earlier[i] == nil {
			continue
		}
		e, err := scrape(ctx, url)
		switch {
		case err != nil:
			fmt.Fprintf(log, "staleread: %s: replica share not measured: %s: %v\n", o.armNames[i], url, err)
		case !e.readsFound:
			fmt.Fprintf(log, "staleread: %s: replica share not measured: %s has no %s (this proxy does not count reads by backend)\n",
				o.armNames[i], url, readsMetric)
		default:
			out[i] = &e
		}
	}
	return out
}

// setReads sets, from after and the scrapes before the run, what each arm's proxy counted
// during it and what they counted together.
func (after scrapes) setReads(o options, before scrapes, res *result) {
	if len(o.metrics) == 0 {
		return
	}
	total := map[route]float64{}
	measured := true
	for i := range res.Arms {
		a := &res.Arms[i]
		if before[i] == nil || after[i] == nil {
			a.MetricsNote = fmt.Sprintf("%s could not be read before and after the run (see the log)", o.metrics[i])
			measured = false
			continue
		}
		reads := readsSince(after[i].reads, before[i].reads)
		a.setReads(reads, o.primary)
		a.Strong = newHorizonCounts(before[i].scalars, after[i].scalars)
		for k, n := range reads {
			total[k] += n
		}
	}
	if !measured {
		res.MetricsNote = "not every arm's proxy could be read before and after the run (see the arms)"
		return
	}
	res.setReads(total, o.primary)
}
