package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/gatekeeperdb/gatekeeper/internal/bookstore"
)

// errorRow is how often one message ended interactions of one class in one cell, over all
// the cell's runs.
type errorRow struct {
	cell
	bookstore.ErrorCount
}

// errorRows sums the error messages of each cell over its runs: the cells in the order of
// their first runs, each cell's messages most frequent first, at most limit per cell
// (0: all).
func errorRows(runs []runResult, limit int) []errorRow {
	type key struct {
		cell
		class, outcome, message string
	}
	var order []cell
	counts := map[cell]map[key]int{}
	for _, r := range runs {
		c := r.cell()
		if _, ok := counts[c]; !ok {
			order = append(order, c)
			counts[c] = map[key]int{}
		}
		for _, e := range runErrors(r) {
			counts[c][key{c, e.Class, e.Outcome, e.Message}] += e.Count
		}
	}
	var out []errorRow
	for _, c := range order {
		var rows []errorRow
		for k, n := range counts[c] {
			rows = append(rows, errorRow{c, bookstore.ErrorCount{Class: k.class, Outcome: k.outcome, Message: k.message, Count: n}})
		}
		slices.SortFunc(rows, func(a, b errorRow) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Class, b.Class), cmp.Compare(a.Message, b.Message))
		})
		if limit > 0 && len(rows) > limit {
			rows = rows[:limit]
		}
		out = append(out, rows...)
	}
	return out
}

// runErrors are the messages that ended a run's interactions, and for the open-loop arrivals
// the load generator turned away itself, which end without an error, a message of their own.
func runErrors(r runResult) []bookstore.ErrorCount {
	out := slices.Clone(r.Result.Errors)
	for _, c := range r.Result.Classes {
		if c.Overflow > 0 {
			out = append(out, bookstore.ErrorCount{Class: c.Name, Outcome: "refused", Count: c.Overflow,
				Message: fmt.Sprintf("(not sent: %d interactions were outstanding, the load generator's limit, --open-max)", r.Result.Config.Clients)})
		}
	}
	return out
}

// writeErrorsCSV writes every run's error messages, one row per run, class and message.
func writeErrorsCSV(path string, runs []runResult) error {
	records := [][]string{{"mode", "loop", "clients", "rate", "round", "class", "outcome", "count", "message"}}
	for _, r := range runs {
		for _, e := range runErrors(r) {
			records = append(records, []string{r.Mode, r.Loop, strconv.Itoa(r.Clients), strconv.FormatFloat(r.Rate, 'f', 3, 64),
				strconv.Itoa(r.Round), e.Class, e.Outcome, strconv.Itoa(e.Count), e.Message})
		}
	}
	return writeCSVFile(path, records)
}

// errorsPerCell bounds the messages the report lists for each cell; errors.csv has them all.
const errorsPerCell = 5

// writeErrors tells why interactions did not complete, cell by cell, summed over the runs.
func writeErrors(w io.Writer, all []runResult) {
	fmt.Fprintf(w, "## Why interactions did not complete\n\n")
	rows := errorRows(all, errorsPerCell)
	if len(rows) == 0 {
		fmt.Fprintf(w, "Every interaction of every run completed.\n\n")
		return
	}
	fmt.Fprintf(w, "The most frequent error messages of each cell, summed over its runs (at most %d per cell;\n", errorsPerCell)
	fmt.Fprintf(w, "`errors.csv` has every message of every run).\n\n")
	fmt.Fprintf(w, "| mode | loop | clients or rate | class | outcome | count | message |\n|---|---|---:|---|---|---:|---|\n")
	for _, e := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %d | %s |\n", e.Mode, e.Loop, e.cell.load(), e.Class, e.Outcome, e.Count, markdownCell(e.Message))
	}
	fmt.Fprintln(w)
}

// load is a cell's client count, or its arrival rate in the open loop.
func (c cell) load() string {
	if c.Loop == "open" {
		return fmt.Sprintf("%.1f/s", c.Rate)
	}
	return strconv.Itoa(c.Clients)
}

// markdownCell makes text safe inside a markdown table cell.
func markdownCell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
