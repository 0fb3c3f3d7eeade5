package proxy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gatekeeperdb/gatekeeper/internal/mdtable"
)

// codePair is a MySQL error code with its SQLSTATE, as the proxy sends them.
type codePair struct {
	code  string
	state string
}

// sentErrors reads the package's source and returns every code and SQLSTATE a clientError
// is built with, and every message text that starts with "gatekeeper:", with each operand
// that is not a literal written as %v.
func sentErrors(t *testing.T) (pairs map[codePair]string, messages []string) {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var parsed []*ast.File
	consts := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
							consts[n.Name] = literal(lit)
						}
					}
				}
			}
		}
	}
	value := func(e ast.Expr) string {
		switch x := e.(type) {
		case *ast.BasicLit:
			return literal(x)
		case *ast.Ident:
			if v, ok := consts[x.Name]; ok {
				return v
			}
		}
		t.Errorf("%s: an error code or SQLSTATE that is neither a literal nor a constant", fset.Position(e.Pos()))
		return ""
	}
	pairs = map[codePair]string{}
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CompositeLit:
				if id, ok := x.Type.(*ast.Ident); ok && id.Name == "clientError" {
					var p codePair
					for _, el := range x.Elts {
						kv := el.(*ast.KeyValueExpr)
						switch kv.Key.(*ast.Ident).Name {
						case "code":
							p.code = value(kv.Value)
						case "state":
							p.state = value(kv.Value)
						}
					}
					pairs[p] = fset.Position(x.Pos()).String()
				}
			case *ast.AssignStmt: // e.code, e.state = codeConCount, stateConnectionRefuse
				if !slices.ContainsFunc(x.Lhs, func(e ast.Expr) bool {
					sel, ok := e.(*ast.SelectorExpr)
					return ok && sel.Sel.Name == "code"
				}) {
					return true
				}
				var p codePair
				for i, lhs := range x.Lhs {
					if sel, ok := lhs.(*ast.SelectorExpr); ok && i < len(x.Rhs) {
						switch sel.Sel.Name {
						case "code":
							p.code = value(x.Rhs[i])
						case "state":
							p.state = value(x.Rhs[i])
						}
					}
				}
				if p.state == "" {
					t.Errorf("%s: set the code and the SQLSTATE together", fset.Position(x.Pos()))
				}
				pairs[p] = fset.Position(x.Pos()).String()
			case *ast.BinaryExpr: // "gatekeeper: ..." + limit + "..."
				if x.Op != token.ADD {
					return true
				}
				if text, ok := concatenation(x); ok && strings.HasPrefix(text, "gatekeeper: ") {
					messages = append(messages, text)
				}
				return false
			case *ast.BasicLit:
				if s := literal(x); x.Kind == token.STRING && strings.HasPrefix(s, "gatekeeper: ") {
					messages = append(messages, s)
				}
			}
			return true
		})
	}
	return pairs, messages
}

// concatenation renders a sum of strings that starts with a literal, other operands as %v.
func concatenation(e ast.Expr) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		return literal(x), x.Kind == token.STRING
	case *ast.BinaryExpr:
		if x.Op != token.ADD {
			return "", false
		}
		left, ok := concatenation(x.X)
		if !ok {
			return "", false
		}
		right, ok := concatenation(x.Y)
		if !ok {
			right = "%v"
		}
		return left + right, true
	}
	return "", false
}

func literal(lit *ast.BasicLit) string {
	if lit.Kind == token.STRING {
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return lit.Value
		}
		return s
	}
	return lit.Value
}

