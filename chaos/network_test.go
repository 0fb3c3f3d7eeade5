package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Bounds of TestNetworkFaults.
const (
	// connectTimeout is the proxy's backends.connect_timeout in these checks.
	connectTimeout = 2 * time.Second
	// deadAfter is the proxy's backends.dead_after in these checks: how long a backend
	// connection may go without any answer before the proxy gives it up.
	deadAfter = 10 * time.Second
	// newClientBound is how long a new client may wait for an answer while the backend
	// cannot be reached: the connect timeout and a margin.
	newClientBound = connectTimeout + 2*time.Second
	// inFlightBound is how long a statement in flight may wait for an answer once its
	// backend stops answering: backends.dead_after and a margin, far shorter than a
	// client's patience.
	inFlightBound = deadAfter + 5*time.Second
	// opBound bounds one operation under delay, or an abuser's or an idle check's try:
	// anything longer is a hang.
	opBound = 30 * time.Second
	// loginTimeout is the proxy's client.handshake_timeout in these checks: the bound on
	// a login, however the link behaves.
	loginTimeout = 10 * time.Second
	// loginBound bounds a login under loss: the handshake timeout and a margin.
	loginBound = loginTimeout + 2*time.Second
	// statementBound bounds one statement under loss: anything longer is a hang. The proxy
	// does not bound a statement whose backend still answers (it may run for hours), and
	// under 30% loss each way TCP's retransmission back-off stretches a small statement's
	// answer, doubling the wait with each retransmission lost in a row. In five minutes
	// of each mode (bench/results/chaos-loss-long), the longest phase through the proxy
	// took 28.7 s (a 16 KiB row), while the same operations straight to the server took up
	// to 132.9 s (a 16 KiB row) and 47.2 s (a login): the proxy's connect and handshake
	// timeouts, and backends.dead_after, cut the longest tails the network makes.
	statementBound = 2 * time.Minute
	// clearBound is how long after a fault is removed a new client may wait to be served:
	// pooled mode's dial backoff (at most 5 s) and a dial.
	clearBound = 5*time.Second + connectTimeout
	// lossRun is how long operations run under loss, unless GK_CHAOS_LOSS_RUN says.
	lossRun = 8 * time.Second
	// directBound bounds each phase of an operation straight to the server under loss,
	// which only GK_CHAOS_LOSS_DIRECT runs, for comparison; nothing is asserted of them.
	directBound = 5 * time.Minute
)

func TestNetworkFaults(t *testing.T) {
	l, why := newLink(t)
	if why != "" {
		notAvailable(t, "netem", "cannot build a network namespace: "+why)
	}
	t.Run("netem", func(t *testing.T) {
		if !l.netem {
			notAvailable(t, "netem", l.netemMissing)
		}
		report("netem", "available: faults are applied with tc netem")
	})
	srv := startNSServer(t)
	if err := srv.reachable(); err != nil {
		t.Fatalf("the server in the namespace cannot be reached at %s: %v", srv.Addr, err)
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Run("delay", func(t *testing.T) { networkDelay(t, l, srv, mode) })
			t.Run("loss", func(t *testing.T) { networkLoss(t, l, srv, mode) })
			t.Run("blackhole", func(t *testing.T) { networkBlackhole(t, l, srv, mode) })
		})
	}
}

// breakLink applies f for the rest of the test, or skips the test when f cannot be
// applied here; it returns the check's name and how the fault is applied.
func breakLink(t *testing.T, l *link, f fault, mode string) (check, how string) {
	t.Helper()
	check = fmt.Sprintf("network %s (%s)", f.name, mode)
	how, err := l.means(f)
	if err != nil {
		notAvailable(t, check, err.Error())
	}
	t.Cleanup(func() {
		if err := l.clear(); err != nil {
			t.Errorf("removing the fault: %v", err)
		}
	})
	return check, how
}

// proxyTo starts the proxy in front of the server in the namespace.
func proxyTo(t *testing.T, srv *nsServer, mode string) *gatekeeper {
	return proxyToAddr(t, srv.Addr, mode)
}

// proxyToAddr starts the proxy in front of the server at addr.
func proxyToAddr(t *testing.T, addr, mode string) *gatekeeper {
	return startGatekeeper(t, mode, map[string]string{
		"backends.primary":         addr,
		"backends.connect_timeout": connectTimeout.String(),
		"backends.dead_after":      deadAfter.String(),
		"client.handshake_timeout": loginTimeout.String(),
	})
}

// attempt is an operation run in the background, whose end is waited for with a bound.
type attempt struct {
	start time.Time
	done  chan struct{}
	took  time.Duration
	err   error
}

// try runs f in a goroutine that ends when f returns; f must end when the proxy it talks
// to is stopped, which the test's cleanup does.
func try(f func() error) *attempt {
	a := &attempt{start: time.Now(), done: make(chan struct{})}
	go func() {
		a.err = f()
		a.took = time.Since(a.start)
		close(a.done)
	}()
	return a
}

