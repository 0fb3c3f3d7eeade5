package chaos

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"
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
	// opBound bounds one operation under delay or loss: anything longer is a hang.
	opBound = 30 * time.Second
	// clearBound is how long after a fault is removed a new client may wait to be served:
	// pooled mode's dial backoff (at most 5 s) and a dial.
	clearBound = 5*time.Second + connectTimeout
	// lossRun is how long operations run under loss.
	lossRun = 8 * time.Second
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
		r := startDelayRelay(t, srv.Addr)
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
	var lat, errLat durations
	errs := map[string]int{}
	ops, hung := 0, 0
	for end := time.Now().Add(lossRun); time.Now().Before(end); {
		ops++
		a := try(func() error {
			db, err := sql.Open("mysql", dsn("tcp", g.Addr, ""))
			if err != nil {
				return err
			}
			defer db.Close()
			var one int
			if err := db.QueryRow("SELECT 1").Scan(&one); err != nil {
				return err
			}
			var pad []byte
			return db.QueryRow("SELECT REPEAT('x', 16384)").Scan(&pad)
		})
		if !a.by(a.start.Add(opBound)) {
			hung++
			break
		}
		if a.err != nil {
			errs[errKey(a.err)]++
			errLat = append(errLat, a.took)
			continue
		}
		lat = append(lat, a.took)
	}
	if err := l.clear(); err != nil {
		t.Fatal(err)
	}
	back, err := firstServed(g.Addr, clearBound)
	failures := "no errors"
	if len(errs) > 0 {
		failures = fmt.Sprintf("errors after median %s, max %s: %s", ms(errLat.median()), ms(errLat.max()), countsText(errs))
	}
	hangs := "none hung"
	if hung > 0 {
		hangs = fmt.Sprintf("HANG: an operation got no answer within %v", opBound)
	}
	succeeded := "none"
	if len(lat) > 0 {
		succeeded = fmt.Sprintf("median %s, max %s", ms(lat.median()), ms(lat.max()))
	}
	report(check, "%s: %d of %d operations (log in, SELECT 1, a 16 KiB result) succeeded (%s); %s; %s; after removal a new client served in %s",
		how, len(lat), ops, succeeded, failures, hangs, servedText(back, err))
	if hung > 0 {
		t.Errorf("an operation under 30%% loss got no answer within %v", opBound)
	}
	for k := range errs {
		if !strings.Contains(k, "timed out") && !strings.Contains(k, "timeout") {
			t.Errorf("an error other than a timeout under loss: %s", k)
		}
	}
	if err != nil {
		t.Errorf("no new client served within %v of the loss's removal: %v", clearBound, err)
	}
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
