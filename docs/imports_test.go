package docs

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatekeeperdb/gatekeeper/internal/mdtable"
)

const module = "github.com/gatekeeperdb/gatekeeper/"

// importGraph returns what each of the module's packages under dirs imports of the
// others (internal/ prefixes dropped), from its Go files other than tests.
func importGraph(t *testing.T, dirs ...string) map[string][]string {
	t.Helper()
	graph := map[string][]string{}
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join("..", dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			pkg := filepath.ToSlash(filepath.Dir(strings.TrimPrefix(path, "../")))
			if _, ok := graph[pkg]; !ok {
				graph[pkg] = []string{}
			}
			for _, imp := range f.Imports {
				p := strings.Trim(imp.Path.Value, `"`)
				if name, ok := strings.CutPrefix(p, module+"internal/"); ok && !slices.Contains(graph[pkg], name) {
					graph[pkg] = append(graph[pkg], name)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, imps := range graph {
		slices.Sort(imps)
	}
	return graph
}

// TestImportsAsDesigned keeps design.md's table of packages equal to what each imports of
// the others, and the directions the design rests on.
func TestImportsAsDesigned(t *testing.T) {
	graph := importGraph(t, "internal", "cmd")
	text, err := os.ReadFile("design.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := mdtable.Rows(string(text), "package", "owns", "imports")
	if len(rows) == 0 {
		t.Fatal("design.md has no table of packages (package | owns | imports)")
	}
	documented := map[string]bool{}
	for _, row := range rows {
		pkg, _ := mdtable.OneCode(row.Cells[0])
		documented[pkg] = true
		want := []string{}
		for f := range strings.FieldsFuncSeq(row.Cells[2], func(r rune) bool { return r == ',' || r == ' ' }) {
			want = append(want, f)
		}
		slices.Sort(want)
		got, ok := graph[pkg]
		switch {
		case !ok:
			t.Errorf("design.md lists %s, which has no Go files", pkg)
		case !slices.Equal(got, want):
			t.Errorf("%s imports %v; design.md says %v: record the change there, or undo it", pkg, got, want)
		}
	}
	for pkg := range graph {
		if !documented[pkg] {
			t.Errorf("%s is not in design.md's table of packages", pkg)
		}
	}
	for pkg, imps := range graph {
		for _, imp := range imps {
			if rule := forbidden(pkg, imp); rule != "" {
				t.Errorf("%s imports %s: %s", pkg, imp, rule)
			}
		}
	}
}

// forbidden says why pkg may not import internal/imp, or "".
func forbidden(pkg, imp string) string {
	switch {
	case pkg == "internal/admission" || pkg == "internal/classify" || pkg == "internal/estimator":
		return "policy and bookkeeping import nothing of the daemon"
	case imp == "wiring" && pkg != "cmd/gatekeeper":
		return "only cmd/gatekeeper (and the integration suite) builds the daemon from its configuration"
	case imp == "proxy" && pkg != "cmd/gatekeeper" && pkg != "internal/wiring":
		return "the session layer is used by the wiring, never by what it uses"
	}
	return ""
}
