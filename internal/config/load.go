package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// EnvPrefix prefixes the environment variable of every key: admission.discipline is
// GATEKEEPER_ADMISSION_DISCIPLINE.
const EnvPrefix = "GATEKEEPER"

// EnvName returns the environment variable that sets key.
func EnvName(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Sources says where configuration comes from, in rising precedence after the defaults:
// the file, the environment, the flags that were set.
type Sources struct {
	// File is a YAML file; empty means none.
	File string
	// Flags and FlagKeys bind command-line flags (by name) to keys. A flag counts only when
	// it was set on the command line.
	Flags    *pflag.FlagSet
	FlagKeys map[string]string
}

// field is one settable key of Config.
type field struct {
	key   string
	index []int
	typ   reflect.Type
}

// fields lists the settable keys of Config, in declaration order.
func fields() []field {
	var out []field
	var walk func(t reflect.Type, prefix string, index []int)
	walk = func(t reflect.Type, prefix string, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			key := prefix + f.Tag.Get("mapstructure")
			idx := append(slices.Clone(index), i)
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, key+".", idx)
				continue
			}
			out = append(out, field{key: key, index: idx, typ: f.Type})
		}
	}
	walk(reflect.TypeFor[Config](), "", nil)
	return out
}

// Keys returns every configuration key, in the order of the reference.
func Keys() []string {
	var keys []string
	for _, f := range fields() {
		keys = append(keys, f.key)
	}
	return keys
}

// Load builds the configuration from its sources and validates it. Errors name the key,
// and the file line when the value came from the file.
func Load(src Sources) (Config, error) {
	v := viper.New()
	def := reflect.ValueOf(Default())
	fs := fields()
	for _, f := range fs {
		v.SetDefault(f.key, def.FieldByIndex(f.index).Interface())
		if err := v.BindEnv(f.key, EnvName(f.key)); err != nil {
			return Config{}, err
		}
	}
	var lines map[string]int
	var errs []error
	if src.File != "" {
		data, err := os.ReadFile(src.File)
		if err != nil {
			return Config{}, fmt.Errorf("config: %w", err)
		}
		lines, err = checkKeys(data, fs)
		switch {
		case lines == nil: // not YAML
			return Config{}, fmt.Errorf("config %s: %w", src.File, err)
		case err != nil:
			errs = append(errs, err) // unknown keys: reported with the bad values below
		}
		v.SetConfigType("yaml")
		if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
			return Config{}, fmt.Errorf("config %s: %w", src.File, err)
		}
	}
	for name, key := range src.FlagKeys {
		if f := src.Flags.Lookup(name); f != nil {
			if err := v.BindPFlag(key, f); err != nil {
				return Config{}, err
			}
		}
	}

	cfg := Default()
	out := reflect.ValueOf(&cfg).Elem()
	decoded := true
	for _, f := range fs {
		dst := out.FieldByIndex(f.index)
		raw := v.Get(f.key)
		if _, ok := raw.(string); ok && isSectionList(f.typ) {
			errs = append(errs, fmt.Errorf("%s: a list of sections is set only in the configuration file, not in %s or a flag", f.key, EnvName(f.key)))
			decoded = false
			continue
		}
		if err := decodeValue(raw, dst); err != nil {
			errs = append(errs, keyErrors(f.key, lines, err)...)
			decoded = false
		}
	}
	if decoded && len(cfg.Backends.Servers) > 0 && !setBy(src, lines, "backends.primary") {
		cfg.Backends.Primary = "" // found among the servers at start
	}
	if decoded {
		if err := cfg.Validate(); err != nil {
			errs = append(errs, annotateLines(err, lines))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, withFile(src.File, err)
	}
	return cfg, nil
}

// setBy tells whether key was set by a source (the file, the environment, a flag given on
// the command line) rather than left to its default.
func setBy(src Sources, lines map[string]int, key string) bool {
	if _, ok := lines[key]; ok {
		return true
	}
	if _, ok := os.LookupEnv(EnvName(key)); ok {
		return true
	}
	for name, k := range src.FlagKeys {
		if f := src.Flags.Lookup(name); k == key && f != nil && f.Changed {
			return true
		}
	}
	return false
}

