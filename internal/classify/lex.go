package classify

import "bytes"

// tokKind is the lexical class of a token.
type tokKind uint8

const (
	tEnd     tokKind = iota
	tWord            // an unquoted identifier or keyword
	tQuoted          // a `quoted` identifier
	tString          // a string literal, with any introducer ('a', N'a', _utf8mb4'a', X'0A')
	tNumber          // a numeric literal (12, 1.5e3, 0x1F, 0b101)
	tParam           // a ? placeholder
	tUserVar         // @name
	tSysVar          // @@name or @@session.name
	tLParen          // (
	tRParen          // )
	tComma           // ,
	tDot             // .
	tSemi            // ;
	tOp              // any other operator
)

// token is one lexical token: its class, where it is in the text and, for a word, the
// keyword it is.
type token struct {
	kind  tokKind
	kw    kwID
	flags kwFlags
	// key indexes keywordList.
	key        uint16
	start, end int
}

// lexer splits a statement into tokens. Comments are skipped, except that the text of
// executable comments (/*!NNNNN ... */ and /*M!NNNNNN ... */) is read as code. The request
// tag of the first comment that carries one is kept, wherever it stands (before the first
// token, as most tools put it, after a keyword, or at the end, as sqlcommenter does).
type lexer struct {
	src []byte
	pos int
	// inExec is set inside an executable comment.
	inExec bool
	// broken is set when the text ends inside a string, quoted identifier or comment.
	broken bool
	tag    []byte
	// consistency and session are the values of the first gk:consistency= and
	// gk:session= hints, read as the tag is.
	consistency, session []byte
}

func (l *lexer) reset(src []byte) {
	*l = lexer{src: src}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// identChars marks the bytes an unquoted identifier is made of.
var identChars = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
	}
	return t
}()

func isIdentChar(c byte) bool { return identChars[c] }

// punctuation gives the kind of the one-byte tokens.
var punctuation = [256]tokKind{'?': tParam, '(': tLParen, ')': tRParen, ',': tComma, '.': tDot, ';': tSemi}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skip passes over whitespace and comments.
func (l *lexer) skip() {
	src := l.src
	for l.pos < len(src) {
		c := src[l.pos]
		switch {
		case isSpace(c):
			l.pos++
		case c == '#':
			l.toLineEnd()
		case c == '-' && l.pos+1 < len(src) && src[l.pos+1] == '-' &&
			(l.pos+2 == len(src) || isSpace(src[l.pos+2]) || src[l.pos+2] < 0x20):
			l.toLineEnd()
		case c == '*' && l.inExec && l.pos+1 < len(src) && src[l.pos+1] == '/':
			l.inExec = false
			l.pos += 2
		case c == '/' && l.pos+1 < len(src) && src[l.pos+1] == '*':
			l.comment()
		default:
			return
		}
	}
}

func (l *lexer) toLineEnd() {
	if i := bytes.IndexByte(l.src[l.pos:], '\n'); i >= 0 {
		l.pos += i + 1
	} else {
		l.pos = len(l.src)
	}
}

var (
	tagPrefix         = []byte("gk:type=")
	consistencyPrefix = []byte("gk:consistency=")
	sessionPrefix     = []byte("gk:session=")
)

// comment passes over a /* comment */ at l.pos, or enters an executable one.
func (l *lexer) comment() {
	src := l.src
	body := l.pos + 2
	exec := 0
	if body < len(src) && src[body] == '!' {
		exec = body + 1
	} else if body+1 < len(src) && (src[body] == 'M' || src[body] == 'm') && src[body+1] == '!' {
		exec = body + 2
	}
	if exec > 0 && !l.inExec {
		for exec < len(src) && isDigit(src[exec]) {
			exec++
		}
		l.inExec = true
		l.pos = exec
		return
	}
	end := bytes.Index(src[body:], []byte("*/"))
	if end < 0 {
		l.broken = true
		l.pos = len(src)
		return
	}
	text := src[body : body+end]
	l.pos = body + end + 2
	if bytes.Contains(text, hintStart) {
		hint(&l.tag, text, tagPrefix)
		hint(&l.consistency, text, consistencyPrefix)
		hint(&l.session, text, sessionPrefix)
	}
}

var hintStart = []byte("gk:")

// hint sets *v, when it is not set yet, to the value that follows prefix in a comment's
// text: a name of identifier characters, dots, dashes and colons.
func hint(v *[]byte, text, prefix []byte) {
	if *v != nil {
		return
	}
	i := bytes.Index(text, prefix)
	if i < 0 {
		return
	}
	name := text[i+len(prefix):]
	n := 0
	for n < len(name) && (isIdentChar(name[n]) || name[n] == '.' || name[n] == '-' || name[n] == ':') {
		n++
	}
	if n > 0 {
		*v = name[:n:n]
	}
}

