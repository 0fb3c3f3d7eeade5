package integration

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// A statement relayed in a settled session allocates nothing in the proxy: no garbage per
// query, whatever the mode, with admission on as it is by default. The allocations are
// told apart from the client's by their stacks, in a memory profile that records every one.
func TestRelayedStatementsAllocateNothing(t *testing.T) {
	for _, mode := range []string{config.ModePassthrough, config.ModePooled} {
		t.Run(mode, func(t *testing.T) {
			p := startProxy(t, func(c *config.Config) { c.Mode = mode })
			db := openDB(t, p.Addr, "")
			db.SetMaxOpenConns(1)
			conn, err := db.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			stmt, err := conn.PrepareContext(context.Background(), "SELECT ? + 1")
			if err != nil {
				t.Fatal(err)
			}
			defer stmt.Close()
			run := func(n int) {
				var v int
				for i := range n {
					if err := conn.QueryRowContext(context.Background(), "SELECT 1").Scan(&v); err != nil {
						t.Fatal(err)
					}
					if err := stmt.QueryRow(i).Scan(&v); err != nil {
						t.Fatal(err)
					}
					if _, err := conn.ExecContext(context.Background(), "DO 1"); err != nil {
						t.Fatal(err)
					}
				}
			}
			run(50) // the first of each type is new to the estimator, which keeps its sample

			old := runtime.MemProfileRate
			runtime.MemProfileRate = 1
			defer func() { runtime.MemProfileRate = old }()
			before := sessionAllocs()
			const rounds = 300
			run(rounds)
			allocs := sessionAllocs() - before
			t.Logf("%d statements, %d objects allocated in the proxy's sessions", 3*rounds, allocs)
			// A few may come from the controller's window or a log line; one per statement
			// would be 900.
			if allocs > rounds/10 {
				t.Errorf("%d statements allocated %d objects in the proxy's sessions; want none per statement",
					3*rounds, allocs)
			}
		})
	}
}

// sessionAllocs returns the objects allocated so far under a session's command loop.
func sessionAllocs() int64 {
	// The profile is as of the last completed collection: two make it current.
	runtime.GC()
	runtime.GC()
	n, _ := runtime.MemProfile(nil, true)
	records := make([]runtime.MemProfileRecord, n+64)
	n, _ = runtime.MemProfile(records, true)
	var total int64
	for _, r := range records[:n] {
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			if strings.HasSuffix(f.Function, "proxy.(*session).dispatch") ||
				strings.HasSuffix(f.Function, "proxy.(*session).awaitCommand") {
				total += r.AllocObjects
				break
			}
			if !more {
				break
			}
		}
	}
	return total
}