// isSectionList tells whether t is a list of sections (admission.policers, rules), which
// only the file can write.
func isSectionList(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct
}

func withFile(file string, err error) error {
	if file == "" {
		return fmt.Errorf("config: %w", err)
	}
	return fmt.Errorf("config %s: %w", file, err)
}

func keyError(key string, lines map[string]int, err error) error {
	if line, ok := lines[key]; ok {
		return fmt.Errorf("line %d: %s: %w", line, key, err)
	}
	return fmt.Errorf("%s: %w", key, err)
}

// keyErrors names key, or the place inside its value, in each error of a decode.
func keyErrors(key string, lines map[string]int, err error) []error {
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		return []error{keyError(key, lines, err)}
	}
	var out []error
	for _, e := range joined.Unwrap() {
		var fe *fieldError
		if errors.As(e, &fe) {
			out = append(out, keyError(key+fe.path, lines, fe.err))
		} else {
			out = append(out, keyError(key, lines, e))
		}
	}
	return out
}

// annotateLines adds file lines to validation errors that name a key set in the file.
func annotateLines(err error, lines map[string]int) error {
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		return err
	}
	var out []error
	for _, e := range joined.Unwrap() {
		var ke *KeyError
		if errors.As(e, &ke) {
			if line, ok := lineOf(lines, ke.Key); ok {
				e = fmt.Errorf("line %d: %w", line, e)
			}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// lineOf returns the line of key; for a key inside a list entry that the file leaves out
// (a missing rules[0].name), the line of the entry.
func lineOf(lines map[string]int, key string) (int, bool) {
	if line, ok := lines[key]; ok {
		return line, true
	}
	if i := strings.LastIndexByte(key, ']'); i >= 0 {
		line, ok := lines[key[:i+1]]
		return line, ok
	}
	return 0, false
}

// checkKeys walks the YAML document and refuses keys that are not settings, with the line
// and the nearest known key. It returns the line of every key set.
func checkKeys(data []byte, fs []field) (map[string]int, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	lines := map[string]int{}
	if len(doc.Content) == 0 { // empty file
		return lines, nil
	}
	known := map[string]bool{}  // leaf keys
	groups := map[string]bool{} // keys of sections
	for _, f := range fs {
		known[f.key] = true
		for i := range f.key {
			if f.key[i] == '.' {
				groups[f.key[:i]] = true
			}
		}
	}
	var errs []error
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		if n.Kind != yaml.MappingNode {
			what := "the document"
			if prefix != "" {
				what = strings.TrimSuffix(prefix, ".")
			}
			errs = append(errs, fmt.Errorf("line %d: %s must be a mapping of keys", n.Line, what))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			key := prefix + k.Value
			lines[key] = k.Line
			switch {
			case known[key]:
				entryLines(lines, key, val)
			case groups[key]:
				walk(val, key+".")
			default:
				msg := fmt.Sprintf("line %d: unknown key %q", k.Line, key)
				if near := nearest(key, fs); near != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", near)
				}
				errs = append(errs, errors.New(msg))
			}
		}
	}
	walk(doc.Content[0], "")
	return lines, errors.Join(errs...)
}

// entryLines records the line of each entry of a list of sections and of the keys in it, as
// key[i] and key[i].sub.key, for the errors that name them.
func entryLines(lines map[string]int, key string, n *yaml.Node) {
	if n.Kind != yaml.SequenceNode {
		return
	}
	for i, item := range n.Content {
		k := fmt.Sprintf("%s[%d]", key, i)
		lines[k] = item.Line
		fieldLines(lines, k, item)
	}
}

// fieldLines records the line of each key under prefix in the mapping n.
func fieldLines(lines map[string]int, prefix string, n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := prefix + "." + n.Content[i].Value
		lines[k] = n.Content[i].Line
		fieldLines(lines, k, n.Content[i+1])
	}
}

