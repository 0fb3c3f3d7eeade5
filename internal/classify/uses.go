package classify

import (
	"bytes"
	"math"
	"strconv"
	"strings"
)

// Uses says what a statement does with state that lives in its connection, beyond what the
// server's session tracking reports; a proxy that shares connections between clients keeps a
// client on its connection (or carries the state over) by it.
type Uses uint32

const (
	// UsesUserVariable: assigns a user variable: SET @v = ..., @v := ..., SELECT or FETCH
	// ... INTO @v. A user variable passed to CALL (an OUT parameter may assign it) or named
	// in LOAD DATA (its column list assigns them) counts too; reading @v alone does not.
	UsesUserVariable Uses = 1 << iota
	// UsesGetLock: GET_LOCK(...).
	UsesGetLock
	// UsesReleaseLock: RELEASE_LOCK(...).
	UsesReleaseLock
	// UsesReleaseAllLocks: RELEASE_ALL_LOCKS().
	UsesReleaseAllLocks
	// UsesLockTables: LOCK TABLE(S) ..., MariaDB's ... WAIT n included; not LOCK IN SHARE
	// MODE.
	UsesLockTables
	// UsesUnlockTables: UNLOCK TABLE(S).
	UsesUnlockTables
	// UsesTemporaryTable: CREATE [OR REPLACE] TEMPORARY TABLE, and MariaDB's CREATE
	// TEMPORARY SEQUENCE.
	UsesTemporaryTable
	// UsesDropTemporaryTable: DROP TEMPORARY TABLE (or SEQUENCE).
	UsesDropTemporaryTable
	// UsesPrepare: the text PREPARE name FROM ....
	UsesPrepare
	// UsesDeallocate: DEALLOCATE PREPARE or DROP PREPARE.
	UsesDeallocate
	// UsesFoundRows: SQL_CALC_FOUND_ROWS anywhere in the statement.
	UsesFoundRows
	// UsesLastInsertID: reads LAST_INSERT_ID(), without an argument.
	UsesLastInsertID
	// UsesSetLastInsertID: LAST_INSERT_ID(expr), which sets it.
	UsesSetLastInsertID
	// UsesNextTransaction: SET TRANSACTION ... without SESSION or GLOBAL, which sets the
	// characteristics of the next transaction only; so does MySQL's SET
	// @@transaction_isolation (or tx_isolation, transaction_read_only, tx_read_only)
	// without a scope.
	UsesNextTransaction
	// UsesSessionTracking: SET of a variable whose name starts with session_track_, in any
	// scope and letter case: what the server's session tracking reports changes with it.
	UsesSessionTracking
	// UsesHandler: HANDLER t OPEN, READ or CLOSE.
	UsesHandler
	// UsesXAStart: XA START or XA BEGIN.
	UsesXAStart
	// UsesXAEnd: XA COMMIT or XA ROLLBACK.
	UsesXAEnd
	// UsesConnectionID: CONNECTION_ID().
	UsesConnectionID
	// UsesKill: KILL ...; Result.KillID and Result.KillQuery tell more.
	UsesKill

	numUses = iota
)

var usesNames = [numUses]string{"user_variable", "get_lock", "release_lock", "release_all_locks",
	"lock_tables", "unlock_tables", "temporary_table", "drop_temporary_table", "prepare",
	"deallocate", "found_rows", "last_insert_id", "set_last_insert_id", "next_transaction",
	"session_tracking", "handler", "xa_start", "xa_end", "connection_id", "kill"}

