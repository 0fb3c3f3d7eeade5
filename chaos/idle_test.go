package chaos

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// The idle clients of TestIdleSockets and TestIdleLogins.
const (
	idleSockets = 2000
	// handshakeBound is client.max_handshakes where the proxy has it.
	handshakeBound = 100
	// idleHold is how long the idle sockets are held open while Threads_connected is read.
	idleHold = 4 * time.Second

	idleLogins   = 10_000
	loginWorkers = 32
	poolMaxOpen  = 32
	// rssPerClientBound is the most memory an idle logged-in client may cost the proxy.
	rssPerClientBound = 64 << 10
)

func TestIdleSockets(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) { idleSocketsIn(t, mode) })
	}
}

func idleSocketsIn(t *testing.T, mode string) {
	check := fmt.Sprintf("2,000 idle sockets (%s)", mode)
	settings := map[string]string{"client.handshake_timeout": "10s"}
	bounded := hasKey("client.max_handshakes")
	if bounded {
		settings["client.max_handshakes"] = strconv.Itoa(handshakeBound)
	}
	g := startGatekeeper(t, mode, settings)
	mon := openMonitor(t)
	before, err := mon.threads()
	if err != nil {
		t.Fatal(err)
	}
	stopPeak := mon.peak(50 * time.Millisecond)
	conns := make([]net.Conn, 0, idleSockets)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var dialErr error
	dialErrs := 0
	d := net.Dialer{Timeout: 5 * time.Second}
	for range idleSockets {
		c, err := d.Dial("tcp", g.Addr)
		if err != nil {
			dialErrs++
			dialErr = err
			continue
		}
		conns = append(conns, c)
	}
	// A client from another address logs in meanwhile.
	fresh := try(func() error { return selectOneVia(fromAddr("127.0.0.2"), g.Addr) })
	time.Sleep(idleHold)
	peak := stopPeak()
	freshText := "a fresh client from another address meanwhile: "
	if fresh.by(time.Now().Add(opBound)) {
		if fresh.err == nil {
			freshText += "served in " + ms(fresh.took)
		} else {
			freshText += "refused after " + ms(fresh.took) + " (" + errText(fresh.err) + ")"
		}
	} else {
		freshText += fmt.Sprintf("NOT answered within %v", opBound)
	}
	bound := "the proxy has no client.max_handshakes"
	if bounded {
		bound = fmt.Sprintf("client.max_handshakes %d", handshakeBound)
	}
	opened := fmt.Sprintf("%d sockets open", len(conns))
	if dialErrs > 0 {
		opened += fmt.Sprintf(", %d connects failed (%s)", dialErrs, errText(dialErr))
	}
	report(check, "peak Threads_connected %d above the %d before (%s; %s); %s", peak-before, before, opened, bound, freshText)

	if bounded && peak-before > handshakeBound {
		t.Errorf("%d idle sockets cost the primary %d connections with client.max_handshakes %d", len(conns), peak-before, handshakeBound)
	}
	if mode == config.ModePooled && peak-before > poolMaxOpen {
		t.Errorf("sockets that never logged in cost the primary %d connections in pooled mode", peak-before)
	}
}

func TestIdleLogins(t *testing.T) {
	check := "10,000 idle clients (pooled)"
	if need := uint64(idleLogins + 2000); fileLimit() < need {
		notAvailable(t, check, fmt.Sprintf("the open-file limit (ulimit -n) is %d; %d clients need about %d", fileLimit(), idleLogins, need))
	}
	mon := openMonitor(t)
	before, err := mon.threads()
	if err != nil {
		t.Fatal(err)
	}
	g := startGatekeeper(t, config.ModePooled, map[string]string{"pools.max_open": strconv.Itoa(poolMaxOpen)})
	stopPeak := mon.peak(100 * time.Millisecond)
	rssStart, err := g.rss()
	if err != nil {
		t.Fatal(err)
	}

	// One client first, so that the memory counted per client leaves out the pool's start.
	first, err := rawConnect(g.Addr, "127.0.0.10")
	if err != nil {
		t.Fatalf("the first login: %v", err)
	}
	conns := []net.Conn{first}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	waitFor(t, 5*time.Second, "the pool's first connection", func() bool {
		b, err := g.backends()
		return err == nil && len(b.Backends) > 0 && b.Backends[0].Open > 0
	})
	rssOne, err := g.rss()
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var failed int
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for w := range loginWorkers {
		// Each worker logs in from its own loopback address, as clients of many hosts would:
		// one address would crowd its ephemeral ports and meet
		// client.max_handshakes_per_client.
		source := "127.0.0." + strconv.Itoa(11+w)
		n := idleLogins / loginWorkers
		if w < idleLogins%loginWorkers {
			n++
		}
		if w == 0 {
			n-- // the first client
		}
		wg.Go(func() { // ends after n logins
			mine := make([]net.Conn, 0, n)
			var bad int
			var lastErr error
			for range n {
				c, err := rawConnect(g.Addr, source)
				if err != nil {
					bad++
					lastErr = err
					continue
				}
				mine = append(mine, c)
			}
			mu.Lock()
			defer mu.Unlock()
			conns = append(conns, mine...)
			failed += bad
			if firstErr == nil {
				firstErr = lastErr
			}
		})
	}
	wg.Wait()
	loginTime := time.Since(start)
	rssAll, err := g.settledRSS(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	peak := stopPeak()
	perClient := (rssAll - rssOne) / int64(len(conns)-1)

	failures := ""
	if failed > 0 {
		failures = fmt.Sprintf(" (%d failed: %s)", failed, errText(firstErr))
	}
	report(check, "%d of %d logins in %s%s; proxy RSS %.1f MiB at start, %.1f MiB with one client, %.1f MiB with %d: %.1f KiB per idle client; "+
		"the primary's connections peaked %d above the %d before (pools.max_open %d)",
		len(conns), idleLogins, secs(loginTime), failures, mib(rssStart), mib(rssOne), mib(rssAll), len(conns),
		float64(perClient)/1024, peak-before, before, poolMaxOpen)

	if failed > 0 {
		t.Errorf("%d of %d logins failed: %v", failed, idleLogins, firstErr)
	}
	if peak-before > poolMaxOpen {
		t.Errorf("the primary had %d connections more with %d clients, over pools.max_open %d", peak-before, len(conns), poolMaxOpen)
	}
	if perClient > rssPerClientBound {
		t.Errorf("an idle client costs the proxy %d bytes, over the bound of %d", perClient, rssPerClientBound)
	}
}

// rawConnect connects to addr from the loopback address source and logs in as the test
// account, speaking the protocol itself; the login is bounded by 20 s.
func rawConnect(addr, source string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if err := rawLogin(c); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
