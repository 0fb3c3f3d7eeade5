package classify

import (
	"bytes"
	"strconv"
	"strings"
)

// Kind is what a statement does, as far as admission and routing care.
type Kind uint8

const (
	// Other is a statement that reads no table data and changes no state the others
	// track: SHOW, EXPLAIN, DO, HELP, KILL, FLUSH and the like, or an empty text.
	Other Kind = iota
	// Read only reads tables: SELECT, TABLE, VALUES.
	Read
	// Write changes table data, or may: INSERT, UPDATE, DELETE, REPLACE, LOAD DATA, CALL,
	// SELECT … INTO, sequence functions, and everything the classifier is unsure of.
	Write
	// LockingRead reads with row locks: FOR UPDATE, FOR SHARE, LOCK IN SHARE MODE.
	LockingRead
	// Transaction is transaction control: BEGIN, START TRANSACTION, COMMIT, ROLLBACK,
	// SAVEPOINT, XA.
	Transaction
	// Session changes or reads state that lives in the connection: SET, USE, PREPARE,
	// EXECUTE, LOCK/UNLOCK TABLES, temporary tables, user variables, GET_LOCK and friends,
	// LAST_INSERT_ID().
	Session
	// DDL changes the schema or privileges: CREATE, ALTER, DROP, RENAME, TRUNCATE, GRANT.
	DDL
	// NumKinds is the number of kinds.
	NumKinds
)

var kindNames = [NumKinds]string{"other", "read", "write", "locking_read", "transaction", "session", "ddl"}

func (k Kind) String() string {
	if k < NumKinds {
		return kindNames[k]
	}
	return "unknown"
}

// Table names a table as the statement wrote it, without quotes. Schema is empty when the
// statement did not qualify the name.
type Table struct {
	Schema, Name []byte
}

func (t Table) String() string {
	if len(t.Schema) == 0 {
		return string(t.Name)
	}
	return string(t.Schema) + "." + string(t.Name)
}

// Result is what the classifier found in one statement. It and the slices in it are valid
// until the next Classify on the same Classifier, and only while the statement text is not
// changed: names and the tag may point into it.
type Result struct {
	// Digest is the normalized text: literals as ?, IN lists and VALUES rows collapsed to
	// (...), keywords in upper case, one space between tokens, comments dropped.
	Digest []byte
	// Hash is Hash(Digest).
	Hash uint64
	Kind Kind
	// Unsure tells that the classifier could not tell what the statement does; Kind is
	// then Write (unless the statement was DDL or session state) and UnknownTables is set.
	Unsure bool
	// UnknownTables tells that the statement may touch tables not listed in Read and
	// Written: CALL, EXECUTE, DDL on other objects, or more tables than are tracked.
	UnknownTables bool
	Read          []Table
	Written       []Table
	// Tag is NAME from the first /* gk:type=NAME */ comment, or nil.
	Tag []byte
	// Consistency and SessionKey are the values of the first /* gk:consistency=MODE */
	// and /* gk:session=KEY */ comments, or nil: how fresh a read routed to a replica must
	// be, and whose writes it must see.
	Consistency, SessionKey []byte
	// TxnStart and TxnEnd tell that the statement starts or ends a transaction explicitly
	// (COMMIT AND CHAIN does both).
	TxnStart, TxnEnd bool
	// TxnReadOnly and TxnReadWrite tell that START TRANSACTION named its access mode: READ
	// ONLY or READ WRITE.
	TxnReadOnly, TxnReadWrite bool
	// SideEffects tells of a function with effects beyond its result: GET_LOCK,
	// RELEASE_LOCK, LAST_INSERT_ID(expr), NEXTVAL, SETVAL, or SELECT … INTO.
	SideEffects bool
	// MultiStatement tells that the text holds more than one statement; such a text is
	// always Unsure.
	MultiStatement bool
	// CallsFunction tells that the text calls a function the classifier does not know (a
	// stored function, or a built-in one it has no name for), whose reads and writes it
	// cannot see, or that the digest was cut before its end. A function named with its
	// schema (shop.price_of(id), db.now()) is a stored one.
	CallsFunction bool
	// Volatile tells that the result may differ between two runs over the same data and the
	// same session variables: it reads the clock, a random or unique value, the connection or
	// the user, a user or system variable, a sequence, or it waits or locks. So do: NOW() and
	// the other clock functions (CURRENT_TIMESTAMP and the reserved ones also without
	// parentheses), RAND(), UUID(), CONNECTION_ID(), CURRENT_USER, LAST_INSERT_ID(),
	// ROW_COUNT(), FOUND_ROWS(), SLEEP(), the named-lock and sequence functions, NEXT and
	// PREVIOUS VALUE FOR, every function CallsFunction counts (a stored function may read
	// anything), any @var or @@var, SELECT ... INTO, locking reads, LOCK TABLES, HANDLER,
	// KILL, SHOW, and what ANALYZE or EXPLAIN ANALYZE runs (its output holds timings). Names
	// in strings, comments or backquotes, after a dot (t.now), or not reserved and without
	// "(" (a column named now) do not count; EXPLAIN and CREATE VIEW count what they name.
	// DATABASE() and system schemas do not count: a cache keys on the one and refuses the
	// other itself, as it must refuse SideEffects and Uses.
	Volatile bool
	// Uses is what the statements of the text do with state that lives in the connection,
	// beyond what session tracking reports. A statement that does not run what it names
	// (EXPLAIN without ANALYZE, CREATE VIEW, CREATE PROCEDURE and the like) uses nothing.
	Uses Uses
	// KillID and KillQuery describe a text that is one statement KILL [HARD | SOFT]
	// [CONNECTION | QUERY] id, id a decimal integer literal: the thread id, and whether
	// only its running statement is meant. KillID is 0 for every other text, KILL QUERY ID
	// query_id, KILL USER name and KILL of an expression included (Uses has UsesKill for
	// them all).
	KillID    uint64
	KillQuery bool
	// ConnectionIDOnly tells that the text is SELECT CONNECTION_ID() with an optional alias
	// and nothing else (comments, letter case and a trailing ; aside), which a proxy can
	// answer itself. ConnectionIDName is then the name the server gives the column: the
	// alias without its quotes, or the expression as written (CONNECTION_ID( ) keeps its
	// space and its letter case).
	ConnectionIDOnly bool
	ConnectionIDName []byte
}

