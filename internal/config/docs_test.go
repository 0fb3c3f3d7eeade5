package config

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/mdtable"
)

// docKey is one key of the configuration as the reference shows it: a dotted path, with
// "[]" after a list of sections (admission.policers[].rate).
type docKey struct {
	key string
	// def is the default; inside a list entry, the field's zero value.
	def reflect.Value
}

// referenceKeys walks Config by reflection and returns every key a user can set, with its
// default from Default().
func referenceKeys() []docKey {
	var out []docKey
	var walk func(t reflect.Type, v reflect.Value, prefix string)
	walk = func(t reflect.Type, v reflect.Value, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("mapstructure")
			if tag == "" || tag == "-" {
				continue
			}
			key := prefix + tag
			fv := reflect.Zero(f.Type) // inside a list entry: the zero value is the default
			if v.IsValid() {
				fv = v.Field(i)
			}
			switch {
			case f.Type.Kind() == reflect.Struct:
				walk(f.Type, fv, key+".")
				continue
			case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
				out = append(out, docKey{key: key, def: fv})
				walk(f.Type.Elem(), reflect.Value{}, key+"[].")
				continue
			case f.Type.Kind() == reflect.Map && f.Type.Elem().Kind() == reflect.Struct:
				out = append(out, docKey{key: key, def: fv})
				walk(f.Type.Elem(), reflect.Value{}, key+".*.")
				continue
			}
			out = append(out, docKey{key: key, def: fv})
		}
	}
	walk(reflect.TypeFor[Config](), reflect.ValueOf(Default()), "")
	return out
}

// docRow is a row of a table of keys in the documentation.
type docRow struct {
	file string
	line int
	key  string
	def  string // the default cell, as written
}

// keyTables returns the rows of every table headed "| key | default | meaning |" in text.
func keyTables(file, text string) ([]docRow, error) {
	var rows []docRow
	for _, r := range mdtable.Rows(text, "key", "default") {
		key, ok := mdtable.OneCode(r.Cells[0])
		if !ok {
			return nil, fmt.Errorf("%s:%d: the first cell must be one key in backticks, not %q", file, r.Line, r.Cells[0])
		}
		if len(r.Cells) < 3 {
			return nil, fmt.Errorf("%s:%d: a row needs a key, a default and a meaning", file, r.Line)
		}
		rows = append(rows, docRow{file: file, line: r.Line, key: key, def: r.Cells[1]})
	}
	return rows, nil
}

// formatDefault renders v as the reference writes defaults; "" for an empty value, which
// the reference describes in words ("none").
func formatDefault(v reflect.Value) string {
	if !v.IsValid() {
		return ""
	}
	switch x := v.Interface().(type) {
	case time.Duration:
		if x == 0 {
			return "0"
		}
		s := x.String()
		if strings.HasSuffix(s, "m0s") || strings.HasSuffix(s, "h0m0s") {
			s = strings.TrimSuffix(s, "0s")
		}
		if strings.HasSuffix(s, "h0m") {
			s = strings.TrimSuffix(s, "0m")
		}
		return s
	case ByteSize:
		return x.String()
	case string:
		return x
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		if v.Len() == 0 {
			return ""
		}
	}
	return fmt.Sprint(v.Interface())
}

func readDocs(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	docs := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[filepath.Base(f)] = string(b)
	}
	return docs
}

// TestReferenceMatchesConfig keeps docs/configuration.md equal to Config: every key is
// documented once, every documented key exists, and every default written as a value is
// Default()'s. Other pages' tables of keys are held to the same defaults.
func TestReferenceMatchesConfig(t *testing.T) {
	docs := readDocs(t)
	var rows []docRow
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		r, err := keyTables(name, docs[name])
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r...)
	}
	checkReference(t, referenceKeys(), rows)
}

// reporter is what checkReference reports to: a *testing.T, or a recorder in the test that
// proves it can fail.
type reporter interface {
	Errorf(format string, args ...any)
}

type errorCount int

func (n *errorCount) Errorf(string, ...any) { *n++ }

// checkReference compares the keys of the code with the rows of the documentation.
func checkReference(t reporter, keys []docKey, rows []docRow) {
	byKey := map[string]docKey{}
	for _, k := range keys {
		byKey[k.key] = k
	}
	inReference := map[string]int{}
	for _, r := range rows {
		k, ok := byKey[r.key]
		if !ok {
			t.Errorf("%s:%d: %s is documented but is not a key of config.Config", r.file, r.line, r.key)
			continue
		}
		if r.file == "configuration.md" {
			if inReference[r.key]++; inReference[r.key] > 1 {
				t.Errorf("%s:%d: %s is documented twice", r.file, r.line, r.key)
			}
		}
		want := formatDefault(k.def)
		if def, ok := mdtable.OneCode(r.def); ok {
			if def != want {
				t.Errorf("%s:%d: %s: documented default %s, Default() has %q", r.file, r.line, r.key, r.def, want)
			}
		} else if !k.def.IsZero() && want != "" { // words ("none", "required") only for a zero default
			t.Errorf("%s:%d: %s: documented default %q, Default() has `%s`; write it in backticks", r.file, r.line, r.key, r.def, want)
		}
	}
	for _, k := range keys {
		if inReference[k.key] == 0 {
			t.Errorf("docs/configuration.md: %s (default %q) is not documented", k.key, formatDefault(k.def))
		}
	}
}

// TestCheckReferenceFails makes sure the comparison above can fail: a key missing from the
// reference, a key that no longer exists and a wrong default are each reported.
func TestCheckReferenceFails(t *testing.T) {
	keys := []docKey{
		{key: "listen", def: reflect.ValueOf("127.0.0.1:6033")},
		{key: "admission.queue_timeout", def: reflect.ValueOf(5 * time.Second)},
		{key: "admission.policers[].rate", def: reflect.ValueOf(0.0)},
	}
	good := []docRow{
		{file: "configuration.md", key: "listen", def: "`127.0.0.1:6033`"},
		{file: "configuration.md", key: "admission.queue_timeout", def: "`5s`"},
		{file: "configuration.md", key: "admission.policers[].rate", def: "`0`"},
	}
	tests := []struct {
		name string
		rows []docRow
	}{
		{"missing key", good[:2]},
		{"stale key", append(slices.Clone(good), docRow{file: "configuration.md", key: "admission.queue_timout", def: "`5s`"})},
		{"wrong default", []docRow{good[0], {file: "configuration.md", key: "admission.queue_timeout", def: "`10s`"}, good[2]}},
		{"default in words", []docRow{good[0], {file: "configuration.md", key: "admission.queue_timeout", def: "five seconds"}, good[2]}},
		{"twice", append(slices.Clone(good), good[0])},
	}
	for _, tt := range tests {
		var n errorCount
		checkReference(&n, keys, tt.rows)
		if n == 0 {
			t.Errorf("%s: not reported", tt.name)
		}
	}
	var n errorCount
	checkReference(&n, keys, good)
	if n != 0 {
		t.Errorf("a matching reference is reported %d times", n)
	}
}
