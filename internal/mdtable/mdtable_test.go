package mdtable

import (
	"slices"
	"testing"
)

const page = "# Page\n\n| key | default | meaning |\n|---|---|---|\n| `a.b` | `1` | one |\n| `c` | none | two, with `x` and `y` |\n\ntext\n\n| other | table |\n|---|---|\n| `d` | e |\n\n| key | default | meaning |\n|---|---|---|\n| `f` | `2` | three |\n"

func TestRows(t *testing.T) {
	rows := Rows(page, "key", "default")
	var lines []int
	var keys []string
	for _, r := range rows {
		lines = append(lines, r.Line)
		k, ok := OneCode(r.Cells[0])
		if !ok {
			t.Errorf("line %d: first cell %q is not one code", r.Line, r.Cells[0])
		}
		keys = append(keys, k)
	}
	if !slices.Equal(keys, []string{"a.b", "c", "f"}) || !slices.Equal(lines, []int{5, 6, 16}) {
		t.Errorf("keys %v at lines %v, want [a.b c f] at [5 6 16]", keys, lines)
	}
	if got := Code(rows[1].Cells[2]); !slices.Equal(got, []string{"x", "y"}) {
		t.Errorf("Code = %v, want [x y]", got)
	}
	if rows := Rows(page, "metric"); len(rows) != 0 {
		t.Errorf("rows of a table the page lacks: %v", rows)
	}
	if _, ok := OneCode("`a` and `b`"); ok {
		t.Error("OneCode accepted two codes")
	}
}