// next reads the next token into t.
func (l *lexer) next(t *token) {
	l.skip()
	src := l.src
	start := l.pos
	*t = token{start: start, end: start}
	if start >= len(src) {
		return
	}
	c := src[start]
	switch {
	case c == '\'' || c == '"':
		l.pos = l.quoted(start+1, c)
		t.kind = tString
	case c == '`':
		l.pos = l.quoted(start+1, '`')
		t.kind = tQuoted
	case isDigit(c) || c == '.' && start+1 < len(src) && isDigit(src[start+1]):
		t.kind = l.number()
	case isIdentChar(c):
		l.pos = l.word(start)
		t.kind = tWord
		// N'..', X'..', B'..' and _charset'..' are literals.
		if l.pos < len(src) && src[l.pos] == '\'' && (c == '_' || l.pos-start == 1 && (c|0x20 == 'n' || c|0x20 == 'x' || c|0x20 == 'b')) {
			l.pos = l.quoted(l.pos+1, '\'')
			t.kind = tString
		} else if i := lookup(src[start:l.pos]); i != 0 {
			k := &keywordList[i]
			t.kw, t.flags, t.key = k.id, k.flags, i
		}
	case punctuation[c] != tEnd:
		l.pos++
		t.kind = punctuation[c]
	case c == '@':
		t.kind = l.variable()
	default:
		l.pos = l.operator(start)
		t.kind = tOp
	}
	t.end = l.pos
}

func (l *lexer) word(i int) int {
	for i < len(l.src) && isIdentChar(l.src[i]) {
		i++
	}
	return i
}

// quoted returns the end of a string or quoted identifier whose text starts at i, closed by
// q. A doubled quote stands for itself; in strings a backslash escapes the next byte.
func (l *lexer) quoted(i int, q byte) int {
	src := l.src
	for i <= len(src) {
		j := bytes.IndexByte(src[i:], q)
		if j < 0 {
			break
		}
		if q != '`' {
			if k := bytes.IndexByte(src[i:i+j], '\\'); k >= 0 {
				i += k + 2 // the escaped byte may be the quote
				continue
			}
		}
		i += j
		if i+1 < len(src) && src[i+1] == q {
			i += 2
			continue
		}
		return i + 1
	}
	l.broken = true
	return len(src)
}

// number reads a numeric literal; a run of digits that goes on as an identifier (1st_col)
// is a word.
func (l *lexer) number() tokKind {
	src := l.src
	i := l.pos
	if src[i] == '0' && i+1 < len(src) && (src[i+1]|0x20 == 'x' || src[i+1]|0x20 == 'b') {
		l.pos = l.word(i)
		return tNumber
	}
	for i < len(src) && isDigit(src[i]) {
		i++
	}
	if i < len(src) && src[i] == '.' {
		i++
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	}
	if i < len(src) && src[i]|0x20 == 'e' {
		j := i + 1
		if j < len(src) && (src[j] == '+' || src[j] == '-') {
			j++
		}
		if j < len(src) && isDigit(src[j]) {
			i = j
			for i < len(src) && isDigit(src[i]) {
				i++
			}
		}
	}
	if i < len(src) && isIdentChar(src[i]) && src[l.pos] != '.' {
		l.pos = l.word(i)
		return tWord
	}
	l.pos = i
	return tNumber
}

// variable reads @name, @'name', @`name`, @@name or @@scope.name.
func (l *lexer) variable() tokKind {
	src := l.src
	i := l.pos + 1
	kind := tUserVar
	if i < len(src) && src[i] == '@' {
		kind = tSysVar
		i++
	}
	switch {
	case i < len(src) && (src[i] == '\'' || src[i] == '"' || src[i] == '`'):
		i = l.quoted(i+1, src[i])
	default:
		for i < len(src) && (isIdentChar(src[i]) || src[i] == '.' && kind == tSysVar) {
			i++
		}
	}
	l.pos = i
	return kind
}

var operators = [...]string{"<=>", "->>", ":=", "<=", ">=", "<>", "!=", "||", "&&", "<<", ">>", "->"}

func (l *lexer) operator(i int) int {
	rest := l.src[i:]
	switch rest[0] {
	case '<', '>', '-', ':', '!', '|', '&':
	default:
		return i + 1
	}
	for _, op := range operators {
		if len(rest) >= len(op) && string(rest[:len(op)]) == op {
			return i + len(op)
		}
	}
	return i + 1
}