// by reports whether the attempt ended by the time given.
func (a *attempt) by(deadline time.Time) bool {
	select {
	case <-a.done:
		return true
	case <-time.After(time.Until(deadline)):
		return false
	}
}

func networkDelay(t *testing.T, l *link, srv *nsServer, mode string) {
	var check, how string
	var g *gatekeeper
	apply, clear := func() error { return l.apply(faultDelay) }, l.clear
	if l.netem {
		check, how = breakLink(t, l, faultDelay, mode)
		g = proxyTo(t, srv, mode)
	} else {
		// No netem: the delay is a relay's on the host, between the proxy and the link.
		check = fmt.Sprintf("network %s (%s)", faultDelay.name, mode)
		how = "a TCP relay between proxy and link that holds every chunk 200 ms each way (no netem: the kernel lacks sch_netem)"
		r := startRelay(t, srv.Addr)
		apply = func() error { r.set(200 * time.Millisecond); return nil }
		clear = func() error { r.set(0); return nil }
		g = proxyToAddr(t, r.Addr(), mode)
	}
	if err := apply(); err != nil {
		t.Fatal(err)
	}
	db := openDB(t, "tcp", g.Addr, "")
	db.SetMaxOpenConns(1)
	var lat durations
	var first time.Duration
	for i := range 6 {
		var one int
		a := try(func() error { return db.QueryRow("SELECT 1").Scan(&one) })
		if !a.by(a.start.Add(opBound)) {
			report(check, "HANG: SELECT 1 not answered within %v", opBound)
			t.Fatalf("SELECT 1 under a 200 ms delay got no answer within %v", opBound)
		}
		if a.err != nil {
			report(check, "SELECT 1 failed: %s", errText(a.err))
			t.Fatalf("SELECT 1 under a 200 ms delay: %v", a.err)
		}
		if i == 0 {
			first = a.took // the login too
		} else {
			lat = append(lat, a.took)
		}
	}
	if err := clear(); err != nil {
		t.Fatal(err)
	}
	back, err := firstServed(g.Addr, clearBound)
	report(check, "%s: login and first SELECT 1 in %s, then SELECT 1 median %s, max %s; after removal a new client served in %s",
		how, ms(first), ms(lat.median()), ms(lat.max()), servedText(back, err))
	if lat.median() < 200*time.Millisecond {
		t.Errorf("SELECT 1 took %v under a 200 ms delay: the fault did not apply", lat.median())
	}
	if err != nil {
		t.Errorf("no new client served within %v of the delay's removal: %v", clearBound, err)
	}
}

func networkLoss(t *testing.T, l *link, srv *nsServer, mode string) {
	check, how := breakLink(t, l, faultLoss, mode)
	g := proxyTo(t, srv, mode)
	if err := l.apply(faultLoss); err != nil {
		t.Fatal(err)
	}
	run, direct := lossSettings(t)
	var got, straight lossTally
	for end := time.Now().Add(run); time.Now().Before(end) && got.hang == "" && straight.hang == ""; {
		got.add(startLossOp(g.Addr, phaseBounds))
		if direct {
			straight.add(startLossOp(srv.Addr, directBounds))
		}
	}
	if err := l.clear(); err != nil {
		t.Fatal(err)
	}
	back, err := firstServed(g.Addr, clearBound)
	report(check, "%s: %s; after removal a new client served in %s", how, got.text(), servedText(back, err))
	if direct {
		report(fmt.Sprintf("network %s (direct, beside %s)", faultLoss.name, mode),
			"the same operations straight to the server, one after each through the proxy: %s", straight.text())
	}
	if got.hang != "" {
		t.Errorf("under 30%% loss, %s", got.hang)
	}
	for k := range got.errs {
		if !strings.Contains(k, "timed out") && !strings.Contains(k, "timeout") && k != errCutMidRow {
			t.Errorf("an error other than a timeout under loss: %s", k)
		}
	}
	// A row larger than the proxy's read buffer is relayed as it comes; when the backend
	// connection is given up in the middle of it, no error packet can follow half a packet,
	// and the client sees the connection close. Each such cut must be the proxy giving up
	// the connection on a timeout, as its log says.
	if cut, given := got.errs[errCutMidRow], countLines(g.logPath, "backend connection lost during a command", "timed out"); cut > given {
		t.Errorf("%d clients were cut off in the middle of the 16 KiB row, but the proxy's log shows only %d backend connections given up on a timeout", cut, given)
	}
	if err != nil {
		t.Errorf("no new client served within %v of the loss's removal: %v", clearBound, err)
	}
}

