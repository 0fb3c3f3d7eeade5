package classify

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"
)

// TestCorpus checks every statement of testdata/corpus.sql: its kind, whether it is
// volatile and the connection state it uses, and where the TiDB parser parses it, the
// tables read and written against the parser's syntax tree.
func TestCorpus(t *testing.T) {
	f, err := os.Open("testdata/corpus.sql")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := New()
	p := parser.New()
	var statements, compared int
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		expect, sql, ok := strings.Cut(text, ": ")
		if !ok {
			t.Fatalf("corpus.sql:%d: want \"kind [volatile] [uses=a,b]: statement\"", line)
		}
		kind, uses, _ := strings.Cut(expect, " uses=")
		if uses == "" {
			uses = Uses(0).String()
		}
		kind, volatile := strings.CutSuffix(kind, " volatile")
		statements++
		r := c.Classify([]byte(sql))
		if r.Kind.String() != kind {
			t.Errorf("corpus.sql:%d: %s\n kind %s, want %s (%s)", line, sql, r.Kind, kind, r)
		}
		if r.Volatile != volatile {
			t.Errorf("corpus.sql:%d: %s\n volatile %v, want %v", line, sql, r.Volatile, volatile)
		}
		if r.Uses.String() != uses {
			t.Errorf("corpus.sql:%d: %s\n uses %s, want %s", line, sql, r.Uses, uses)
		}
		stmt, err := p.ParseOneStmt(sql, "", "")
		if err != nil || r.SideEffects || r.Unsure {
			continue // MariaDB syntax the parser lacks, or sequences it reads differently
		}
		want := tablesOf(stmt)
		if !want.ok {
			continue
		}
		compared++
		if got := names(r.Read); !slices.Equal(got, want.read) {
			t.Errorf("corpus.sql:%d: %s\n read %v, parser says %v", line, sql, got, want.read)
		}
		if got := names(r.Written); !slices.Equal(got, want.written) {
			t.Errorf("corpus.sql:%d: %s\n written %v, parser says %v", line, sql, got, want.written)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d statements, %d compared with the TiDB parser", statements, compared)
	if compared < statements*2/3 {
		t.Errorf("only %d of %d statements compared with the parser", compared, statements)
	}
}

func names(ts []Table) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.String())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// tables is what the parser's tree says a statement reads and writes, by the classifier's
// rules: write targets are written (all tables of a multi-table UPDATE), every other table
// in a FROM, JOIN or subquery is read, common table expressions are not tables.
type tables struct {
	read, written []string
	ok            bool
}

func tablesOf(stmt ast.StmtNode) tables {
	v := &oracle{skip: map[*ast.TableName]bool{}, ctes: map[string]bool{}, aliases: map[string]string{}}
	stmt.Accept(v)
	for _, tn := range v.targets {
		name := tableName(tn)
		if tn.Schema.O == "" {
			if real, ok := v.aliases[tn.Name.O]; ok {
				name = real
			}
		}
		v.written = append(v.written, name)
	}
	out := tables{read: append([]string{}, v.read...), written: append([]string{}, v.written...), ok: true}
	slices.Sort(out.read)
	slices.Sort(out.written)
	out.read, out.written = slices.Compact(out.read), slices.Compact(out.written)
	switch stmt.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt, *ast.InsertStmt, *ast.UpdateStmt, *ast.DeleteStmt,
		*ast.CreateTableStmt, *ast.DropTableStmt, *ast.AlterTableStmt, *ast.TruncateTableStmt,
		*ast.RenameTableStmt, *ast.CreateIndexStmt, *ast.DropIndexStmt, *ast.LoadDataStmt:
	default:
		out.ok = false
	}
	if ct, isCreate := stmt.(*ast.CreateTableStmt); isCreate && ct.ReferTable != nil {
		out.ok = false // CREATE TABLE ... LIKE: the classifier does not list the model
	}
	return out
}

type oracle struct {
	read, written []string
	targets       []*ast.TableName
	skip          map[*ast.TableName]bool
	ctes          map[string]bool
	aliases       map[string]string
}

func tableName(tn *ast.TableName) string {
	if tn.Schema.O != "" {
		return tn.Schema.O + "." + tn.Name.O
	}
	return tn.Name.O
}

// joined lists the tables of a join tree, leaving out those inside subqueries.
func joined(n ast.ResultSetNode) []*ast.TableName {
	switch n := n.(type) {
	case *ast.Join:
		out := joined(n.Left)
		if n.Right != nil {
			out = append(out, joined(n.Right)...)
		}
		return out
	case *ast.TableSource:
		if tn, ok := n.Source.(*ast.TableName); ok {
			return []*ast.TableName{tn}
		}
	case *ast.TableName:
		return []*ast.TableName{n}
	}
	return nil
}

func (v *oracle) write(tns ...*ast.TableName) {
	for _, tn := range tns {
		if tn == nil {
			continue
		}
		v.skip[tn] = true
		v.written = append(v.written, tableName(tn))
	}
}

func (v *oracle) Enter(n ast.Node) (ast.Node, bool) {
	switch n := n.(type) {
	case *ast.CommonTableExpression:
		v.ctes[n.Name.O] = true
	case *ast.InsertStmt:
		v.write(joined(n.Table.TableRefs)...)
	case *ast.UpdateStmt:
		v.write(joined(n.TableRefs.TableRefs)...)
	case *ast.DeleteStmt:
		if n.IsMultiTable {
			for _, tn := range n.Tables.Tables {
				v.skip[tn] = true
				v.targets = append(v.targets, tn)
			}
		} else {
			v.write(joined(n.TableRefs.TableRefs)...)
		}
	case *ast.CreateTableStmt:
		v.write(n.Table)
	case *ast.DropTableStmt:
		v.write(n.Tables...)
	case *ast.AlterTableStmt:
		v.write(n.Table)
		for _, spec := range n.Specs {
			for _, tn := range []*ast.TableName{spec.NewTable} {
				if tn != nil {
					v.skip[tn] = true
				}
			}
		}
	case *ast.TruncateTableStmt:
		v.write(n.Table)
	case *ast.RenameTableStmt:
		for _, tt := range n.TableToTables {
			v.write(tt.OldTable, tt.NewTable)
		}
	case *ast.CreateIndexStmt:
		v.write(n.Table)
	case *ast.DropIndexStmt:
		v.write(n.Table)
	case *ast.LoadDataStmt:
		v.write(n.Table)
	case *ast.TableSource:
		if tn, ok := n.Source.(*ast.TableName); ok && n.AsName.O != "" {
			v.aliases[n.AsName.O] = tableName(tn)
		}
	case *ast.TableName:
		if !v.skip[n] && !(n.Schema.O == "" && v.ctes[n.Name.O]) {
			v.read = append(v.read, tableName(n))
		}
	}
	return n, false
}

func (v *oracle) Leave(n ast.Node) (ast.Node, bool) { return n, true }
