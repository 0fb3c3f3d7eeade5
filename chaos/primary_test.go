package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/gatekeeperdb/gatekeeper/internal/config"

	"github.com/gatekeeperdb/gatekeeper/internal/procstat"
)

// modes are the proxy's modes the client-facing checks run in.
var modes = []string{config.ModePassthrough, config.ModePooled}

// Bounds of TestPrimaryKilled.
const (
	// answerBound is how long a client may wait for its error once the primary is dead.
	answerBound = 10 * time.Second
	// recoveryBound is how long after the primary is back a new client may wait to be served.
	recoveryBound = 15 * time.Second
	// streamRows rows of 1,000 bytes make the 100 MB result.
	streamRows = 100_000
)

func TestPrimaryKilled(t *testing.T) {
	mon := openMonitor(t)
	if _, err := mon.db.Exec("CREATE TABLE IF NOT EXISTS chaos_killed (id BIGINT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Run("mid-transaction", func(t *testing.T) { primaryKilledMidTransaction(t, mode) })
			t.Run("mid-stream", func(t *testing.T) { primaryKilledMidStream(t, mode) })
		})
	}
}

// ensurePrimary brings the primary back when the test ends, whatever happened to it.
func ensurePrimary(t *testing.T) {
	t.Cleanup(func() {
		if pid, err := primaryPID(); err == nil && procstat.Running(pid) {
			return
		}
		if _, err := backendsScript("up"); err != nil {
			t.Errorf("bringing the primary back: %v", err)
		}
	})
}