// lossSettings reads how long operations run under loss (GK_CHAOS_LOSS_RUN, a duration;
// default lossRun) and whether each through the proxy is followed by one straight to the
// server (GK_CHAOS_LOSS_DIRECT=1): a long run measures the tails of the times, and the
// direct operations tell the network's share of them from the proxy's.
func lossSettings(t *testing.T) (run time.Duration, direct bool) {
	run = lossRun
	if v := os.Getenv("GK_CHAOS_LOSS_RUN"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("GK_CHAOS_LOSS_RUN=%q: want a positive duration such as 5m", v)
		}
		run = d
	}
	switch v := os.Getenv("GK_CHAOS_LOSS_DIRECT"); v {
	case "", "0":
	case "1":
		direct = true
	default:
		t.Fatalf("GK_CHAOS_LOSS_DIRECT=%q: want 1 (or 0, the default)", v)
	}
	return run, direct
}

// errCutMidRow is the error key of a client whose connection closed in the middle of the
// 16 KiB row.
const errCutMidRow = "invalid connection (the 16 KiB row cut off)"

// lossTally sums up the operations run under loss.
type lossTally struct {
	ops         int
	lat, errLat durations
	errs        map[string]int // by errKey, or errCutMidRow
	longest     map[string]time.Duration
	hang        string // the first operation that hung, and in which phase
}

// add waits for op and counts it.
func (t *lossTally) add(op *lossOp) {
	if t.errs == nil {
		t.errs, t.longest = map[string]int{}, map[string]time.Duration{}
	}
	t.ops++
	t.hang = op.wait()
	op.longest(t.longest)
	switch {
	case t.hang != "":
	case op.err == nil:
		t.lat = append(t.lat, op.took)
	default:
		k := errKey(op.err)
		if errors.Is(op.err, mysql.ErrInvalidConn) && op.phase().name == phaseRow {
			k = errCutMidRow
		}
		t.errs[k]++
		t.errLat = append(t.errLat, op.took)
	}
}

// text is the tally as the check reports it.
func (t *lossTally) text() string {
	succeeded := "none"
	if len(t.lat) > 0 {
		succeeded = fmt.Sprintf("median %s, max %s", ms(t.lat.median()), ms(t.lat.max()))
	}
	failures := "no errors"
	if len(t.errs) > 0 {
		failures = fmt.Sprintf("errors after median %s, max %s: %s", ms(t.errLat.median()), ms(t.errLat.max()), countsText(t.errs))
	}
	longest := make([]string, 0, len(phaseBounds))
	for _, name := range []string{phaseLogin, phaseOne, phaseRow} {
		if d, ok := t.longest[name]; ok {
			longest = append(longest, fmt.Sprintf("%s %s", name, ms(d)))
		}
	}
	hangs := "none hung"
	if t.hang != "" {
		hangs = "HANG: " + t.hang
	}
	return fmt.Sprintf("%d of %d operations (log in, SELECT 1, a 16 KiB row) succeeded (%s); %s; longest %s; %s",
		len(t.lat), t.ops, succeeded, failures, strings.Join(longest, ", "), hangs)
}

// The phases of an operation under loss, each with its bound.
const (
	phaseLogin = "log in"
	phaseOne   = "SELECT 1"
	phaseRow   = "16 KiB row"
)

var (
	phaseBounds  = map[string]time.Duration{phaseLogin: loginBound, phaseOne: statementBound, phaseRow: statementBound}
	directBounds = map[string]time.Duration{phaseLogin: directBound, phaseOne: directBound, phaseRow: directBound}
)

// lossOp is one operation under loss, run in the background: a login, SELECT 1 and a
// 16 KiB row on the same connection, each phase timed.
type lossOp struct {
	*attempt
	bounds map[string]time.Duration // of each phase
	mu     sync.Mutex
	phases []lossPhase // the current one last
}

type lossPhase struct {
	name  string
	start time.Time
	took  time.Duration // 0 while it runs
}

// startLossOp runs the operation against addr in a goroutine that ends when the
// operation does; it must end when the proxy is stopped, which the test's cleanup does.
// A phase that runs past its bound in bounds is a hang.
func startLossOp(addr string, bounds map[string]time.Duration) *lossOp {
	op := &lossOp{bounds: bounds, phases: []lossPhase{{name: phaseLogin, start: time.Now()}}}
	op.attempt = try(func() error {
		defer op.begin("") // ends the last phase
		return op.run(addr)
	})
	return op
}

func (op *lossOp) run(addr string) error {
	db, err := sql.Open("mysql", dsn("tcp", addr, ""))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	op.begin(phaseOne)
	var one int
	if err := c.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return err
	}
	op.begin(phaseRow)
	var row []byte
	return c.QueryRowContext(ctx, "SELECT REPEAT('x', 16384)").Scan(&row)
}

