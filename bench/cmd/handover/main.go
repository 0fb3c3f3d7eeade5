// Command handover measures what a hand-over to a new process costs the clients of a
// running gatekeeper: it holds -clients connections open through the proxy, and each round
// first sends one statement on every connection at once (the burst alone), then asks for a
// hand-over (POST /-/handover) and, as soon as it is answered, sends the burst again. The
// slowest statement of each burst, and its median, say what the hand-over added beyond what
// the burst costs by itself. Every connection must be the same one at the end
// (CONNECTION_ID()); any error fails the run.
//
//	handover -addr 127.0.0.1:6033 -admin 127.0.0.1:6080 -user app -password app -db app
//
// It prints a Markdown table, one row per round, and on its last line the pid of the process
// serving at the end ("serving PID"), for the caller to stop.
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6033", "the proxy's client address")
	adminAddr := flag.String("admin", "127.0.0.1:6080", "the proxy's admin address")
	user := flag.String("user", "app", "user")
	password := flag.String("password", "app", "password")
	db := flag.String("db", "", "schema")
	clients := flag.Int("clients", 500, "connections held through the proxy")
	rounds := flag.Int("rounds", 5, "hand-overs")
	flag.Parse()
	if err := run(*addr, *adminAddr, *user, *password, *db, *clients, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "handover:", err)
		os.Exit(1)
	}
}

func run(addr, adminAddr, user, password, schema string, clients, rounds int) error {
	ctx := context.Background()
	db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/%s", user, password, addr, schema))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(clients)
	db.SetMaxIdleConns(clients)
	conns := make([]*sql.Conn, clients)
	ids := make([]int64, clients)
	for i := range conns {
		if conns[i], err = db.Conn(ctx); err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		if err := conns[i].QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&ids[i]); err != nil {
			return err
		}
	}
	fmt.Printf("| round | burst alone: median / slowest ms | POST answered ms | burst right after: median / slowest ms | old process gone ms (from the POST) |\n")
	fmt.Printf("|---:|---:|---:|---:|---:|\n")
	var serving int
	for r := 1; r <= rounds; r++ {
		aloneMed, aloneMax, err := burst(ctx, conns)
		if err != nil {
			return fmt.Errorf("round %d, burst alone: %w", r, err)
		}
		start := time.Now()
		ans, err := handOver(adminAddr)
		if err != nil {
			return fmt.Errorf("round %d: %w", r, err)
		}
		answered := time.Since(start)
		var gone time.Duration
		var goneErr error
		var waited sync.WaitGroup
		waited.Go(func() { goneErr = waitGone(ans.OldPID, 30*time.Second); gone = time.Since(start) })
		afterMed, afterMax, err := burst(ctx, conns)
		if err != nil {
			return fmt.Errorf("round %d, burst after the hand-over: %w", r, err)
		}
		if waited.Wait(); goneErr != nil {
			return fmt.Errorf("round %d: %w", r, goneErr)
		}
		serving = ans.NewPID
		fmt.Printf("| %d | %s / %s | %s | %s / %s | %s |\n", r, ms(aloneMed), ms(aloneMax), ms(answered), ms(afterMed), ms(afterMax),
			ms(gone))
	}
	for i, c := range conns {
		var id int64
		if err := c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			return err
		}
		if id != ids[i] {
			return fmt.Errorf("connection %d: CONNECTION_ID() %d at the end, %d at the start", i, id, ids[i])
		}
		_ = c.Close()
	}
	fmt.Printf("\nserving %d\n", serving)
	return nil
}

// burst sends SELECT 1 on every connection at once and returns the median and slowest.
func burst(ctx context.Context, conns []*sql.Conn) (median, slowest time.Duration, err error) {
	took := make([]time.Duration, len(conns))
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			t := time.Now()
			_, errs[i] = c.ExecContext(ctx, "SELECT 1")
			took[i] = time.Since(t)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, err
	}
	slices.Sort(took)
	return took[len(took)/2], took[len(took)-1], nil
}

type answer struct {
	OldPID int `json:"old_pid"`
	NewPID int `json:"new_pid"`
}

// handOver asks the proxy for a hand-over and returns its answer.
func handOver(adminAddr string) (answer, error) {
	var a answer
	resp, err := http.Post("http://"+adminAddr+"/-/handover", "", nil)
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return a, fmt.Errorf("POST /-/handover: %s", resp.Status)
	}
	return a, json.NewDecoder(resp.Body).Decode(&a)
}

// waitGone waits until process pid has exited (a zombie has).
func waitGone(pid int, within time.Duration) error {
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for running(pid) {
		if time.Since(start) > within {
			return fmt.Errorf("process %d still runs after %s", pid, within)
		}
		<-tick.C
	}
	return nil
}

// running tells whether pid runs: it exists and is not a zombie waiting for its parent.
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }
