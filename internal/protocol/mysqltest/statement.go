package mysqltest

import (
	"strconv"
	"strings"
)

// This file recognises the few statement shapes the server answers itself. It is a
// scanner, not a parser: it knows quotes, comments and parentheses well enough to split
// at the right commas and semicolons, and gives up (kindOther, the Handler's business) on
// anything it does not recognise whole.

type stmtKind int

const (
	kindOther stmtKind = iota
	kindSet
	kindUse
	kindBegin
	kindCommit
	kindRollback
	kindSelect
	kindDo
	kindKill
)

// statement is what the server understood of one SQL statement.
type statement struct {
	kind stmtKind
	// sets are the assignments of a SET, in order.
	sets []assignment
	// schema is the argument of USE.
	schema string
	// items are the select list of a SELECT the server answers itself.
	items []selectItem
	// killID and killQuery are the target of KILL and whether only its statement dies.
	killID    uint32
	killQuery bool
	// changesState marks a statement the Handler answers that still changes session state
	// (temporary tables, SQL-level prepared statements).
	changesState bool
}

// assignment is one variable set by a SET statement.
type assignment struct {
	// user marks a user variable (@name); otherwise a session system variable.
	user bool
	// name is lower-case, without @, @@ or a scope.
	name  string
	value string
}

type itemKind int

const (
	itemSysVar itemKind = iota
	itemUserVar
	itemConnectionID
	itemDatabase
)

// selectItem is one expression of a SELECT the server answers itself.
type selectItem struct {
	kind itemKind
	// column is the column's name: the alias, or the expression as written.
	column string
	// variable is the lower-case name of the variable an item reads.
	variable string
}

// parseStatement recognises q, a single statement.
func parseStatement(q string) statement {
	q = trimStatement(q)
	if rest, ok := cutKeyword(q, "SET"); ok {
		if sets, ok := parseSet(rest); ok {
			return statement{kind: kindSet, sets: sets}
		}
		return statement{}
	}
	if rest, ok := cutKeyword(q, "USE"); ok {
		if name := unquoteIdent(strings.TrimSpace(rest)); name != "" {
			return statement{kind: kindUse, schema: name}
		}
		return statement{}
	}
	if rest, ok := cutKeyword(q, "SELECT"); ok {
		if items, ok := parseSelect(rest); ok {
			return statement{kind: kindSelect, items: items}
		}
		return statement{}
	}
	if rest, ok := cutKeyword(q, "KILL"); ok {
		return parseKill(rest)
	}
	if _, ok := cutKeyword(q, "DO"); ok {
		return statement{kind: kindDo}
	}
	if rest, ok := cutKeyword(q, "BEGIN"); ok && isWork(rest) {
		return statement{kind: kindBegin}
	}
	if rest, ok := cutKeyword(q, "START"); ok {
		if _, ok := cutKeyword(rest, "TRANSACTION"); ok {
			return statement{kind: kindBegin}
		}
	}
	if rest, ok := cutKeyword(q, "COMMIT"); ok && isWork(rest) {
		return statement{kind: kindCommit}
	}
	if rest, ok := cutKeyword(q, "ROLLBACK"); ok && isWork(rest) {
		return statement{kind: kindRollback}
	}
	return statement{changesState: changesState(q)}
}

// isWork tells whether what follows BEGIN, COMMIT or ROLLBACK leaves it a plain one.
func isWork(rest string) bool {
	rest = strings.TrimSpace(rest)
	return rest == "" || strings.EqualFold(rest, "WORK")
}

// changesState tells whether a statement the Handler answers changes session state as
// session_track_state_change counts it.
func changesState(q string) bool {
	for _, prefix := range [][]string{
		{"PREPARE"},
		{"DEALLOCATE", "PREPARE"},
		{"DROP", "PREPARE"},
		{"CREATE", "TEMPORARY"},
		{"DROP", "TEMPORARY"},
	} {
		rest, ok := q, true
		for _, kw := range prefix {
			if rest, ok = cutKeyword(rest, kw); !ok {
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// parseSet recognises what follows SET.
func parseSet(s string) ([]assignment, bool) {
	if rest, ok := cutKeyword(s, "NAMES"); ok {
		return parseNames(rest)
	}
	scope, rest := "", s
	for _, kw := range []string{"SESSION", "LOCAL", "GLOBAL"} {
		if r, ok := cutKeyword(s, kw); ok {
			scope, rest = kw, r
			break
		}
	}
	if r, ok := cutKeyword(rest, "TRANSACTION"); ok {
		switch scope {
		case "":
			return nil, true // the next transaction only: nothing to keep
		case "GLOBAL":
			return nil, false
		}
		return parseTransaction(r)
	}
	var sets []assignment
	for _, item := range splitTop(s, ',') {
		a, ok := parseAssignment(item)
		if !ok {
			return nil, false
		}
		sets = append(sets, a)
	}
	return sets, len(sets) > 0
}

// parseNames recognises what follows SET NAMES: a character set and an optional collation.
func parseNames(s string) ([]assignment, bool) {
	f := strings.Fields(s)
	if len(f) != 1 && (len(f) != 3 || !strings.EqualFold(f[1], "COLLATE")) {
		return nil, false
	}
	cs := unquote(f[0])
	sets := []assignment{
		{name: "character_set_client", value: cs},
		{name: "character_set_connection", value: cs},
		{name: "character_set_results", value: cs},
	}
	if len(f) == 3 {
		sets = append(sets, assignment{name: "collation_connection", value: unquote(f[2])})
	}
	return sets, true
}

// parseTransaction recognises the characteristics of SET SESSION TRANSACTION.
func parseTransaction(s string) ([]assignment, bool) {
	var sets []assignment
	for _, c := range splitTop(s, ',') {
		f := strings.Fields(strings.ToUpper(c))
		switch {
		case len(f) >= 3 && f[0] == "ISOLATION" && f[1] == "LEVEL":
			level := strings.Join(f[2:], "-")
			switch level {
			case "READ-UNCOMMITTED", "READ-COMMITTED", "REPEATABLE-READ", "SERIALIZABLE":
			default:
				return nil, false
			}
			sets = append(sets, assignment{name: "tx_isolation", value: level})
		case len(f) == 2 && f[0] == "READ" && f[1] == "ONLY":
			sets = append(sets, assignment{name: "tx_read_only", value: "ON"})
		case len(f) == 2 && f[0] == "READ" && f[1] == "WRITE":
			sets = append(sets, assignment{name: "tx_read_only", value: "OFF"})
		default:
			return nil, false
		}
	}
	return sets, len(sets) > 0
}

// parseAssignment recognises one "target = value" of a SET.
func parseAssignment(item string) (assignment, bool) {
	eq := indexTop(item, '=')
	if eq < 0 {
		return assignment{}, false
	}
	target, value := item[:eq], strings.TrimSpace(item[eq+1:])
	target = strings.TrimSuffix(target, ":")
	target = strings.TrimSpace(target)
	if value == "" {
		return assignment{}, false
	}
	var a assignment
	switch {
	case strings.HasPrefix(target, "@@"):
		target = target[2:]
		if scope, rest, ok := strings.Cut(target, "."); ok {
			if !strings.EqualFold(scope, "session") && !strings.EqualFold(scope, "local") {
				return assignment{}, false
			}
			target = rest
		}
	case strings.HasPrefix(target, "@"):
		a.user = true
		target = target[1:]
	default:
		if _, ok := cutKeyword(target, "GLOBAL"); ok {
			return assignment{}, false
		}
		for _, kw := range []string{"SESSION", "LOCAL"} {
			if rest, ok := cutKeyword(target, kw); ok {
				target = rest
				break
			}
		}
	}
	name, ok := varName(target)
	if !ok {
		return assignment{}, false
	}
	a.name = strings.ToLower(name)
	a.value = unquote(value)
	if !a.user && a.name == "autocommit" {
		switch strings.ToUpper(a.value) {
		case "1", "ON", "TRUE":
			a.value = "ON"
		case "0", "OFF", "FALSE":
			a.value = "OFF"
		}
	}
	return a, true
}

// parseSelect recognises a select list of variables and session functions, without FROM.
func parseSelect(s string) ([]selectItem, bool) {
	var items []selectItem
	for _, expr := range splitTop(s, ',') {
		expr = strings.TrimSpace(expr)
		column := expr
		if i := lastKeyword(expr, "AS"); i > 0 {
			column = unquoteIdent(strings.TrimSpace(expr[i+2:]))
			expr = strings.TrimSpace(expr[:i])
		}
		it := selectItem{column: column}
		upper := strings.ToUpper(strings.Join(strings.Fields(expr), ""))
		switch {
		case strings.HasPrefix(expr, "@@"):
			name := expr[2:]
			if scope, rest, ok := strings.Cut(name, "."); ok {
				if !strings.EqualFold(scope, "session") && !strings.EqualFold(scope, "local") {
					return nil, false
				}
				name = rest
			}
			it.kind, it.variable = itemSysVar, name
		case strings.HasPrefix(expr, "@"):
			it.kind, it.variable = itemUserVar, expr[1:]
		case upper == "CONNECTION_ID()":
			it.kind = itemConnectionID
		case upper == "DATABASE()" || upper == "SCHEMA()":
			it.kind = itemDatabase
		default:
			return nil, false
		}
		if it.kind == itemSysVar || it.kind == itemUserVar {
			name, ok := varName(it.variable)
			if !ok {
				return nil, false
			}
			it.variable = strings.ToLower(name)
		}
		items = append(items, it)
	}
	return items, len(items) > 0
}

// parseKill recognises what follows KILL: [HARD|SOFT] [CONNECTION|QUERY] thread_id.
func parseKill(s string) statement {
	for _, kw := range []string{"HARD", "SOFT"} {
		if rest, ok := cutKeyword(s, kw); ok {
			s = rest
			break
		}
	}
	st := statement{kind: kindKill}
	if rest, ok := cutKeyword(s, "QUERY"); ok {
		st.killQuery, s = true, rest
	} else if rest, ok := cutKeyword(s, "CONNECTION"); ok {
		s = rest
	}
	id, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
	if err != nil {
		return statement{}
	}
	st.killID = uint32(id)
	return st
}

// trimStatement removes surrounding space and final semicolons.
func trimStatement(q string) string {
	for {
		t := strings.TrimRight(strings.TrimSpace(q), ";")
		if t == q {
			return t
		}
		q = t
	}
}

// splitStatements splits a multi-statement query at its top-level semicolons, dropping
// empty statements. An empty query gives one empty statement.
func splitStatements(q string) []string {
	var out []string
	for _, s := range splitTop(q, ';') {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return []string{""}
	}
	return out
}

// countParams counts the '?' placeholders outside quotes and comments.
func countParams(q string) int {
	n := 0
	for i := 0; i < len(q); {
		if j := skip(q, i); j != i {
			i = j
			continue
		}
		if q[i] == '?' {
			n++
		}
		i++
	}
	return n
}

// returnsRows tells whether a statement the Handler answers is one that returns rows.
func returnsRows(q string) bool {
	for _, kw := range []string{"SELECT", "WITH", "SHOW", "VALUES"} {
		if _, ok := cutKeyword(q, kw); ok {
			return true
		}
	}
	return false
}

// cutKeyword removes the keyword kw (case-insensitive, as a whole word) and the space
// after it from the start of s.
func cutKeyword(s, kw string) (string, bool) {
	s = strings.TrimLeft(s, " \t\r\n")
	if len(s) < len(kw) || !strings.EqualFold(s[:len(kw)], kw) {
		return "", false
	}
	if len(s) > len(kw) && isIdentByte(s[len(kw)]) {
		return "", false
	}
	return strings.TrimLeft(s[len(kw):], " \t\r\n"), true
}

// lastKeyword returns the index of the last top-level whole-word kw in s, or -1.
func lastKeyword(s, kw string) int {
	at := -1
	for i := 0; i < len(s); {
		if j := skip(s, i); j != i {
			i = j
			continue
		}
		if (i == 0 || !isIdentByte(s[i-1])) && len(s)-i > len(kw) &&
			strings.EqualFold(s[i:i+len(kw)], kw) && !isIdentByte(s[i+len(kw)]) {
			at = i
		}
		i++
	}
	return at
}

// splitTop splits s at each sep outside quotes, comments and parentheses.
func splitTop(s string, sep byte) []string {
	var out []string
	start, depth := 0, 0
	for i := 0; i < len(s); {
		if j := skip(s, i); j != i {
			i = j
			continue
		}
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case sep:
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
		i++
	}
	return append(out, s[start:])
}

// indexTop returns the index of the first c outside quotes and comments, or -1.
func indexTop(s string, c byte) int {
	for i := 0; i < len(s); {
		if j := skip(s, i); j != i {
			i = j
			continue
		}
		if s[i] == c {
			return i
		}
		i++
	}
	return -1
}

// skip returns the index just past the quoted string, quoted identifier or comment that
// starts at s[i], or i when none starts there. An unterminated one runs to the end.
func skip(s string, i int) int {
	rest := s[i:]
	switch q := s[i]; {
	case q == '\'' || q == '"' || q == '`':
		for j := i + 1; j < len(s); j++ {
			switch s[j] {
			case '\\':
				if q != '`' {
					j++
				}
			case q:
				if j+1 < len(s) && s[j+1] == q {
					j++ // a doubled quote
					continue
				}
				return j + 1
			}
		}
		return len(s)
	case q == '#' || strings.HasPrefix(rest, "-- ") || rest == "--" || strings.HasPrefix(rest, "--\n"):
		if k := strings.IndexByte(rest, '\n'); k >= 0 {
			return i + k + 1
		}
		return len(s)
	case strings.HasPrefix(rest, "/*"):
		if k := strings.Index(rest[2:], "*/"); k >= 0 {
			return i + 2 + k + 2
		}
		return len(s)
	}
	return i
}

// unquote returns the value of a quoted string literal, ON and OFF upper-case, and
// anything else as written.
func unquote(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && skip(v, 0) == len(v) && v[len(v)-1] == v[0] {
		q, body := v[0], v[1:len(v)-1]
		var b strings.Builder
		for i := 0; i < len(body); i++ {
			c := body[i]
			switch {
			case c == '\\' && i+1 < len(body):
				i++
				c = unescape(body[i])
			case c == q && i+1 < len(body) && body[i+1] == q:
				i++
			}
			b.WriteByte(c)
		}
		return b.String()
	}
	switch u := strings.ToUpper(v); u {
	case "ON", "OFF", "DEFAULT":
		return u
	}
	return v
}

// unescape decodes the character after a backslash in a string literal.
func unescape(c byte) byte {
	switch c {
	case '0':
		return 0
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'Z':
		return 26
	}
	return c
}

// unquoteIdent returns an identifier without its backquotes (or the quotes MySQL accepts
// around a user variable's name).
func unquoteIdent(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '`' && s[len(s)-1] == '`' {
		return strings.ReplaceAll(s[1:len(s)-1], "``", "`")
	}
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') {
		return unquote(s)
	}
	return s
}

// varName returns the name of a variable as written after @ or @@: a quoted name, or a
// bare one of identifier bytes.
func varName(s string) (string, bool) {
	name := unquoteIdent(s)
	if name != strings.TrimSpace(s) {
		return name, name != ""
	}
	return name, isIdent(name)
}

// isIdent tells whether s is a non-empty name of identifier bytes.
func isIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) {
			return false
		}
	}
	return s != ""
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' ||
		c >= 'A' && c <= 'Z' || c >= 0x80
}
