package bookstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Config describes a run of emulated customers against a loaded bookstore.
type Config struct {
	// DSN is a go-sql-driver/mysql DSN of the database the bookstore is loaded in,
	// directly or through gatekeeper. Run turns on interpolateParams, so that every
	// statement reaches the server as text, its tag comment first.
	DSN string
	// DSNs, when set instead of DSN, spread the load over several servers (a fleet of
	// proxies in front of one database): closed-loop client i connects to DSNs[i%len],
	// and open-loop arrivals take them in turn. The bookstore's figures are read through
	// the first.
	DSNs []string
	// Mix is "browsing", "shopping" or "ordering", or weights of one's own (see
	// MixByName). Empty means "shopping".
	Mix string
	// Clients is, in the closed loop, the number of emulated customers, each a session on
	// its own connection; in the open loop, the most interactions outstanding at once
	// (an arrival past it is counted as refused, as overflow). Zero means 50.
	Clients int
	// Think is the mean think time of the closed loop between a customer's
	// interactions, exponentially distributed and cut at 10 times the mean as TPC-W
	// does. Zero means none.
	Think time.Duration
	// Rate above zero selects the open loop: interactions arrive at Rate per second on
	// average, as a Poisson process or, with Burst, as an MMPP-2.
	Rate float64
	// Burst makes open-loop arrivals bursty; nil is Poisson.
	Burst *Burst
	// Duration is the measured period. Zero means 60s.
	Duration time.Duration
	// Warmup runs before the measured period without being counted. Zero means none.
	// The clients carry on from it into the measured period, so that period starts from
	// the state the load has reached, not from every client starting at once.
	Warmup time.Duration
	// OnMeasure, when set, is called once as the measured period begins, from its own
	// goroutine; Run returns after it has returned. It is how a caller meters what the
	// measured period alone used.
	OnMeasure func()
	// Timeout bounds each interaction, its connection set-up included; an interaction
	// past it is cancelled and counted as timed out. Zero means 30s.
	Timeout time.Duration
	// SLO is the response time under which a completed interaction counts as good, per
	// class. Classes missing from it take DefaultSLO's.
	SLO map[Interaction]time.Duration
	// Seed drives every random choice of the run.
	Seed int64
	// BestSellersWindow is the number of most recent orders Best Sellers ranks items
	// over. Zero means 10,000: TPC-W's 3,333 scaled up three times, so that Best Sellers
	// is heavy on MariaDB as it was in the Gatekeeper paper.
	BestSellersWindow int
	// RelatedWindow is the number of most recent orders in which Admin Confirm finds the
	// customers who bought the item. Zero means 30,000: TPC-W's 10,000 scaled up three
	// times like Best Sellers' window.
	RelatedWindow int
	// PerSecond also counts the completed interactions of every second of the run, the
	// warm-up's included, in Result.Seconds: what a run whose conditions change while
	// it goes on did at each moment.
	PerSecond bool
}

// Defaults of Config's zero fields.
const (
	DefaultClients           = 50
	DefaultDuration          = 60 * time.Second
	DefaultTimeout           = 30 * time.Second
	DefaultBestSellersWindow = 10000
	DefaultRelatedWindow     = 30000
)

// typicalCost is the mean cost of each interaction run alone at the default scale,
// measured with the costs command (bench/results/bookstore-costs.md).
var typicalCost = [numInteractions]time.Duration{
	Home:                 350 * time.Microsecond,
	NewProducts:          1 * time.Millisecond,
	BestSellers:          40 * time.Millisecond,
	ProductDetail:        200 * time.Microsecond,
	SearchRequest:        150 * time.Microsecond,
	SearchResults:        6 * time.Millisecond,
	ShoppingCart:         1 * time.Millisecond,
	CustomerRegistration: 400 * time.Microsecond,
	BuyRequest:           600 * time.Microsecond,
	BuyConfirm:           2 * time.Millisecond,
	OrderInquiry:         130 * time.Microsecond,
	OrderDisplay:         800 * time.Microsecond,
	AdminRequest:         150 * time.Microsecond,
	AdminConfirm:         42 * time.Millisecond,
}

