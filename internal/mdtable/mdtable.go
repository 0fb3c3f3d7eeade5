// Package mdtable reads the tables of a Markdown page. The reference pages under docs/ keep
// their facts (configuration keys, metrics, error codes) in tables, and tests compare those
// tables with the code so that neither drifts from the other.
package mdtable

import (
	"regexp"
	"slices"
	"strings"
)

// Row is a body row of a table: its cells, trimmed, and its line in the page, from 1.
type Row struct {
	Line  int
	Cells []string
}

// Rows returns the body rows of every table in text whose header row begins with the column
// names given, in the order of the page. The delimiter row under a header is skipped.
func Rows(text string, header ...string) []Row {
	var rows []Row
	inTable := false
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		switch {
		case len(cells) >= len(header) && slices.Equal(cells[:len(header)], header):
			inTable = true
		case inTable && !strings.HasPrefix(cells[0], "---"):
			rows = append(rows, Row{Line: i + 1, Cells: cells})
		}
	}
	return rows
}

var backticked = regexp.MustCompile("`([^`]*)`")

// Code returns the texts written in backticks in a cell, in order.
func Code(cell string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// OneCode returns the text of a cell that is one text in backticks and nothing else.
func OneCode(cell string) (string, bool) {
	m := backticked.FindStringSubmatch(cell)
	if m == nil || m[0] != cell {
		return "", false
	}
	return m[1], true
}