func primaryKilledMidTransaction(t *testing.T, mode string) {
	check := fmt.Sprintf("kill -9 primary mid-transaction (%s)", mode)
	ensurePrimary(t)
	g := startGatekeeper(t, mode, nil)
	mon := openMonitor(t)

	// go-mysql's client sends COMMIT on the same connection after the error, as an
	// application that ignores it would; a driver that drops the connection would not ask.
	c, err := client.Connect(g.Addr, env.User, env.Password, env.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	marker := time.Now().UnixNano()
	for _, q := range []string{"BEGIN", fmt.Sprintf("INSERT INTO chaos_killed VALUES (%d)", marker)} {
		if _, err := c.Execute(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	sleep := fmt.Sprintf("DO SLEEP(30) /* %d */", marker)
	inFlight := try(func() error { _, err := c.Execute(sleep); return err })
	waitFor(t, 5*time.Second, "the statement to run on the primary", func() bool {
		var n int
		err := mon.db.QueryRow("SELECT COUNT(*) FROM information_schema.processlist WHERE info = ?", sleep).Scan(&n)
		return err == nil && n == 1
	})

	killPrimary(t)
	killed := time.Now()
	if !inFlight.by(killed.Add(answerBound)) {
		report(check, "HANG: no answer %v after the primary died", answerBound)
		t.Fatalf("the statement in flight got no answer within %v of the primary's death", answerBound)
	}
	answered := time.Since(killed)
	commit := try(func() error { _, err := c.Execute("COMMIT"); return err })
	if !commit.by(commit.start.Add(answerBound)) {
		report(check, "HANG: COMMIT got no answer within %v", answerBound)
		t.Fatalf("COMMIT after the primary died got no answer within %v", answerBound)
	}

	back := restartPrimary(t)
	recovered, err := firstServed(g.Addr, recoveryBound)
	var left int
	lerr := mon.db.QueryRow("SELECT COUNT(*) FROM chaos_killed WHERE id = ?", marker).Scan(&left)
	rowState := "gone"
	if lerr != nil {
		rowState = "unknown (" + errText(lerr) + ")"
	} else if left != 0 {
		rowState = "PRESENT"
	}
	commitText := "COMMIT on the same connection refused (" + errText(commit.err) + ")"
	switch {
	case commit.err == nil:
		commitText = "COMMIT on the same connection answered OK"
	case errors.Is(commit.err, io.EOF) || errors.Is(commit.err, syscall.ECONNRESET) || strings.Contains(commit.err.Error(), "EOF"):
		commitText = "COMMIT on the same connection failed: the proxy had closed it (" + errText(commit.err) + ")"
	}
	report(check, "error after %s (%s); %s; uncommitted row %s after the restart; primary back in %s, a new client served in %s",
		secs(answered), errText(inFlight.err), commitText, rowState, secs(back), servedText(recovered, err))

	if inFlight.err == nil {
		t.Error("the statement in flight succeeded although the primary died under it")
	}
	if commit.err == nil {
		t.Error("COMMIT was answered OK after the primary died in the transaction")
	}
	if lerr != nil || left != 0 {
		t.Errorf("the row of the transaction that never committed: count %d, %v", left, lerr)
	}
	if err != nil {
		t.Errorf("no new client served through the proxy within %v of the primary's return: %v", recoveryBound, err)
	}
}

func primaryKilledMidStream(t *testing.T, mode string) {
	check := fmt.Sprintf("kill -9 primary mid-stream (%s)", mode)
	ensurePrimary(t)
	g := startGatekeeper(t, mode, nil)
	db := openDB(t, "tcp", g.Addr, "")
	db.SetMaxOpenConns(1)

	type outcome struct {
		rows, bytes int
		err         error
	}
	paused := make(chan struct{})
	resume := make(chan struct{})
	done := make(chan outcome, 1)
	go func() { // ends when the result ends, or at cleanup when the proxy is killed
		var o outcome
		defer func() { done <- o }()
		rows, err := db.Query(fmt.Sprintf("SELECT seq, REPEAT('x', 1000) FROM seq_1_to_%d", streamRows))
		if err != nil {
			o.err = err
			close(paused)
			return
		}
		defer rows.Close()
		var seq int
		var pad sql.RawBytes
		for rows.Next() {
			if err := rows.Scan(&seq, &pad); err != nil {
				o.err = err
				return
			}
			o.rows++
			o.bytes += len(pad) + 8
			if o.rows == streamRows/10 {
				close(paused)
				<-resume
			}
		}
		o.err = rows.Err()
	}()
	select {
	case <-paused:
	case <-time.After(30 * time.Second):
		t.Fatal("the first 10% of the result did not arrive within 30 s")
	}
	killPrimary(t)
	killed := time.Now()
	close(resume)
	var o outcome
	select {
	case o = <-done:
	case <-time.After(answerBound):
		report(check, "HANG: the result neither ended nor failed within %v of the primary's death", answerBound)
		t.Fatalf("the client got nothing within %v of the primary's death", answerBound)
	}
	answered := time.Since(killed)

	back := restartPrimary(t)
	recovered, err := firstServed(g.Addr, recoveryBound)
	outcomeText := fmt.Sprintf("error after %s having read %d of %d rows (%.1f MB): %s",
		secs(answered), o.rows, streamRows, float64(o.bytes)/1e6, errText(o.err))
	if o.err == nil {
		outcomeText = fmt.Sprintf("NO error: the result ended after %d of %d rows as if complete", o.rows, streamRows)
	}
	report(check, "%s; primary back in %s, a new client served in %s", outcomeText, secs(back), servedText(recovered, err))

	switch {
	case o.err == nil && o.rows < streamRows:
		t.Errorf("a result cut at row %d of %d was presented as complete", o.rows, streamRows)
	case o.err == nil:
		t.Errorf("all %d rows arrived: the primary died too late to cut the stream", streamRows)
	}
	if err != nil {
		t.Errorf("no new client served through the proxy within %v of the primary's return: %v", recoveryBound, err)
	}
}

// firstServed connects to addr and runs SELECT 1 until it succeeds, for at most within,
// and returns how long that took; a failed attempt is retried after 100 ms.
func firstServed(addr string, within time.Duration) (time.Duration, error) {
	start := time.Now()
	db, err := sql.Open("mysql", dsn("tcp", addr, "timeout=5s"))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxIdleConns(0)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		var one int
		err = db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
		cancel()
		if err == nil {
			return time.Since(start), nil
		}
		if time.Since(start) > within {
			return time.Since(start), err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