// DefaultSLO returns the response-time objective of each class: ten times its typical
// cost alone at the default scale, at least 20ms, and at least 2s for the heavy ones.
func DefaultSLO() map[Interaction]time.Duration {
	slo := make(map[Interaction]time.Duration, numInteractions)
	for i, c := range typicalCost {
		d := max(10*c, 20*time.Millisecond)
		if Interaction(i).Heavy() {
			d = max(d, 2*time.Second)
		}
		slo[Interaction(i)] = d
	}
	return slo
}

// Validate reports what is wrong with cfg, if anything, as Run would.
func (cfg Config) Validate() error {
	_, err := cfg.withDefaults()
	return err
}

// withDefaults returns cfg with its zero fields filled in and checks it.
func (cfg Config) withDefaults() (Config, error) {
	switch {
	case cfg.DSN == "" && len(cfg.DSNs) == 0:
		return cfg, errors.New("no DSN; give one like user:password@tcp(127.0.0.1:3306)/bookstore")
	case cfg.DSN != "" && len(cfg.DSNs) > 0:
		return cfg, errors.New("both DSN and DSNs; give one of them")
	case slices.Contains(cfg.DSNs, ""):
		return cfg, errors.New("an empty DSN in DSNs")
	}
	if cfg.Mix == "" {
		cfg.Mix = DefaultMix
	}
	if _, err := MixByName(cfg.Mix); err != nil {
		return cfg, err
	}
	if cfg.Clients == 0 {
		cfg.Clients = DefaultClients
	}
	if cfg.Duration == 0 {
		cfg.Duration = DefaultDuration
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.BestSellersWindow == 0 {
		cfg.BestSellersWindow = DefaultBestSellersWindow
	}
	if cfg.RelatedWindow == 0 {
		cfg.RelatedWindow = DefaultRelatedWindow
	}
	slo := DefaultSLO()
	maps.Copy(slo, cfg.SLO)
	cfg.SLO = slo
	switch {
	case cfg.Clients < 0:
		return cfg, fmt.Errorf("clients is %d; use a positive number", cfg.Clients)
	case cfg.Think < 0, cfg.Duration < 0, cfg.Warmup < 0, cfg.Timeout < 0:
		return cfg, errors.New("think, duration, warmup and timeout cannot be negative")
	case cfg.Rate < 0:
		return cfg, fmt.Errorf("rate is %g; use 0 for the closed loop or a positive rate for the open loop", cfg.Rate)
	case cfg.Burst != nil && cfg.Rate == 0:
		return cfg, errors.New("a burst needs the open loop; set a rate")
	case cfg.BestSellersWindow < 0, cfg.RelatedWindow < 0:
		return cfg, errors.New("the order windows cannot be negative")
	}
	if cfg.Burst != nil {
		if _, _, err := cfg.Burst.rates(cfg.Rate); err != nil {
			return cfg, err
		}
	}
	for in, d := range cfg.SLO {
		if in < 0 || in >= numInteractions || d <= 0 {
			return cfg, fmt.Errorf("SLO for %v is %v; use a positive duration for one of the 14 interactions", in, d)
		}
	}
	return cfg, nil
}

// dsns are where the clients connect: DSNs, or DSN alone.
func (cfg Config) dsns() []string {
	if len(cfg.DSNs) > 0 {
		return cfg.DSNs
	}
	return []string{cfg.DSN}
}

// openDB opens a pool of at most conns connections on dsn, with interpolateParams on.
func openDB(dsn string, conns int) (*sql.DB, error) {
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("DSN: %w", err)
	}
	mc.InterpolateParams = true
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, fmt.Errorf("DSN: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	return db, nil
}

// Run emulates customers of the bookstore loaded in cfg.DSN's (or cfg.DSNs') database
// for cfg.Warmup+cfg.Duration and returns what it measured in cfg.Duration.
//
// An interaction counts in the measured period when it starts in it (for the open
// loop: when it arrives in it); the interactions under way when the period ends are
// waited for (each for at most cfg.Timeout) and counted. If ctx is cancelled, Run stops
// starting interactions, waits for those under way, and returns what it measured so far
// (Result.Elapsed says how long); if the measured period had not begun, it returns
// ctx's error.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	mix, _ := MixByName(cfg.Mix)
	pick, err := newPicker(mix)
	if err != nil {
		return nil, err
	}
	dbs := make([]*sql.DB, 0, len(cfg.dsns()))
	defer func() {
		for _, db := range dbs {
			db.Close()
		}
	}()
	for _, dsn := range cfg.dsns() {
		db, err := openDB(dsn, cfg.Clients)
		if err != nil {
			return nil, err
		}
		dbs = append(dbs, db)
	}
	st, err := readStore(ctx, dbs[0], cfg.BestSellersWindow, cfg.RelatedWindow)
	if err != nil {
		return nil, err
	}
	var slo [numInteractions]time.Duration
	for in, d := range cfg.SLO {
		slo[in] = d
	}
	r := &runner{cfg: cfg, dbs: dbs, st: st, pick: pick, slo: slo}
	r.start = time.Now()
	r.measureFrom = r.start.Add(cfg.Warmup)
	r.measureTo = r.measureFrom.Add(cfg.Duration)
	if cfg.OnMeasure != nil {
		defer r.onMeasure()()
	}
	var recs []*recorder
	if cfg.Rate > 0 {
		recs, err = r.openLoop(ctx)
		if err != nil {
			return nil, err
		}
	} else {
		recs = r.closedLoop(ctx)
	}
	stopped := r.measureTo
	if t := r.cancelled.Load(); t != nil && t.Before(stopped) {
		stopped = *t
	}
	if !stopped.After(r.measureFrom) {
		return nil, fmt.Errorf("run cancelled before the measured period: %w", context.Cause(ctx))
	}
	res := result(cfg, stopped.Sub(r.measureFrom), recs)
	if cfg.PerSecond {
		res.Seconds = perSecond(r.start, recs)
	}
	return res, nil
}