const (
	// MaxDigest bounds the digest; longer digests are cut, and their hash is of the cut text.
	MaxDigest = 4096
	// maxTables bounds each of Read and Written; past it UnknownTables is set.
	maxTables = 32
	maxDepth  = 64
	maxCTEs   = 16
	lookahead = 4
)

type tableMode uint8

const (
	modeNone tableMode = iota
	modeRead
	modeWrite
)

// frame is one level of parentheses.
type frame struct {
	// fn tells that the parentheses hold a function's arguments (or a column list).
	fn bool
	// from is set while a FROM list (or the table list of UPDATE, DELETE, DROP, RENAME)
	// runs at this level: a comma or JOIN starts another table reference.
	from tableMode
	// For the digest: where "(" is (-1 when the digest was full), whether only literals
	// were inside, how many, and whether such a list collapses (IN lists, VALUES rows).
	open     int
	lits     bool
	items    int
	collapse bool
	row      bool
}

// emitted describes the last tokens written to the digest.
type emitted struct {
	kind tokKind
	// value: an operand (identifier, literal, variable, closing parenthesis).
	value bool
	// fnWord: a word a "(" may follow directly; ident: a name that is not a keyword (a
	// "(" after it calls a stored function).
	fnWord, ident bool
	// sign: a - or + that may be the sign of a number.
	sign bool
	// from is where the token's leading space starts; pos is where the token starts.
	from, pos int
}

// Classifier classifies statements. It keeps its buffers between calls, so reuse one per
// connection; it is not safe for concurrent use.
type Classifier struct {
	lex    lexer
	res    Result
	digest []byte
	full   bool

	// ahead holds the tokens peeked at: nAhead of them from index first, in a ring.
	ahead  [lookahead]token
	first  int
	nAhead int
	prev   token

	depth  int
	frames [maxDepth]frame

	last, last2 emitted
	// Collapsing of identical VALUES rows.
	afterRow, afterRowComma    bool
	rowComma                   int
	rowFirstStart, rowFirstEnd int

	// Per statement.
	verb       kwID
	kind       Kind
	unsure     bool
	statements int
	// unrecognized tells that the classifier does not know the statement (a compound
	// statement among others); inert, that the statement does not run what it names, so
	// that it uses no connection state.
	unrecognized, inert bool
	// setList tells that a list of variable assignments runs at level setDepth: each comma
	// there starts another.
	setList  bool
	setDepth int

	read, written [maxTables]Table
	aliases       [maxTables][]byte
	nRead, nWrite int
	targets       [maxTables]Table
	nTargets      int
	ctes          [maxCTEs][]byte
	nCTEs         int
	// names holds table names that needed unescaping.
	names []byte
}

// New returns a classifier.
func New() *Classifier {
	return &Classifier{digest: make([]byte, 0, 256)}
}

// Classify reads one statement text (the payload of COM_QUERY or COM_STMT_PREPARE after
// the command byte) and returns what it found.
func (c *Classifier) Classify(sql []byte) *Result {
	c.reset(sql)
	for {
		c.statement()
		t := c.peek(0)
		if t.kind == tEnd {
			break
		}
		c.next() // ;
		if c.peek(0).kind == tEnd {
			break
		}
		c.res.MultiStatement = true
		c.unsure = true
	}
	c.finish()
	return &c.res
}

func (c *Classifier) reset(sql []byte) {
	c.lex.reset(sql)
	c.res = Result{}
	c.digest = c.digest[:0]
	c.full = false
	c.first, c.nAhead = 0, 0
	c.prev = token{}
	c.depth = 0
	c.frames[0] = frame{open: -1}
	c.last, c.last2 = emitted{}, emitted{}
	c.afterRow, c.afterRowComma = false, false
	c.rowFirstEnd = -1
	c.unsure = false
	c.statements = 0
	c.nRead, c.nWrite, c.nTargets, c.nCTEs = 0, 0, 0, 0
	c.names = c.names[:0]
}