// begin ends the current phase and starts the one named; "" only ends it.
func (op *lossOp) begin(name string) {
	op.mu.Lock()
	defer op.mu.Unlock()
	last := &op.phases[len(op.phases)-1]
	if last.took == 0 {
		last.took = time.Since(last.start)
	}
	if name != "" {
		op.phases = append(op.phases, lossPhase{name: name, start: time.Now()})
	}
}

// longest raises each phase's time in into to what the operation took in it, for the
// phases it ended.
func (op *lossOp) longest(into map[string]time.Duration) {
	op.mu.Lock()
	defer op.mu.Unlock()
	for _, ph := range op.phases {
		if ph.took > 0 {
			into[ph.name] = max(into[ph.name], ph.took)
		}
	}
}

// phase returns the current (or last) phase.
func (op *lossOp) phase() lossPhase {
	op.mu.Lock()
	defer op.mu.Unlock()
	return op.phases[len(op.phases)-1]
}

// wait waits for the operation to end, or for its current phase to run past its bound,
// which it returns as a hang.
func (op *lossOp) wait() (hang string) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-op.done:
			return ""
		case <-tick.C:
			ph := op.phase()
			if bound := op.bounds[ph.name]; time.Since(ph.start) > bound {
				return fmt.Sprintf("%s got no answer within %v", ph.name, bound)
			}
		}
	}
}

// countLines counts the lines of the file at path that hold every one of words.
func countLines(path string, words ...string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := 0
	for line := range strings.Lines(string(data)) {
		if !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(line, w) }) {
			n++
		}
	}
	return n
}

func networkBlackhole(t *testing.T, l *link, srv *nsServer, mode string) {
	check, how := breakLink(t, l, faultBlackhole, mode)
	g := proxyTo(t, srv, mode)
	db := openDB(t, "tcp", g.Addr, "")
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("DO 1"); err != nil {
		t.Fatal(err)
	}
	inFlight := try(func() error { _, err := db.Exec("DO SLEEP(2)"); return err })
	time.Sleep(300 * time.Millisecond)
	if err := l.apply(faultBlackhole); err != nil {
		t.Fatal(err)
	}
	applied := time.Now()
	newClient := try(func() error { return selectOneVia("tcp", g.Addr) })

	newClient.by(applied.Add(inFlightBound))
	inFlight.by(applied.Add(inFlightBound))
	newText := answerText(newClient, applied, "a new client")
	flightText := answerText(inFlight, applied, "a statement in flight (DO SLEEP(2), begun 0.3 s before)")
	if err := l.clear(); err != nil {
		t.Fatal(err)
	}
	cleared := time.Now()
	var late []string
	for _, w := range []struct {
		what string
		a    *attempt
	}{{"the new client", newClient}, {"the statement in flight", inFlight}} {
		if !w.a.by(cleared.Add(clearBound)) {
			late = append(late, fmt.Sprintf("%s still unanswered %v after the removal", w.what, clearBound))
		} else if end := w.a.start.Add(w.a.took); end.After(cleared) {
			late = append(late, fmt.Sprintf("%s answered %s after the removal (%s)", w.what, secs(end.Sub(cleared)), errText(w.a.err)))
		}
	}
	back, err := firstServed(g.Addr, clearBound)
	lateText := ""
	if len(late) > 0 {
		lateText = "; " + strings.Join(late, "; ")
	}
	report(check, "%s: %s; %s%s; after removal a new client served in %s", how, newText, flightText, lateText, servedText(back, err))

	if !answeredWithin(newClient, applied, newClientBound) {
		t.Errorf("a new client was not answered within %v (backends.connect_timeout %v) while the backend was unreachable", newClientBound, connectTimeout)
	}
	if !answeredWithin(inFlight, applied, inFlightBound) {
		t.Errorf("a statement in flight was not answered within %v of its backend going silent: "+
			"the proxy has no bound on waiting for a backend that stopped answering", inFlightBound)
	}
	if err != nil {
		t.Errorf("no new client served within %v of the blackhole's removal: %v", clearBound, err)
	}
}

// answerText says when and how an attempt was answered, counted from the fault.
func answerText(a *attempt, since time.Time, what string) string {
	select {
	case <-a.done:
		return fmt.Sprintf("%s answered after %s (%s)", what, secs(a.start.Add(a.took).Sub(since)), errText(a.err))
	default:
		return fmt.Sprintf("%s NOT answered within %v", what, time.Since(since).Round(time.Second))
	}
}

// answeredWithin reports whether the attempt ended within bound of since.
func answeredWithin(a *attempt, since time.Time, bound time.Duration) bool {
	select {
	case <-a.done:
		return a.start.Add(a.took).Sub(since) <= bound
	default:
		return false
	}
}

// servedText reads firstServed's result.
func servedText(took time.Duration, err error) string {
	if err != nil {
		return "NOTHING: " + errText(err)
	}
	return secs(took)
}
