package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/bookstore"
)

func TestErrorRowsSumsCellsOverRuns(t *testing.T) {
	queueTimeout := "Error 1040: gatekeeper: queue timeout: waited 30000 ms for admission"
	run := func(mode string, round int, errs ...bookstore.ErrorCount) runResult {
		return runResult{Mode: mode, Loop: "closed", Clients: 800, Round: round, Result: &bookstore.Result{Errors: errs}}
	}
	open := runResult{Mode: "sjf", Loop: "open", Rate: 304.8, Round: 1, Result: &bookstore.Result{
		Config:  bookstore.Config{Clients: 1000},
		Classes: []bookstore.ClassResult{{Name: "home"}, {Name: "best_sellers", Refused: 7, Overflow: 4}},
		Errors:  []bookstore.ErrorCount{{Class: "best_sellers", Outcome: "refused", Message: queueTimeout, Count: 3}},
	}}
	runs := []runResult{
		run("sjf", 1, bookstore.ErrorCount{Class: "best_sellers", Outcome: "refused", Message: queueTimeout, Count: 5},
			bookstore.ErrorCount{Class: "home", Outcome: "timed_out", Message: "context deadline exceeded", Count: 2}),
		run("direct", 1),
		run("sjf", 2, bookstore.ErrorCount{Class: "best_sellers", Outcome: "refused", Message: queueTimeout, Count: 4},
			bookstore.ErrorCount{Class: "home", Outcome: "timed_out", Message: "context deadline exceeded", Count: 6}),
		open,
	}

	rows := errorRows(runs, 0)
	require.Len(t, rows, 4)
	require.Equal(t, "sjf", rows[0].Mode)
	require.Equal(t, bookstore.ErrorCount{Class: "best_sellers", Outcome: "refused", Message: queueTimeout, Count: 9}, rows[0].ErrorCount)
	require.Equal(t, bookstore.ErrorCount{Class: "home", Outcome: "timed_out", Message: "context deadline exceeded", Count: 8}, rows[1].ErrorCount)
	require.Equal(t, "open", rows[2].Loop)
	require.Equal(t, 4, rows[2].Count, "the overflow, which has no error of its own, is listed")
	require.Contains(t, rows[2].Message, "1000 interactions were outstanding")
	require.Equal(t, 3, rows[3].Count)

	limited := errorRows(runs, 1)
	require.Len(t, limited, 2, "one row per cell that lost any")
	require.Equal(t, 9, limited[0].Count)
	require.Equal(t, 4, limited[1].Count)

	var b bytes.Buffer
	writeErrors(&b, runs)
	require.Contains(t, b.String(), "| sjf | closed | 800 | best_sellers | refused | 9 | Error 1040: gatekeeper: queue timeout: waited 30000 ms for admission |")
	require.Contains(t, b.String(), "| sjf | open | 304.8/s | best_sellers | refused | 4 |")

	b.Reset()
	writeErrors(&b, []runResult{run("direct", 1)})
	require.Contains(t, b.String(), "Every interaction of every run completed.")

	path := filepath.Join(t.TempDir(), "errors.csv")
	require.NoError(t, writeErrorsCSV(path, runs))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(data), "sjf,closed,800,0.000,2,home,timed_out,6,context deadline exceeded\n")
	require.Contains(t, string(data), "sjf,open,0,304.800,1,best_sellers,refused,4,")
}

func TestMarkdownCell(t *testing.T) {
	require.Equal(t, `a \| b c`, markdownCell("a | b\n c"))
}