// nearest returns the known key closest to key by edit distance, if close enough.
func nearest(key string, fs []field) string {
	best, bestD := "", 4
	for _, f := range fs {
		if d := editDistance(key, f.key); d < bestD {
			best, bestD = f.key, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

var durationType = reflect.TypeFor[time.Duration]()

// decodeAuto reads into dst, a duration type with an auto value: auto, or a duration not
// below 0 (so that no duration reads as auto); invalid is the error, with a %q for raw.
func decodeAuto(raw any, dst reflect.Value, auto int64, invalid string) error {
	if x, ok := raw.(string); ok && strings.TrimSpace(x) == "auto" {
		dst.SetInt(auto)
		return nil
	}
	if v := reflect.ValueOf(raw); v.IsValid() && v.Type() == dst.Type() {
		dst.SetInt(v.Int())
		return nil
	}
	d, err := parseDuration(raw)
	if err != nil || d < 0 {
		return fmt.Errorf(invalid, fmt.Sprint(raw))
	}
	dst.SetInt(int64(d))
	return nil
}

// decodeValue decodes a raw value from the file, the environment or a flag into dst.
func decodeValue(raw any, dst reflect.Value) error {
	switch dst.Type() {
	case durationType:
		d, err := parseDuration(raw)
		if err != nil {
			return err
		}
		dst.SetInt(int64(d))
		return nil
	case reflect.TypeFor[Capacity]():
		return decodeAuto(raw, dst, int64(CapacityAuto), "invalid capacity %q: use auto, or a positive duration such as 500ms")
	case reflect.TypeFor[LastCall]():
		return decodeAuto(raw, dst, int64(LastCallAuto), "invalid last call %q: use auto (a fifth of queue_timeout), 0 (off), or a duration such as 1s")
	case reflect.TypeFor[ByteSize]():
		b, err := parseByteSize(raw)
		if err != nil {
			return err
		}
		dst.SetInt(int64(b))
		return nil
	}
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result:           dst.Addr().Interface(),
		WeaklyTypedInput: true,
		ErrorUnused:      true, // a misspelt key inside a list entry (admission.policers)
		DecodeHook:       mapstructure.StringToSliceHookFunc(","),
	})
	if err != nil {
		return err
	}
	if err := dec.Decode(raw); err != nil {
		return decodeErrors(err)
	}
	return nil
}

// fieldError is a bad value inside a key's value, at path: [1] (an item of a list) or
// [1].match (a key of an entry of a list of sections).
type fieldError struct {
	path string
	err  error
}

func (e *fieldError) Error() string { return e.path + ": " + e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

// decodeErrors returns every error of a decode, each with where in the value it is.
func decodeErrors(err error) error {
	var out []error
	var walk func(e error)
	walk = func(e error) {
		var de *mapstructure.DecodeError
		switch x := e.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				walk(e)
			}
		case *mapstructure.DecodeError:
			if x.Name() == "" {
				out = append(out, x.Unwrap())
			} else {
				out = append(out, &fieldError{path: x.Name(), err: x.Unwrap()})
			}
		default:
			if errors.As(e, &de) { // "decoding failed due to the following error(s)"
				walk(errors.Unwrap(e))
			} else {
				out = append(out, e)
			}
		}
	}
	walk(err)
	return errors.Join(out...)
}

// parseDuration accepts a Go duration string ("500ms", "5s", "1h30m"), or 0. A bare number
// is refused: it is too easy to mean milliseconds and get nanoseconds.
func parseDuration(raw any) (time.Duration, error) {
	switch x := raw.(type) {
	case time.Duration:
		return x, nil
	case int:
		if x == 0 {
			return 0, nil
		}
	case string:
		s := strings.TrimSpace(x)
		if s == "0" {
			return 0, nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q: use a number with a unit, such as 500ms, 5s or 1h", x)
		}
		return d, nil
	}
	return 0, fmt.Errorf("invalid duration %v: use a number with a unit, such as 500ms, 5s or 1h", raw)
}
