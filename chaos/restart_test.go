package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The write load of TestProxyRestartUnderWrites.
const (
	ledgerWriters  = 8
	proxyRestarts  = 4
	restartEvery   = 2500 * time.Millisecond
	drainTimeout   = 3 * time.Second
	retryPause     = 100 * time.Millisecond
	writerDeadline = 2 * time.Minute
)

func TestProxyRestartUnderWrites(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) { proxyRestartUnderWrites(t, mode) })
	}
}

// ledger is what the writers know: the ids whose INSERT was acknowledged, and those whose
// outcome a failure made unknown.
type ledger struct {
	mu sync.Mutex
	// acked ids were answered OK, at the first try or at a retry.
	acked map[int64]bool
	// unknown counts failures of unknown outcome; landed and notLanded split those that a
	// retry resolved, unresolved lists the ids a writer was still retrying at the end.
	unknown, landed, notLanded int
	unresolved                 []int64
	// notSent counts attempts refused before the statement left the client (the proxy not
	// listening): they are retried as they are.
	notSent int
	// kinds counts the errors of unknown outcome by kind.
	kinds map[string]int
}

func (l *ledger) add(f func(*ledger)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(l)
}

func proxyRestartUnderWrites(t *testing.T, mode string) {
	check := fmt.Sprintf("SIGTERM and restart under writes (%s)", mode)
	table := "chaos_ledger_" + mode
	mon := openMonitor(t)
	for _, q := range []string{
		"DROP TABLE IF EXISTS " + table,
		// id is not unique: a write applied twice would show as two rows.
		"CREATE TABLE " + table + " (seq BIGINT AUTO_INCREMENT PRIMARY KEY, id BIGINT NOT NULL, writer INT NOT NULL, KEY (id))",
	} {
		if _, err := mon.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	g := startGatekeeper(t, mode, map[string]string{"shutdown.drain_timeout": drainTimeout.String()})

	led := &ledger{acked: map[int64]bool{}, kinds: map[string]int{}}
	ctx, stopWriters := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range ledgerWriters {
		db := openDB(t, "tcp", g.Addr, "")
		db.SetMaxOpenConns(1)
		wg.Go(func() { writeLedger(ctx, db, table, w, led) }) // ends when ctx does
	}
	defer func() {
		stopWriters()
		wg.Wait()
	}()

	var downs durations
	for range proxyRestarts {
		time.Sleep(restartEvery)
		took, err := g.stop(syscall.SIGTERM, drainTimeout+5*time.Second)
		if err != nil {
			t.Fatalf("SIGTERM: %v", err)
		}
		start := time.Now()
		g.start()
		downs = append(downs, took+time.Since(start))
	}
	time.Sleep(restartEvery)
	stopWriters()
	wg.Wait()

	counts := mon.idCounts(t, table)

	lost, dup := 0, 0
	for id := range led.acked {
		if counts[id] == 0 {
			lost++
		}
	}
	for _, n := range counts {
		if n > 1 {
			dup++
		}
	}
	unresolvedIn := 0
	for _, id := range led.unresolved {
		if counts[id] > 0 {
			unresolvedIn++
		}
	}
	report(check, "%d writes acknowledged over %d restarts (SIGTERM to ready again: median %s, max %s); %d lost, %d duplicated; "+
		"%d failures of unknown outcome (%d had been applied, %d had not, %d unresolved at the end of which %d applied; %s); %d refused before sending",
		len(led.acked), proxyRestarts, ms(downs.median()), ms(downs.max()), lost, dup,
		led.unknown, led.landed, led.notLanded, len(led.unresolved), unresolvedIn, countsText(led.kinds), led.notSent)
	if len(led.acked) == 0 {
		t.Fatal("no write was acknowledged")
	}
	if lost > 0 {
		t.Errorf("%d acknowledged writes are missing from the table", lost)
	}
	if dup > 0 {
		t.Errorf("%d ids are in the table more than once", dup)
	}
}

// writeLedger inserts rows with ids of its own until ctx ends. A failure whose outcome is
// unknown is retried with a check-then-insert, which cannot apply a write twice; a retry
// answered with no row inserted means the first attempt had been applied.
func writeLedger(ctx context.Context, db *sql.DB, table string, writer int, led *ledger) {
	plain := "INSERT INTO " + table + " (id, writer) VALUES (?, ?)"
	guarded := "INSERT INTO " + table + " (id, writer) SELECT ?, ? FROM DUAL WHERE NOT EXISTS (SELECT 1 FROM " + table + " WHERE id = ?)"
	deadline := time.Now().Add(writerDeadline)
	for n := int64(1); ctx.Err() == nil; n++ {
		id := int64(writer)<<32 | n
		uncertain := false
		for {
			var res sql.Result
			var err error
			// Each statement is bounded so that a writer always ends; the bound is far
			// above a statement's time and never fires in a passing run.
			sctx, cancel := context.WithDeadline(context.Background(), deadline)
			if uncertain {
				res, err = db.ExecContext(sctx, guarded, id, writer, id)
			} else {
				res, err = db.ExecContext(sctx, plain, id, writer)
			}
			cancel()
			if err == nil {
				affected, _ := res.RowsAffected()
				led.add(func(l *ledger) {
					l.acked[id] = true
					switch {
					case !uncertain:
					case affected == 0:
						l.landed++
					default:
						l.notLanded++
					}
				})
				break
			}
			if notSent(err) {
				led.add(func(l *ledger) { l.notSent++ })
			} else if !uncertain {
				uncertain = true
				led.add(func(l *ledger) { l.unknown++; l.kinds[errKey(err)]++ })
			}
			if ctx.Err() != nil {
				if uncertain {
					led.add(func(l *ledger) { l.unresolved = append(l.unresolved, id) })
				}
				return
			}
			time.Sleep(retryPause)
		}
	}
}

// notSent reports whether err says the statement never left the client: the connection to
// the proxy could not be opened.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" || errors.Is(err, syscall.ECONNREFUSED)
}