// runner is one run.
type runner struct {
	cfg Config
	// dbs are the pools of cfg's DSNs, in their order.
	dbs  []*sql.DB
	st   *store
	pick picker
	slo  [numInteractions]time.Duration
	// start is when the warm-up began; interactions starting in
	// [measureFrom, measureTo) are counted.
	start, measureFrom, measureTo time.Time
	// cancelled is when ctx was cancelled, if it was.
	cancelled atomic.Pointer[time.Time]
}

// onMeasure calls cfg.OnMeasure at measureFrom. The function it returns ends the wait
// if it has not ended yet, calling OnMeasure only if the measured period has begun, and
// returns once OnMeasure has.
func (r *runner) onMeasure() (end func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() { // ends after OnMeasure, or at end before measureFrom
		defer close(done)
		t := time.NewTimer(time.Until(r.measureFrom))
		defer t.Stop()
		select {
		case <-t.C:
		case <-quit:
			if time.Now().Before(r.measureFrom) {
				return
			}
		}
		r.cfg.OnMeasure()
	}()
	return func() {
		close(quit)
		<-done
	}
}

// rand returns one of the run's random streams, all drawn from cfg.Seed: stream i is
// closed-loop client i, or in the open loop stream 0 the arrivals and stream i worker i.
func (r *runner) rand(stream int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(r.cfg.Seed), uint64(stream)+1000))
}

// watch returns a channel closed at measureTo or when ctx is cancelled (noting when).
// The goroutine ends then too, or when done is closed.
func (r *runner) watch(ctx context.Context, done <-chan struct{}) <-chan struct{} {
	stop := make(chan struct{})
	go func() { // ends at measureTo, on ctx's cancellation, or when done is closed
		defer close(stop)
		t := time.NewTimer(time.Until(r.measureTo))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			now := time.Now()
			r.cancelled.Store(&now)
		case <-done:
		}
	}()
	return stop
}

// db is the pool that closed-loop client i, or the open loop's arrival i, connects to.
func (r *runner) db(i int) *sql.DB { return r.dbs[i%len(r.dbs)] }

// interact runs one interaction of s, on a connection from db when s has none, bounded by
// the timeout, and returns how it ended. The interaction is not cancelled with the run: it
// is waited for.
func (r *runner) interact(ctx context.Context, db *sql.DB, s *session, in Interaction) (outcome, error) {
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.Timeout)
	defer cancel()
	if s.conn == nil {
		conn, err := db.Conn(ictx)
		if err != nil {
			return r.outcome(ictx, err), err
		}
		s.conn = conn
	}
	err := s.do(ictx, in)
	if err != nil && !serverError(err) {
		s.broken = true
	}
	if s.broken {
		s.discard()
	}
	return r.outcome(ictx, err), err
}

