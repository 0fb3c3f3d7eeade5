package chaos

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// The slow clients of TestSlowloris.
const (
	handshakeTimeout = 2 * time.Second
	slowClients      = 20
	// slowBound is how long a slow client may hold its connection.
	slowBound = handshakeTimeout + time.Second
	// servedBound is how long another client may take to log in and run SELECT 1 meanwhile.
	servedBound = time.Second
)

func TestSlowloris(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) { slowloris(t, mode) })
	}
}

// slowResult is what one slow client saw.
type slowResult struct {
	held time.Duration // from connected to closed by the proxy
	// greeted says whether the proxy greeted the client; sent and total count the bytes of
	// its handshake response sent by the time it was closed.
	greeted     bool
	sent, total int
	reply       string // the error the proxy sent, if any
	err         error  // a failure of the client itself
}

func slowloris(t *testing.T, mode string) {
	check := fmt.Sprintf("slowloris (%s)", mode)
	g := startGatekeeper(t, mode, map[string]string{"client.handshake_timeout": handshakeTimeout.String()})

	results := make(chan slowResult, slowClients)
	for range slowClients {
		go func() { results <- slowClient(g.Addr) }() // ends by the proxy's close or its own 10 s bound
	}

	// Meanwhile other clients, from another address, log in and run SELECT 1 again and again
	// until every slow client has ended.
	var mu sync.Mutex
	var got []slowResult
	allEnded := make(chan struct{})
	go func() { // ends after slowClients results
		for range slowClients {
			r := <-results
			mu.Lock()
			got = append(got, r)
			mu.Unlock()
		}
		close(allEnded)
	}()
	var lat durations
	var failures []string
	network := fromAddr("127.0.0.2")
	for done := false; !done; {
		select {
		case <-allEnded:
			done = true
			continue
		default:
		}
		a := try(func() error { return selectOneVia(network, g.Addr) })
		if !a.by(a.start.Add(opBound)) {
			failures = append(failures, fmt.Sprintf("no answer within %v", opBound))
			break
		}
		if a.err != nil {
			failures = append(failures, errText(a.err))
		} else {
			lat = append(lat, a.took)
		}
		time.Sleep(50 * time.Millisecond)
	}

	var held durations
	var sent, total, greeted, silent int
	refusals := map[string]int{}
	var clientErrs []string
	for _, r := range got {
		if r.err != nil {
			clientErrs = append(clientErrs, errText(r.err))
			continue
		}
		held = append(held, r.held)
		switch {
		case r.greeted:
			greeted++
			sent, total = max(sent, r.sent), r.total
			if r.reply == "" {
				silent++
			} else {
				refusals["after the greeting: "+r.reply]++
			}
		case r.reply == "":
			refusals["before a greeting, without an error packet"]++
		default:
			refusals["before a greeting: "+r.reply]++
		}
	}
	how := fmt.Sprintf("%d greeted, closed after at most %d of their %d handshake bytes", greeted, sent, total)
	if silent == greeted {
		how += " without an error packet"
	}
	for _, k := range slices.Sorted(maps.Keys(refusals)) {
		how += fmt.Sprintf("; %d closed %s", refusals[k], k)
	}
	others := fmt.Sprintf("meanwhile %d of %d logins with SELECT 1 from another address served, max %s", len(lat), len(lat)+len(failures), ms(lat.max()))
	if len(failures) > 0 {
		others += fmt.Sprintf("; %d failed: %s", len(failures), failures[0])
	}
	report(check, "%d slow clients closed after median %s, max %s (%s); %s",
		len(held), secs(held.median()), secs(held.max()), how, others)

	for _, e := range clientErrs {
		t.Errorf("a slow client failed on its own: %s", e)
	}
	if held.max() > slowBound {
		t.Errorf("a slow client held its connection for %v with client.handshake_timeout %v", held.max(), handshakeTimeout)
	}
	if len(failures) > 0 {
		t.Errorf("%d other clients were not served while slow clients logged in: %v", len(failures), failures)
	}
	if len(lat) == 0 {
		t.Error("no other client was served")
	}
	if lat.max() > servedBound {
		t.Errorf("another client took %v to log in and run SELECT 1 while slow clients logged in", lat.max())
	}
}

// slowClient connects from 127.0.0.3, reads the greeting and sends a valid handshake
// response one byte a second until the proxy closes the connection; it gives up after 10 s.
func slowClient(addr string) slowResult {
	var r slowResult
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		r.err = err
		return r
	}
	defer c.Close()
	start := time.Now()
	_ = c.SetDeadline(start.Add(10 * time.Second))
	resp, err := handshakeResponse(c, env.User, env.Password, env.Database)
	var se *protocol.ServerError
	switch {
	case errors.As(err, &se):
		r.held, r.reply = time.Since(start), se.Message
		return r
	case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
		r.held = time.Since(start)
		return r
	case err != nil:
		r.err = err
		return r
	}
	r.greeted, r.total = true, len(resp)
	closed := make(chan string, 1)
	go func() { // ends when the connection does: closed by the proxy, or at the deadline
		reply := ""
		for {
			_, p, err := readPacket(c)
			if err != nil {
				closed <- reply
				return
			}
			if len(p) > 0 && p[0] == mysql.ERR_HEADER {
				if e, err := protocol.ParseError(p); err == nil {
					reply = e.Message
				}
			}
		}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if r.sent < len(resp) {
			if _, err := c.Write(resp[r.sent : r.sent+1]); err == nil {
				r.sent++
			}
		}
		select {
		case r.reply = <-closed:
			r.held = time.Since(start)
			return r
		case <-tick.C:
		}
	}
}
