package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// The load of TestAdmissionAbuse.
const (
	abusers     = 300
	abuserPause = 10 * time.Millisecond // after an error, before the next try
	quickProbes = 20
	// quickBound is how long a quick statement of a fresh client may take under the abuse.
	quickBound = 50 * time.Millisecond
)

func TestAdmissionAbuse(t *testing.T) {
	check := "admission abuse (passthrough)"
	g := startGatekeeper(t, config.ModePassthrough, map[string]string{
		"admission.enabled":       "true",
		"admission.capacity":      "50ms",
		"admission.max_queue":     "100",
		"admission.reserve.floor": "20ms",
	})

	// The probes' statement is a type the proxy has measured, as an application's are once
	// it has run a while: a type never seen is charged the whole capacity and waits with
	// the lengthy units until its first run says what it costs.
	if _, err := quickProbe(fromAddr("127.0.0.2"), g.Addr); err != nil {
		t.Fatalf("SELECT 1 before the abuse: %v", err)
	}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var served atomic.Int64
	var mu sync.Mutex
	refusals := map[string]int{}
	loggedIn := make(chan error, abusers)
	for range abusers {
		db := openDB(t, "tcp", g.Addr, "")
		db.SetMaxOpenConns(1)
		wg.Go(func() { // ends when ctx does, after its statement in flight
			if err := db.Ping(); err != nil {
				loggedIn <- err
				return
			}
			loggedIn <- nil
			var v int
			for ctx.Err() == nil {
				if err := db.QueryRow("SELECT SLEEP(0.5)").Scan(&v); err != nil {
					mu.Lock()
					refusals[errKey(err)]++
					mu.Unlock()
					time.Sleep(abuserPause)
					continue
				}
				served.Add(1)
			}
		})
	}
	defer func() {
		stop()
		wg.Wait()
	}()
	for range abusers {
		if err := <-loggedIn; err != nil {
			t.Fatalf("an abusing client could not log in: %v", err)
		}
	}
	// The probes start once the flood is at its height: the lengthy units hold their whole
	// share of the queue, and the next is refused.
	waitFor(t, 30*time.Second, "the queue to refuse lengthy units", func() bool {
		q, err := g.queue()
		return err == nil && q.Rejected > 0
	})

	network := fromAddr("127.0.0.2")
	var lat durations
	probeErrs := map[string]int{}
	hung := false
	servedBefore := served.Load()
	probeStart := time.Now()
	for range quickProbes {
		var took time.Duration
		a := try(func() (err error) { took, err = quickProbe(network, g.Addr); return err })
		if !a.by(a.start.Add(opBound)) {
			hung = true
			break
		}
		if a.err != nil {
			probeErrs[errKey(a.err)]++
		} else {
			lat = append(lat, took)
		}
		time.Sleep(200 * time.Millisecond)
	}
	window := time.Since(probeStart)
	done := served.Load() - servedBefore
	stop()
	wg.Wait()

	mu.Lock()
	abuse := countsText(refusals)
	mu.Unlock()
	failed := ""
	if len(probeErrs) > 0 {
		failed = "; refused: " + countsText(probeErrs)
	}
	if hung {
		failed += fmt.Sprintf("; HANG: a try got no answer within %v", opBound)
	}
	timing := ""
	if len(lat) > 0 {
		timing = fmt.Sprintf(", median %s, max %s", ms(lat.median()), ms(lat.max()))
	}
	report(check, "SELECT 1 of a fresh client: %d of %d tries served%s%s; meanwhile the abusers completed %.1f SLEEPs/s; their errors over the run: %s",
		len(lat), quickProbes, timing, failed, float64(done)/window.Seconds(), abuse)

	if len(lat) < quickProbes {
		t.Errorf("%d of %d quick statements of a fresh client were not answered: %s", quickProbes-len(lat), quickProbes, countsText(probeErrs))
	}
	if lat.median() > quickBound || lat.max() > quickBound {
		t.Errorf("a fresh client's SELECT 1 took median %v, max %v under abuse; want both within %v", lat.median(), lat.max(), quickBound)
	}
}

// countsText lists counted kinds, "N× kind", in the order of the kinds.
func countsText(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d× %s", m[k], k))
	}
	return orNone(strings.Join(parts, "; "))
}

// quickProbe logs in over network (not timed) and times one SELECT 1.
func quickProbe(network, addr string) (time.Duration, error) {
	db, err := sql.Open("mysql", dsn(network, addr, ""))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	var one int
	start := time.Now()
	if err := conn.QueryRowContext(context.Background(), "SELECT 1").Scan(&one); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// errKey shortens an error to its kind: the MySQL error number and the reason, said before
// the first semicolon of the message (what follows is advice), with numbers as N.
func errKey(err error) string {
	code, msg := "", err.Error()
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		code, msg = strconv.Itoa(int(me.Number))+" ", me.Message
	}
	if i := strings.IndexByte(msg, ';'); i > 0 {
		msg = msg[:i]
	}
	var b strings.Builder
	digits := false
	for _, r := range strings.TrimSpace(msg) {
		if r >= '0' && r <= '9' {
			if !digits {
				b.WriteByte('N')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteRune(r)
	}
	return code + b.String()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