// String names the bits set, separated by commas, or says "none".
func (u Uses) String() string {
	if u == 0 {
		return "none"
	}
	var sb strings.Builder
	for i, name := range usesNames {
		if u&(1<<i) == 0 {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(name)
	}
	if rest := u &^ (1<<numUses - 1); rest != 0 {
		if sb.Len() > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString("0x" + strconv.FormatUint(uint64(rest), 16))
	}
	return sb.String()
}

// spells tells whether t is the word upper, in any letter case; for words the keyword list
// does not hold, which the digest must keep as written.
func (c *Classifier) spells(t token, upper string) bool {
	return t.kind == tWord && t.end-t.start == len(upper) && hasPrefixFold(c.lex.src[t.start:t.end], upper)
}

// hasPrefixFold tells whether b starts with upper in any ASCII letter case.
func hasPrefixFold(b []byte, upper string) bool {
	if len(b) < len(upper) {
		return false
	}
	for i := range len(upper) {
		c := b[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}

// isOp tells whether t is the operator op.
func (c *Classifier) isOp(t token, op string) bool {
	return t.kind == tOp && string(c.lex.src[t.start:t.end]) == op
}

// isAssign tells whether t is = or :=.
func (c *Classifier) isAssign(t token) bool {
	return c.isOp(t, "=") || c.isOp(t, ":=")
}

// assignments starts a SET list of variable assignments at the current level: SET itself
// or, in a compound statement, a SET within it.
func (c *Classifier) assignments() {
	c.setList, c.setDepth = true, c.depth
	c.assignment()
}

// assignment looks at the target of one assignment of a SET list, which the next tokens
// are: [scope] name = or := expression, or TRANSACTION characteristics.
func (c *Classifier) assignment() {
	i, scoped := 0, false
	if t := c.peek(0); c.isScope(t) && !c.isAssign(c.peek(1)) {
		i, scoped = 1, true
	}
	t := c.peek(i)
	src := c.lex.src
	switch t.kind {
	case tUserVar:
		if c.isAssign(c.peek(i + 1)) {
			c.res.Uses |= UsesUserVariable
		}
	case tSysVar:
		name := src[t.start+2 : t.end] // after @@
		if dot := bytes.LastIndexByte(name, '.'); dot >= 0 {
			name = name[dot+1:]
		} else if !scoped && nextTransactionVariable(name) {
			c.res.Uses |= UsesNextTransaction
		}
		if hasPrefixFold(name, "SESSION_TRACK_") {
			c.res.Uses |= UsesSessionTracking
		}
	case tWord, tQuoted:
		if c.is(t, kwTransaction) {
			if !scoped {
				c.res.Uses |= UsesNextTransaction
			}
			return
		}
		name := src[t.start:t.end]
		if t.kind == tQuoted {
			name = unquote(name)
		}
		if hasPrefixFold(name, "SESSION_TRACK_") && c.isAssign(c.peek(i+1)) {
			c.res.Uses |= UsesSessionTracking
		}
	}
}

// isScope tells whether t is the scope of a system variable in SET: GLOBAL, SESSION, LOCAL,
// or MySQL's PERSIST and PERSIST_ONLY.
func (c *Classifier) isScope(t token) bool {
	if t.kind != tWord {
		return false
	}
	if t.kw != kwNone {
		switch keywordList[t.key].upper {
		case "GLOBAL", "SESSION", "LOCAL":
			return true
		}
		return false
	}
	return c.spells(t, "PERSIST") || c.spells(t, "PERSIST_ONLY")
}

// nextTransactionVariable tells whether name is a variable that MySQL gives a
// next-transaction scope, which SET @@name without a scope sets.
func nextTransactionVariable(name []byte) bool {
	for _, v := range [...]string{"TRANSACTION_ISOLATION", "TX_ISOLATION", "TRANSACTION_READ_ONLY", "TX_READ_ONLY"} {
		if len(name) == len(v) && hasPrefixFold(name, v) {
			return true
		}
	}
	return false
}

// kill reads KILL [HARD | SOFT] [CONNECTION | QUERY] id after KILL. Other forms (KILL QUERY
// ID query_id, KILL USER name, an id that is an expression) leave Result.KillID 0.
func (c *Classifier) kill() {
	c.res.Uses |= UsesKill
	if p := c.peek(0); c.spells(p, "HARD") || c.spells(p, "SOFT") {
		c.next()
	}
	query := false
	if p := c.peek(0); c.spells(p, "CONNECTION") {
		c.next()
	} else if c.spells(p, "QUERY") {
		c.next()
		query = true
	}
	id, end := c.peek(0), c.peek(1)
	if id.kind != tNumber || end.kind != tEnd && end.kind != tSemi {
		return
	}
	if n, ok := decimal(c.lex.src[id.start:id.end]); ok {
		c.res.KillID, c.res.KillQuery = n, query
	}
}

// decimal reads an unsigned decimal integer that is all of b.
func decimal(b []byte) (uint64, bool) {
	var n uint64
	for _, d := range b {
		if !isDigit(d) {
			return 0, false
		}
		v := uint64(d - '0')
		if n > (math.MaxUint64-v)/10 {
			return 0, false
		}
		n = n*10 + v
	}
	return n, len(b) > 0
}

// connectionIDOnly tells whether the text is SELECT CONNECTION_ID() [[AS] alias] [;] and
// nothing else, and returns the name the server gives its one column: the alias without
// quotes, or the expression as written.
func (c *Classifier) connectionIDOnly() (name []byte, ok bool) {
	l := lexer{src: c.lex.src}
	var toks [8]token
	n := 0
	for ; n < len(toks); n++ {
		if l.next(&toks[n]); toks[n].kind == tEnd {
			break
		}
	}
	if n == len(toks) || l.broken {
		return nil, false
	}
	if n > 0 && toks[n-1].kind == tSemi {
		n--
	}
	ts := toks[:n]
	if len(ts) < 4 || !c.is(ts[0], kwSelect) || !c.is(ts[1], kwConnectionID) || ts[2].kind != tLParen || ts[3].kind != tRParen {
		return nil, false
	}
	src := c.lex.src
	alias := ts[4:]
	if len(alias) > 0 && c.is(alias[0], kwAs) {
		alias = alias[1:]
		if len(alias) == 0 {
			return nil, false
		}
	}
	switch {
	case len(alias) == 0:
		return src[ts[1].start:ts[3].end], true
	case len(alias) > 1:
		return nil, false
	}
	t := alias[0]
	switch {
	case t.kind == tWord && c.isName(t):
		return src[t.start:t.end], true
	case t.kind == tQuoted:
		return c.unescape(unquote(src[t.start:t.end]), '`')
	case t.kind == tString && (src[t.start] == '\'' || src[t.start] == '"'):
		s := src[t.start+1 : t.end-1]
		if bytes.IndexByte(s, '\\') >= 0 {
			return nil, false // what a backslash means depends on the sql_mode: the server knows
		}
		return c.unescape(s, src[t.start])
	}
	return nil, false
}