// documentedErrors reads the table headed "| code | SQLSTATE | when | message starts with |":
// its codes and the messages in its last column that start with "gatekeeper:", cut where
// the page writes "..." for the rest.
func documentedErrors(t *testing.T, text string) (pairs map[codePair]bool, messages []string) {
	t.Helper()
	pairs = map[codePair]bool{}
	for _, r := range mdtable.Rows(text, "code", "SQLSTATE") {
		if len(r.Cells) != 4 {
			t.Fatalf("docs/errors.md:%d: want | code | SQLSTATE | when | message |, got %q", r.Line, strings.Join(r.Cells, " | "))
		}
		pairs[codePair{code: r.Cells[0], state: r.Cells[1]}] = true
		for _, code := range mdtable.Code(r.Cells[3]) {
			if msg, ok := strings.CutPrefix(code, "gatekeeper: "); ok {
				msg, _, _ = strings.Cut(msg, "...")
				messages = append(messages, "gatekeeper: "+strings.TrimRight(msg, " ("))
			}
		}
	}
	if len(pairs) == 0 {
		t.Fatal("docs/errors.md: no table headed | code | SQLSTATE | when | message starts with |")
	}
	return pairs, messages
}

// startsLike reports whether doc, a message as the page writes it (placeholders such as
// ADDR or N in place of values), is the start of format, a message as the code writes it
// (%s, %d and the like in place of values).
func startsLike(format, doc string) bool {
	i, j := 0, 0
	for j < len(doc) {
		if i >= len(format) {
			return false
		}
		if format[i] != '%' {
			if format[i] != doc[j] {
				return false
			}
			i, j = i+1, j+1
			continue
		}
		i++ // a verb: flags and width, then its letter
		for i < len(format) && strings.IndexByte("0123456789.+-# ", format[i]) >= 0 {
			i++
		}
		i++
		if i >= len(format) {
			return true
		}
		for j < len(doc) && doc[j] != format[i] { // the placeholder runs to the next literal
			j++
		}
	}
	return true
}

// TestErrorsReference keeps docs/errors.md equal to the errors the proxy sends: every code
// and SQLSTATE it builds an error with is in the table and every row's pair is built
// somewhere, and every message of its own ("gatekeeper: ...") has a row that starts like it,
// and every such row starts like a message of the code.
func TestErrorsReference(t *testing.T) {
	text, err := os.ReadFile("../../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	sentPairs, sentMessages := sentErrors(t)
	docPairs, docMessages := documentedErrors(t, string(text))
	byCode := func(a, b codePair) int { return strings.Compare(a.code+a.state, b.code+b.state) }
	for _, p := range slices.SortedFunc(maps.Keys(sentPairs), byCode) {
		if !docPairs[p] {
			t.Errorf("docs/errors.md: %s %s is sent (%s) but not documented", p.code, p.state, sentPairs[p])
		}
	}
	for _, p := range slices.SortedFunc(maps.Keys(docPairs), byCode) {
		if _, ok := sentPairs[p]; !ok {
			t.Errorf("docs/errors.md: %s %s is documented but never sent", p.code, p.state)
		}
	}
	for _, m := range sentMessages {
		if !slices.ContainsFunc(docMessages, func(d string) bool { return startsLike(m, d) }) {
			t.Errorf("docs/errors.md: no row for the message %q", m)
		}
	}
	for _, d := range docMessages {
		if !slices.ContainsFunc(sentMessages, func(m string) bool { return startsLike(m, d) }) {
			t.Errorf("docs/errors.md: the message %q is documented but never sent", d)
		}
	}
}

func TestStartsLike(t *testing.T) {
	tests := []struct {
		format, doc string
		want        bool
	}{
		{"gatekeeper: cannot reach the %s backend %s (%s); check", "gatekeeper: cannot reach the primary backend ADDR", true},
		{"gatekeeper: rate limit: policer %q (admission.policers)", `gatekeeper: rate limit: policer "NAME"`, true},
		{"gatekeeper: command %s (0x%02x) is not supported", "gatekeeper: command NAME (0x..) is not supported", true},
		{"gatekeeper: queue full: %d units", "gatekeeper: queue full", true},
		{"gatekeeper: queue full: %d units", "gatekeeper: queue is full", false},
		{"gatekeeper: queue full", "gatekeeper: queue full: N units", false},
	}
	for _, tt := range tests {
		if got := startsLike(tt.format, tt.doc); got != tt.want {
			t.Errorf("startsLike(%q, %q) = %v, want %v", tt.format, tt.doc, got, tt.want)
		}
	}
}