// outcome classifies err, counting any error after ictx's deadline as a timeout: the
// driver reports a deadline that fired during a read as a broken connection.
func (r *runner) outcome(ictx context.Context, err error) outcome {
	if err != nil && errors.Is(ictx.Err(), context.DeadlineExceeded) {
		return timedOut
	}
	return classify(err)
}

// closedLoop runs cfg.Clients emulated customers until the measured period ends.
func (r *runner) closedLoop(ctx context.Context) []*recorder {
	done := make(chan struct{})
	defer close(done)
	stop := r.watch(ctx, done)
	recs := make([]*recorder, r.cfg.Clients)
	var wg sync.WaitGroup
	for i := range recs {
		recs[i] = newRecorder(r.slo)
		wg.Go(func() { r.client(ctx, i, recs[i], stop) }) // ends when stop is closed
	}
	wg.Wait()
	return recs
}

// maxThinkFactor cuts think times at this multiple of the mean, as TPC-W does.
const maxThinkFactor = 10

// client is one emulated customer: think, pick an interaction, run it, record it, until
// stop is closed.
func (r *runner) client(ctx context.Context, id int, rec *recorder, stop <-chan struct{}) {
	rng := r.rand(id)
	db := r.db(id)
	s := newSession(r.st, rng, id)
	defer s.discard()
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		if r.cfg.Think > 0 {
			think := time.Duration(rng.ExpFloat64() * float64(r.cfg.Think))
			timer.Reset(min(think, maxThinkFactor*r.cfg.Think))
			select {
			case <-timer.C:
			case <-stop:
				return
			}
		} else {
			select {
			case <-stop:
				return
			default:
			}
		}
		in := r.pick.pick(rng)
		begin := time.Now()
		o, err := r.interact(ctx, db, s, in)
		d := time.Since(begin)
		rec.inSecond(r, in, begin, d, o)
		if !begin.Before(r.measureFrom) && begin.Before(r.measureTo) {
			rec.add(in, d, o, err)
		}
	}
}

// job is an open-loop arrival, to run on db.
type job struct {
	in      Interaction
	arrival time.Time
	db      *sql.DB
}

// openLoop lets interactions arrive at cfg.Rate until the measured period ends, each
// run by one of cfg.Clients workers on a connection from the pool.
func (r *runner) openLoop(ctx context.Context) ([]*recorder, error) {
	rng := r.rand(0)
	arr, err := newArrivals(r.cfg.Rate, r.cfg.Burst, rng)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	defer close(done)
	stop := r.watch(ctx, done)

	// At most Clients interactions are outstanding, so the queue never blocks the
	// dispatcher: an arrival either fits or is counted as overflow.
	jobs := make(chan job, r.cfg.Clients)
	var outstanding atomic.Int64
	recs := make([]*recorder, r.cfg.Clients+1)
	dispatch := newRecorder(r.slo)
	recs[0] = dispatch
	var wg sync.WaitGroup
	for i := 1; i <= r.cfg.Clients; i++ {
		recs[i] = newRecorder(r.slo)
		wg.Go(func() { // ends when jobs is closed
			s := newSession(r.st, r.rand(i), i)
			for j := range jobs {
				s.reset()
				o, err := r.interact(ctx, j.db, s, j.in)
				s.release()
				outstanding.Add(-1)
				d := time.Since(j.arrival)
				recs[i].inSecond(r, j.in, j.arrival, d, o)
				if !j.arrival.Before(r.measureFrom) {
					recs[i].add(j.in, d, o, err)
				}
			}
		})
	}

	timer := time.NewTimer(0)
	<-timer.C
	dispatched := 0
loop:
	for {
		at := r.start.Add(arr.next())
		if !at.Before(r.measureTo) {
			break
		}
		timer.Reset(time.Until(at))
		select {
		case <-timer.C:
		case <-stop:
			break loop
		}
		in := r.pick.pick(rng)
		if outstanding.Load() >= int64(r.cfg.Clients) {
			if !at.Before(r.measureFrom) {
				dispatch.add(in, 0, overflow, nil)
			}
			continue
		}
		outstanding.Add(1)
		jobs <- job{in: in, arrival: at, db: r.db(dispatched)}
		dispatched++
	}
	timer.Stop()
	close(jobs)
	wg.Wait()
	return recs, nil
}