func (c *Classifier) finish() {
	r := &c.res
	if c.lex.broken || c.depth != 0 {
		c.unsure = true
	}
	if r.MultiStatement {
		r.KillID, r.KillQuery = 0, false
	} else if r.Uses&UsesConnectionID != 0 {
		if name, ok := c.connectionIDOnly(); ok {
			r.ConnectionIDOnly, r.ConnectionIDName = true, name
		}
	}
	if r.CallsFunction {
		r.Volatile = true // a stored function may read anything
	}
	if c.unsure {
		r.Unsure = true
		r.UnknownTables = true
		if r.Kind != DDL && r.Kind != Session {
			r.Kind = Write
		}
	}
	r.Digest = c.digest
	r.Hash = Hash(c.digest)
	r.Tag = c.lex.tag
	r.Consistency, r.SessionKey = c.lex.consistency, c.lex.session
	r.Read = c.read[:c.nRead]
	r.Written = c.written[:c.nWrite]
}

// Hash is the 64-bit FNV-1a hash of b: the same on every machine and in every release.
func Hash(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// --- token stream ---

func (c *Classifier) peek(i int) token {
	for c.nAhead <= i {
		c.lex.next(&c.ahead[(c.first+c.nAhead)%lookahead])
		c.nAhead++
	}
	return c.ahead[(c.first+i)%lookahead]
}

// next consumes a token: it goes into the digest and the parentheses are counted.
func (c *Classifier) next() token {
	var t token
	if c.nAhead > 0 {
		t = c.ahead[c.first]
		c.first = (c.first + 1) % lookahead
		c.nAhead--
	} else {
		c.lex.next(&t)
	}
	if t.kind != tEnd {
		c.consume(t)
		c.prev = t
	}
	return t
}

func (c *Classifier) frame() *frame {
	return &c.frames[min(c.depth, maxDepth-1)]
}

func (c *Classifier) is(t token, id kwID) bool { return t.kind == tWord && t.kw == id }

// isName tells whether t can be a table name or alias without qualification.
func (c *Classifier) isName(t token) bool {
	switch t.kind {
	case tQuoted:
		return true
	case tWord:
		return t.kw == kwNone || t.flags&reserved == 0
	}
	return false
}

// isQualifiedPart tells whether t can follow a dot in a qualified name (any word does).
func isQualifiedPart(t token) bool { return t.kind == tWord || t.kind == tQuoted }

func (c *Classifier) consume(t token) {
	afterRow, afterRowComma := c.afterRow, c.afterRowComma
	c.afterRow, c.afterRowComma = false, false
	if c.depth > 0 {
		f := c.frame()
		switch t.kind {
		case tString, tNumber, tParam:
			f.items++
		case tComma, tRParen:
		case tOp:
			if !c.isSign(t) {
				f.lits = false
			}
		default:
			f.lits = false
		}
	}
	switch t.kind {
	case tLParen:
		p := c.prev
		fn := p.kind == tQuoted || p.kind == tWord && (p.kw == kwNone || p.flags&(function|reserved) != reserved)
		values := c.is(p, kwValues) || c.is(p, kwValue)
		row := values || afterRowComma
		collapse := row || c.is(p, kwIn)
		if p.flags&volatile != 0 && c.last.fnWord {
			// A call: tableRef takes fnWord from a table name before its column list. A
			// digest that is full calls unknown functions, which are volatile anyway.
			c.res.Volatile = true
		}
		c.emit(t)
		c.depth++
		if c.depth >= maxDepth {
			c.unsure = true
			return
		}
		open := -1
		if !c.full {
			open = c.last.pos
		}
		c.frames[c.depth] = frame{fn: fn, open: open, lits: true, collapse: collapse, row: row}
		if values {
			c.rowFirstStart, c.rowFirstEnd = open, -1
		}
	case tRParen:
		if c.depth == 0 {
			c.unsure = true
			c.emit(t)
			return
		}
		f := *c.frame()
		if f.collapse && f.lits && f.items > 0 && f.open >= 0 && !c.full {
			c.digest = append(c.digest[:f.open+1], "..."...)
		}
		c.emit(t)
		c.depth--
		if f.row && f.open >= 0 && !c.full {
			if c.rowFirstEnd < 0 {
				c.rowFirstEnd = len(c.digest)
			} else if c.rowFirstStart >= 0 && bytes.Equal(c.digest[f.open:], c.digest[c.rowFirstStart:c.rowFirstEnd]) {
				c.digest = c.digest[:c.rowComma]
				c.last = emitted{kind: tRParen, value: true, from: c.rowFirstEnd - 1, pos: c.rowFirstEnd - 1}
			}
			c.afterRow = true
		}
	case tComma:
		if afterRow {
			c.rowComma = len(c.digest)
			c.afterRowComma = true
		}
		c.emit(t)
	case tWord:
		if t.flags&(volatile|reserved) == volatile|reserved && c.prev.kind != tDot {
			c.res.Volatile = true // CURRENT_TIMESTAMP and the like, with or without "("
		}
		c.emit(t)
	case tUserVar, tSysVar:
		c.res.Volatile = true
		c.emit(t)
	default:
		c.emit(t)
	}
}

func (c *Classifier) isSign(t token) bool {
	return t.kind == tOp && t.end-t.start == 1 && (c.lex.src[t.start] == '-' || c.lex.src[t.start] == '+')
}

// emit writes a token to the digest.
func (c *Classifier) emit(t token) {
	if c.full {
		return
	}
	if t.kind == tLParen && c.last.ident {
		c.res.CallsFunction = true
	}
	src := c.lex.src
	var text []byte
	var word string
	e := emitted{kind: t.kind}
	switch t.kind {
	case tString, tNumber, tParam:
		e.value = true
		word = "?"
		if c.last.sign && !c.last2.value {
			// -1 is one literal.
			c.digest = c.digest[:c.last.from]
			c.last = c.last2
		}
	case tWord:
		if t.kw != kwNone {
			word = keywordList[t.key].upper
			e.fnWord = t.flags&(function|reserved) != reserved
			e.value = t.flags&reserved == 0 || word == "NULL" || word == "TRUE" || word == "FALSE"
			e.ident = c.last.kind == tDot // after a dot every word is a name: db.now() is stored
		} else {
			text = src[t.start:t.end]
			e.fnWord, e.value, e.ident = true, true, true
		}
	case tQuoted:
		text = src[t.start:t.end]
		if inner := unquote(text); plainIdent(inner) {
			text = inner
		}
		e.fnWord, e.value, e.ident = true, true, true
	case tUserVar, tSysVar:
		text = src[t.start:t.end]
		e.value = true
	case tRParen:
		text = src[t.start:t.end]
		e.value = true
	default:
		text = src[t.start:t.end]
		e.sign = c.isSign(t)
	}
	space := len(c.digest) > 0
	switch {
	case c.last.kind == tLParen || c.last.kind == tDot:
		space = false
	case t.kind == tComma || t.kind == tRParen || t.kind == tDot || t.kind == tSemi:
		space = false
	case t.kind == tLParen && c.last.fnWord:
		space = false
	}
	n := len(text) + len(word)
	if space {
		n++
	}
	if len(c.digest)+n > MaxDigest {
		c.full = true
		c.res.CallsFunction = true // what the rest calls is not known
		return
	}
	e.from = len(c.digest)
	if space {
		c.digest = append(c.digest, ' ')
	}
	e.pos = len(c.digest)
	c.digest = append(c.digest, text...)
	c.digest = append(c.digest, word...)
	c.last2, c.last = c.last, e
}

// unquote strips the backquotes of a quoted identifier (an unterminated one has only the
// first).
func unquote(b []byte) []byte {
	b = b[1:]
	if len(b) > 0 && b[len(b)-1] == '`' {
		b = b[:len(b)-1]
	}
	return b
}

// plainIdent tells whether a quoted identifier can be written without its quotes.
func plainIdent(b []byte) bool {
	if len(b) == 0 || isDigit(b[0]) {
		return false
	}
	for _, c := range b {
		if !isIdentChar(c) || c >= 0x80 {
			return false
		}
	}
	return lookup(b) == 0
}

// --- statements ---

func (c *Classifier) statement() {
	if c.depth != 0 {
		c.unsure = true
		c.depth = 0
	}
	c.frames[0] = frame{open: -1}
	c.verb, c.kind = kwNone, Other
	c.nTargets, c.nCTEs = 0, 0
	c.unrecognized, c.inert, c.setList = false, false, false
	uses := c.res.Uses
	c.head()
	c.body(0)
	c.resolveTargets()
	if c.inert {
		c.res.Uses = uses
	}
	if c.statements == 0 {
		c.res.Kind = c.kind
	}
	c.statements++
}

// head reads the statement's leading keywords and sets its kind.
func (c *Classifier) head() {
	for c.peek(0).kind == tLParen {
		c.next()
	}
	t := c.peek(0)
	if t.kind == tEnd || t.kind == tSemi {
		return
	}
	if t.kind != tWord || t.kw == kwNone {
		c.unknown()
		return
	}
	c.next()
	c.verb = t.kw
	switch t.kw {
	case kwSelect, kwValues:
		c.kind = Read
	case kwTable:
		c.kind = Read
		c.tableRef(modeRead, false)
	case kwWith:
		c.with()
	case kwInsert, kwReplace:
		c.kind = Write
		for c.is(c.peek(0), kwLowPriority) || c.is(c.peek(0), kwDelayed) || c.is(c.peek(0), kwHighPriority) || c.is(c.peek(0), kwIgnore) {
			c.next()
		}
		if c.is(c.peek(0), kwInto) {
			c.next()
		}
		c.tableRef(modeWrite, false)
	case kwUpdate:
		c.kind = Write
		for c.is(c.peek(0), kwLowPriority) || c.is(c.peek(0), kwIgnore) {
			c.next()
		}
		c.frame().from = modeWrite
		c.tableRef(modeWrite, true)
	case kwDelete:
		c.kind = Write
		c.deleteHead()
	case kwLoad:
		if p := c.peek(0); c.is(p, kwData) || c.is(p, kwXML) {
			c.kind = Write
		}
	case kwCall:
		c.kind = Write
		c.res.UnknownTables = true
	case kwBegin:
		if c.is(c.peek(0), kwWork) {
			c.next()
		}
		if p := c.peek(0); p.kind != tEnd && p.kind != tSemi {
			// BEGIN NOT ATOMIC ... END: a compound statement.
			c.unknown()
			return
		}
		c.kind = Transaction
		c.res.TxnStart = true
	case kwStart:
		if c.is(c.peek(0), kwTransaction) {
			c.next()
			c.kind = Transaction
			c.res.TxnStart = true
			c.txnAccess()
		}
	case kwCommit:
		c.kind = Transaction
		c.res.TxnEnd = true
		c.chain()
	case kwRollback:
		c.kind = Transaction
		if c.is(c.peek(0), kwWork) {
			c.next()
		}
		if c.is(c.peek(0), kwTo) {
			return // to a savepoint
		}
		c.res.TxnEnd = true
		c.chain()
	case kwSavepoint, kwRelease:
		c.kind = Transaction
	case kwXA:
		c.kind = Transaction
		switch c.next().kw {
		case kwStart, kwBegin:
			c.res.TxnStart = true
			c.res.Uses |= UsesXAStart
		case kwCommit, kwRollback:
			c.res.TxnEnd = true
			c.res.Uses |= UsesXAEnd
		}
	case kwSet:
		if c.is(c.peek(0), kwStatement) {
			// SET STATEMENT var=value FOR statement: the statement is what counts.
			for p := c.peek(0); p.kind != tEnd && p.kind != tSemi; p = c.peek(0) {
				c.next()
				if c.depth == 0 && c.is(p, kwFor) {
					c.head()
					return
				}
			}
			c.unknown()
			return
		}
		c.kind = Session
		c.assignments()
	case kwUse:
		c.kind = Session
	case kwPrepare:
		c.kind = Session
		c.res.Uses |= UsesPrepare
	case kwDeallocate:
		c.kind = Session
		c.res.Uses |= UsesDeallocate
	case kwExecute:
		c.kind = Session
		c.res.UnknownTables = true
	case kwLock, kwUnlock:
		c.kind = Session
		if p := c.peek(0); c.is(p, kwTable) || c.is(p, kwTables) {
			if t.kw == kwLock {
				c.res.Uses |= UsesLockTables
				c.res.Volatile = true
			} else {
				c.res.Uses |= UsesUnlockTables
			}
		}
	case kwCreate:
		c.create()
	case kwAlter:
		c.kind = DDL
		for c.is(c.peek(0), kwOnline) || c.is(c.peek(0), kwIgnore) {
			c.next()
		}
		if p := c.peek(0); c.is(p, kwTable) || c.is(p, kwSequence) {
			c.next()
			c.ifExists()
			c.tableRef(modeWrite, false)
			return
		}
		c.res.UnknownTables = true
		c.inert = true // views and events hold statements they do not run now
	case kwDrop:
		c.drop()
	case kwRename:
		c.kind = DDL
		if p := c.peek(0); c.is(p, kwTable) || c.is(p, kwTables) {
			c.next()
			c.frame().from = modeWrite
			c.tableRef(modeWrite, false)
			return
		}
		c.res.UnknownTables = true
	case kwTruncate:
		c.kind = DDL
		if c.is(c.peek(0), kwTable) {
			c.next()
		}
		c.tableRef(modeWrite, false)
	case kwAnalyze, kwExplain, kwDescribe, kwDesc:
		// EXPLAIN ANALYZE and MariaDB's ANALYZE run the statement; EXPLAIN does not.
		if t.kw != kwAnalyze {
			if !c.is(c.peek(0), kwAnalyze) {
				c.inert = true
				return
			}
			c.next()
		}
		c.res.Volatile = true // the output holds timings
		if p := c.peek(0); c.is(p, kwTable) || c.is(p, kwTables) {
			return
		}
		if c.is(c.peek(0), kwFormat) {
			c.next()
			c.next() // =
			c.next() // JSON
		}
		c.head()
	case kwDo, kwHelp, kwAdmin:
	case kwShow:
		c.res.Volatile = true // status, processes, the warnings of the statement before
	case kwKill:
		c.res.Volatile = true
		c.kill()
	case kwHandler:
		c.res.Uses |= UsesHandler
		c.res.Volatile = true // reads from where the handler stands
	case kwGrant:
		c.kind = DDL
		c.res.UnknownTables = true
	default:
		c.unknown()
	}
}

// unknown marks a statement the classifier does not know.
func (c *Classifier) unknown() {
	c.unsure = true
	c.unrecognized = true
	c.kind = Write
}

// chain reads [WORK] [AND [NO] CHAIN] after COMMIT or ROLLBACK.
func (c *Classifier) chain() {
	if c.is(c.peek(0), kwWork) {
		c.next()
	}
	if !c.is(c.peek(0), kwAnd) {
		return
	}
	c.next()
	if c.is(c.peek(0), kwChain) {
		c.res.TxnStart = true
	}
}

func (c *Classifier) ifExists() {
	if c.is(c.peek(0), kwIf) {
		c.next()
		if c.is(c.peek(0), kwNot) {
			c.next()
		}
		if c.is(c.peek(0), kwExists) {
			c.next()
		}
	}
}

func (c *Classifier) create() {
	c.kind = DDL
	if c.is(c.peek(0), kwOr) && c.is(c.peek(1), kwReplace) {
		c.next()
		c.next()
	}
	temporary := c.is(c.peek(0), kwTemporary)
	if temporary {
		c.next()
	}
	p := c.peek(0)
	switch {
	case c.is(p, kwTable):
		if temporary {
			c.kind = Session
			c.res.Uses |= UsesTemporaryTable
		}
		c.next()
		c.ifExists()
		c.tableRef(modeWrite, false)
	case c.is(p, kwSequence):
		if temporary {
			c.res.Uses |= UsesTemporaryTable
		}
		c.next()
		c.ifExists()
		c.tableRef(modeWrite, false)
	case c.is(p, kwUnique) || c.is(p, kwFulltext) || c.is(p, kwSpatial) || c.is(p, kwIndex):
		if !c.is(p, kwIndex) {
			c.next()
		}
		if !c.is(c.peek(0), kwIndex) {
			c.res.UnknownTables = true
			return
		}
		c.next()
		c.indexOn()
	default:
		// Views, routines, triggers, events, databases, users: those that hold statements
		// do not run them now.
		c.res.UnknownTables = true
		c.inert = true
	}
}

// indexOn reads [IF [NOT] EXISTS] name ON table after CREATE INDEX or DROP INDEX.
func (c *Classifier) indexOn() {
	c.ifExists()
	c.next() // the index name
	if !c.is(c.peek(0), kwOn) {
		c.res.UnknownTables = true
		return
	}
	c.next()
	c.tableRef(modeWrite, false)
}

func (c *Classifier) drop() {
	c.kind = DDL
	temporary := c.is(c.peek(0), kwTemporary)
	if temporary {
		c.next()
	}
	p := c.peek(0)
	switch {
	case c.is(p, kwTable) || c.is(p, kwTables) || c.is(p, kwSequence):
		if temporary {
			c.kind = Session
			c.res.Uses |= UsesDropTemporaryTable
		}
		c.next()
		c.ifExists()
		c.frame().from = modeWrite
		c.tableRef(modeWrite, false)
	case c.is(p, kwIndex):
		c.next()
		c.indexOn()
	case c.is(p, kwPrepare):
		c.res.Uses |= UsesDeallocate
		c.res.UnknownTables = true
	default:
		c.res.UnknownTables = true
	}
}

// deleteHead reads DELETE up to its table references.
func (c *Classifier) deleteHead() {
	for c.is(c.peek(0), kwLowPriority) || c.is(c.peek(0), kwQuick) || c.is(c.peek(0), kwIgnore) || c.is(c.peek(0), kwHistory) {
		c.next()
	}
	if c.is(c.peek(0), kwFrom) {
		// DELETE FROM t ... or DELETE FROM t1, t2 USING ...
		c.next()
		c.frame().from = modeWrite
		c.tableRef(modeWrite, true)
		return
	}
	// DELETE t1, t2 FROM ...: the targets may be aliases, resolved at the end.
	for {
		p := c.peek(0)
		if !c.isName(p) {
			return
		}
		tbl := c.tableName()
		if c.peek(0).kind == tDot && c.peek(1).kind == tOp {
			c.next()
			c.next() // .*
		}
		if c.nTargets < maxTables {
			c.targets[c.nTargets] = tbl
			c.nTargets++
		} else {
			c.res.UnknownTables = true
		}
		if c.peek(0).kind != tComma {
			return
		}
		c.next()
	}
}

// resolveTargets adds the targets of a multi-table DELETE to the written tables, an alias
// standing for its table.
func (c *Classifier) resolveTargets() {
	for _, tg := range c.targets[:c.nTargets] {
		resolved := tg
		if len(tg.Schema) == 0 {
			for i := range c.nRead {
				if bytes.Equal(c.aliases[i], tg.Name) {
					resolved = c.read[i]
					break
				}
			}
		}
		c.addTable(modeWrite, resolved)
	}
	c.nTargets = 0
}

// with reads the common table expressions of WITH, then the statement they serve.
func (c *Classifier) with() {
	if c.is(c.peek(0), kwRecursive) {
		c.next()
	}
	for {
		p := c.peek(0)
		if !isQualifiedPart(p) {
			c.unknown()
			return
		}
		c.next()
		if c.nCTEs < maxCTEs {
			c.ctes[c.nCTEs] = c.name(p)
			c.nCTEs++
		}
		if c.peek(0).kind == tLParen { // a column list, not a call
			c.last.ident = false
			volatile := c.res.Volatile
			c.next()
			c.res.Volatile = volatile
			c.body(c.depth)
		}
		if !c.is(c.peek(0), kwAs) {
			c.unknown()
			return
		}
		c.next()
		if c.peek(0).kind != tLParen {
			c.unknown()
			return
		}
		c.next()
		c.body(c.depth)
		if c.peek(0).kind != tComma {
			break
		}
		c.next()
	}
	if c.is(c.peek(0), kwWith) {
		c.unknown()
		return
	}
	c.head()
}

// body reads the rest of the statement, or up to the parenthesis that closes level stop.
func (c *Classifier) body(stop int) {
	for {
		t := c.peek(0)
		if t.kind == tEnd || t.kind == tSemi {
			return
		}
		c.next()
		switch t.kind {
		case tRParen:
			if c.depth < stop {
				return
			}
		case tComma:
			if c.setList && c.depth == c.setDepth {
				c.assignment()
			} else if f := c.frame(); f.from != modeNone && !f.fn {
				c.tableRef(f.from, f.from == modeRead || c.verb == kwUpdate || c.verb == kwDelete)
			}
		case tUserVar:
			c.touchSession() // the connection's own variables
			// @v := expr assigns; so may CALL (an OUT parameter) and LOAD DATA (its column
			// list), which the classifier does not tell from reading.
			if c.isOp(c.peek(0), ":=") || c.verb == kwCall || c.verb == kwLoad {
				c.res.Uses |= UsesUserVariable
			}
		case tSysVar:
			c.touchSession()
		case tOp:
			if t.end-t.start == 2 && c.lex.src[t.start] == ':' {
				c.touchSession() // @v := expr
			}
		case tWord:
			if t.kw != kwNone {
				c.bodyKeyword(t)
			}
		}
	}
}

func (c *Classifier) bodyKeyword(t token) {
	f := c.frame()
	switch t.kw {
	case kwFrom:
		if !f.fn {
			f.from = modeRead
			c.tableRef(modeRead, true)
		}
	case kwJoin, kwStraightJoin:
		if f.from != modeNone {
			c.tableRef(f.from, true)
		}
	case kwUsing:
		if c.verb == kwDelete && c.peek(0).kind != tLParen {
			f.from = modeRead
			c.tableRef(modeRead, true)
		}
	case kwWhere, kwGroup, kwHaving, kwOrder, kwLimit, kwWindow, kwUnion, kwExcept,
		kwIntersect, kwReturning, kwDuplicate, kwSet, kwSelect, kwOn:
		if t.kw == kwOn && f.from == modeRead {
			return // a join condition: the FROM list goes on after it
		}
		f.from = modeNone
		if t.kw == kwSet && c.unrecognized {
			c.assignments() // SET within a compound statement
		}
	case kwFor:
		if p := c.peek(0); c.is(p, kwUpdate) || c.is(p, kwShare) {
			c.locking()
			f.from = modeNone
		}
	case kwLock:
		if c.is(c.peek(0), kwIn) && c.is(c.peek(1), kwShare) && c.is(c.peek(2), kwMode) {
			c.locking()
			f.from = modeNone
		}
	case kwInto:
		f.from = modeNone
		if c.peek(0).kind == tUserVar {
			c.res.Uses |= UsesUserVariable // SELECT ... INTO @v, FETCH c INTO @v
		}
		switch {
		case c.verb == kwLoad:
			if c.is(c.peek(0), kwTable) {
				c.next()
				c.tableRef(modeWrite, false)
			}
		case c.verb == kwSelect || c.verb == kwValues || c.verb == kwTable:
			// SELECT ... INTO OUTFILE, DUMPFILE or variables.
			c.write()
			c.res.SideEffects = true
			c.res.Volatile = true
		}
	case kwTo:
		if c.verb == kwRename && f.from == modeWrite {
			c.tableRef(modeWrite, false)
		}
	case kwTable:
		if (c.verb == kwSelect || c.verb == kwInsert || c.verb == kwReplace) && !f.fn {
			c.tableRef(modeRead, false) // INSERT ... TABLE t, SELECT ... UNION TABLE t
		}
	case kwNext, kwPrevious:
		// NEXT VALUE FOR seq, PREVIOUS VALUE FOR seq
		if c.is(c.peek(0), kwValue) && c.is(c.peek(1), kwFor) {
			c.next()
			c.next()
			c.sequence(t.kw == kwNext)
		}
	case kwNextval, kwSetval, kwLastval:
		if c.peek(0).kind == tLParen {
			c.next()
			c.sequence(t.kw != kwLastval)
		}
	case kwGetLock, kwReleaseLock, kwReleaseAllLocks:
		if c.peek(0).kind == tLParen {
			c.res.SideEffects = true
			c.touchSession()
			switch t.kw {
			case kwGetLock:
				c.res.Uses |= UsesGetLock
			case kwReleaseLock:
				c.res.Uses |= UsesReleaseLock
			default:
				c.res.Uses |= UsesReleaseAllLocks
			}
		}
	case kwLastInsertID, kwFoundRows, kwRowCount:
		if c.peek(0).kind == tLParen {
			if t.kw == kwLastInsertID {
				if c.peek(1).kind != tRParen {
					c.res.SideEffects = true
					c.res.Uses |= UsesSetLastInsertID
				} else {
					c.res.Uses |= UsesLastInsertID
				}
			}
			c.touchSession()
		}
	case kwConnectionID:
		if c.peek(0).kind == tLParen {
			c.res.Uses |= UsesConnectionID
		}
	case kwCalcFoundRows:
		c.res.Uses |= UsesFoundRows
	}
}

// sequence handles a sequence function: NEXTVAL and SETVAL write the sequence; LASTVAL
// reads this connection's last value.
func (c *Classifier) sequence(write bool) {
	c.res.Volatile = true
	if write {
		c.write()
		c.res.SideEffects = true
		c.tableRef(modeWrite, false)
		return
	}
	c.touchSession()
	c.tableRef(modeRead, false)
}

func (c *Classifier) locking() {
	c.res.Volatile = true
	if c.kind == Read {
		c.kind = LockingRead
	}
}

func (c *Classifier) touchSession() {
	if c.kind == Read || c.kind == LockingRead || c.kind == Other {
		c.kind = Session
	}
}

func (c *Classifier) write() {
	if c.kind == Read || c.kind == LockingRead || c.kind == Other || c.kind == Session {
		c.kind = Write
	}
}

// tableRef reads a table reference, if one is next: [schema.]name [[AS] alias].
func (c *Classifier) tableRef(mode tableMode, alias bool) {
	t := c.peek(0)
	if c.is(t, kwLateral) || c.is(t, kwDual) {
		c.next()
		return
	}
	if !c.isName(t) {
		return
	}
	if t.kind == tWord && t.kw != kwNone && c.peek(1).kind == tLParen && t.flags&function != 0 {
		return // a table function such as JSON_TABLE(...)
	}
	tbl := c.tableName()
	c.last.fnWord, c.last.ident = false, false // a column list after a table name is not a call: t (a, b)
	i := c.addTable(mode, tbl)
	if !alias {
		return
	}
	p := c.peek(0)
	if c.is(p, kwAs) {
		c.next()
		p = c.peek(0)
		if !isQualifiedPart(p) {
			return
		}
	} else if !c.isName(p) {
		return
	}
	c.next()
	if i >= 0 && mode == modeRead {
		c.aliases[i] = c.name(p)
	}
}

// tableName consumes [schema.]name, the next token being a name.
func (c *Classifier) tableName() Table {
	tbl := Table{Name: c.name(c.next())}
	if c.peek(0).kind == tDot && isQualifiedPart(c.peek(1)) {
		c.next()
		tbl.Schema, tbl.Name = tbl.Name, c.name(c.next())
	}
	return tbl
}

// addTable records a table unless it is a common table expression or already listed. It
// returns the table's index in the read list, or -1.
func (c *Classifier) addTable(mode tableMode, tbl Table) int {
	if len(tbl.Schema) == 0 {
		for _, cte := range c.ctes[:c.nCTEs] {
			if bytes.EqualFold(cte, tbl.Name) {
				return -1
			}
		}
	}
	list, n := &c.read, &c.nRead
	if mode == modeWrite {
		list, n = &c.written, &c.nWrite
	}
	for i, have := range list[:*n] {
		if bytes.Equal(have.Name, tbl.Name) && bytes.Equal(have.Schema, tbl.Schema) {
			return i
		}
	}
	if *n == maxTables {
		c.res.UnknownTables = true
		return -1
	}
	list[*n] = tbl
	if mode == modeRead {
		c.aliases[*n] = nil
	}
	*n++
	return *n - 1
}

// txnAccess reads START TRANSACTION's characteristics (WITH CONSISTENT SNAPSHOT, READ ONLY,
// READ WRITE, separated by commas) for its access mode.
func (c *Classifier) txnAccess() {
	for {
		t := c.peek(0)
		switch {
		case c.is(t, kwWith):
			c.next()
			c.next() // CONSISTENT
			c.next() // SNAPSHOT
		case c.isWord(t, "READ"):
			c.next()
			switch m := c.next(); {
			case c.isWord(m, "ONLY"):
				c.res.TxnReadOnly = true
			case c.isWord(m, "WRITE"):
				c.res.TxnReadWrite = true
			}
		default:
			return
		}
		if c.peek(0).kind != tComma {
			return
		}
		c.next()
	}
}

// isWord tells whether t is the unquoted word w (in upper case), keyword or not.
func (c *Classifier) isWord(t token, w string) bool {
	return t.kind == tWord && bytes.EqualFold(c.lex.src[t.start:t.end], []byte(w))
}

// name returns an identifier's text without quotes.
func (c *Classifier) name(t token) []byte {
	b := c.lex.src[t.start:t.end]
	if t.kind != tQuoted {
		return b
	}
	b = unquote(b)
	name, ok := c.unescape(b, '`')
	if !ok {
		c.unsure = true
		return b
	}
	return name
}

// unescape returns the text b of a name quoted with q, each doubled quote made one; it is
// copied into c.names where it must be, and ok is false when c.names has no room.
func (c *Classifier) unescape(b []byte, q byte) (name []byte, ok bool) {
	if bytes.IndexByte(b, q) < 0 {
		return b, true
	}
	// `a``b` is a`b.
	if cap(c.names)-len(c.names) < len(b) {
		if cap(c.names) != 0 || len(b) > 1024 {
			return b, false
		}
		c.names = make([]byte, 0, 4096)
	}
	start := len(c.names)
	for i := 0; i < len(b); i++ {
		c.names = append(c.names, b[i])
		if b[i] == q {
			i++
		}
	}
	return c.names[start:len(c.names):len(c.names)], true
}

// String renders a result for logs and tests.
func (r *Result) String() string {
	var sb strings.Builder
	sb.WriteString(r.Kind.String())
	if r.Unsure {
		sb.WriteString(" unsure")
	}
	if r.UnknownTables {
		sb.WriteString(" unknown-tables")
	}
	list := func(name string, ts []Table) {
		if len(ts) == 0 {
			return
		}
		sb.WriteString(" " + name + "=")
		for i, t := range ts {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(t.String())
		}
	}
	list("read", r.Read)
	list("written", r.Written)
	for _, f := range []struct {
		on   bool
		name string
	}{{r.TxnStart, "txn-start"}, {r.TxnEnd, "txn-end"}, {r.TxnReadOnly, "read-only"}, {r.TxnReadWrite, "read-write"},
		{r.SideEffects, "side-effects"}, {r.MultiStatement, "multi"}, {r.Volatile, "volatile"}} {
		if f.on {
			sb.WriteString(" " + f.name)
		}
	}
	if r.Uses != 0 {
		sb.WriteString(" uses=" + r.Uses.String())
	}
	if r.KillID != 0 {
		if r.KillQuery {
			sb.WriteString(" kill-query=")
		} else {
			sb.WriteString(" kill=")
		}
		sb.WriteString(strconv.FormatUint(r.KillID, 10))
	}
	if r.ConnectionIDOnly {
		sb.WriteString(" connection-id-only=" + strconv.Quote(string(r.ConnectionIDName)))
	}
	if r.Tag != nil {
		sb.WriteString(" tag=" + string(r.Tag))
	}
	return sb.String()
}
