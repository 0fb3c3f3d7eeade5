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
// the file, a fleet's shared settings, the environment, the flags that were set.
type Sources struct {
	// File is a YAML file; empty means none.
	File string
	// Shared are the settings read from a fleet's etcd prefix (fleet.shared_config), by
	// dotted name (admission.capacity, rules), each value the YAML text of the setting's
	// value as the file would give it (80ms, true, or a list of rules). Only SharedKeys may
	// be set. Empty means none.
	Shared map[string]string
	// SharedPrefix is the etcd prefix Shared was read under (Fleet.ConfigPrefix, such as
	// /gatekeeper/config/); errors name a shared setting by its etcd key, SharedPrefix and
	// the setting's name.
	SharedPrefix string
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
// and where its value came from: the file's line, or the etcd key of a shared setting.
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
	at := places{}
	var errs []error
	if src.File != "" {
		data, err := os.ReadFile(src.File)
		if err != nil {
			return Config{}, fmt.Errorf("config: %w", err)
		}
		lines, err := checkKeys(data, fs)
		switch {
		case lines == nil: // not YAML
			return Config{}, fmt.Errorf("config %s: %w", src.File, err)
		case err != nil:
			errs = append(errs, err) // unknown keys: reported with the bad values below
		}
		for key, line := range lines {
			at[key] = fmt.Sprintf("line %d", line)
		}
		v.SetConfigType("yaml")
		if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
			return Config{}, fmt.Errorf("config %s: %w", src.File, err)
		}
	}
	if err := checkEnv(os.Environ(), fs); err != nil {
		errs = append(errs, err)
	}
	if len(src.Shared) > 0 {
		overlay, err := sharedOverlay(src, fs, at)
		if err != nil {
			errs = append(errs, err)
		}
		if err := v.MergeConfigMap(overlay); err != nil {
			return Config{}, err
		}
	}
	for name, key := range src.FlagKeys {
		if f := src.Flags.Lookup(name); f != nil {
			if err := v.BindPFlag(key, f); err != nil {
				return Config{}, err
			}
		}
	}
	for _, f := range fs {
		if os.Getenv(EnvName(f.key)) != "" || flagSet(src, f.key) { // as viper reads them
			at.set(f.key, "") // an error names the key alone, not the line its value lost to
		}
	}

	cfg := Default()
	out := reflect.ValueOf(&cfg).Elem()
	decoded := true
	for _, f := range fs {
		dst := out.FieldByIndex(f.index)
		raw := v.Get(f.key)
		if _, ok := raw.(string); ok && isSectionList(f.typ) {
			errs = append(errs, fmt.Errorf("%s: a list of sections is set only in the configuration file or a fleet's shared settings, not in %s or a flag", f.key, EnvName(f.key)))
			decoded = false
			continue
		}
		if err := decodeValue(raw, dst); err != nil {
			errs = append(errs, keyErrors(f.key, at, err)...)
			decoded = false
		}
	}
	if decoded && len(cfg.Backends.Servers) > 0 && !setBy(src, at, "backends.primary") {
		cfg.Backends.Primary = "" // found among the servers at start
	}
	if decoded {
		if err := cfg.Validate(); err != nil {
			errs = append(errs, annotatePlaces(err, at))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, withFile(src.File, err)
	}
	return cfg, nil
}

// setBy tells whether key was set by a source (the file, the fleet's shared settings, the
// environment, a flag given on the command line) rather than left to its default.
func setBy(src Sources, at places, key string) bool {
	if _, ok := at[key]; ok {
		return true
	}
	if _, ok := os.LookupEnv(EnvName(key)); ok {
		return true
	}
	return flagSet(src, key)
}

// flagSet tells whether a flag given on the command line sets key.
func flagSet(src Sources, key string) bool {
	for name, k := range src.FlagKeys {
		if f := src.Flags.Lookup(name); k == key && f != nil && f.Changed {
			return true
		}
	}
	return false
}

// places says where the value of each key came from, for its errors: "line 12" of the
// file, or "etcd key /gatekeeper/config/rules". A key set by the environment or a flag has
// none: its errors name the key alone.
type places map[string]string

// set records that the value of key, and every key inside it (rules[0], rules[0].name),
// came from place; an empty place forgets where it came from.
func (p places) set(key, place string) {
	for k := range p {
		if k == key || strings.HasPrefix(k, key+"[") || strings.HasPrefix(k, key+".") {
			delete(p, k)
		}
	}
	if place != "" {
		p[key] = place
	}
}

// of returns the place of key; for a key inside a list entry that has none of its own (a
// missing rules[0].name), the place of the entry, else of the list.
func (p places) of(key string) (string, bool) {
	if place, ok := p[key]; ok {
		return place, true
	}
	if i := strings.LastIndexByte(key, ']'); i >= 0 {
		if place, ok := p[key[:i+1]]; ok {
			return place, true
		}
		place, ok := p[key[:strings.IndexByte(key, '[')]]
		return place, ok
	}
	return "", false
}

// isSectionList tells whether t is a list of sections (admission.policers, rules), which
// only the file and a fleet's shared settings can write.
func isSectionList(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct
}

func withFile(file string, err error) error {
	if file == "" {
		return fmt.Errorf("config: %w", err)
	}
	return fmt.Errorf("config %s: %w", file, err)
}

func keyError(key string, at places, err error) error {
	if place, ok := at.of(key); ok {
		return fmt.Errorf("%s: %s: %w", place, key, err)
	}
	return fmt.Errorf("%s: %w", key, err)
}

// keyErrors names key, or the place inside its value, in each error of a decode.
func keyErrors(key string, at places, err error) []error {
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		return []error{keyError(key, at, err)}
	}
	var out []error
	for _, e := range joined.Unwrap() {
		var fe *fieldError
		if errors.As(e, &fe) {
			out = append(out, keyError(key+fe.path, at, fe.err))
		} else {
			out = append(out, keyError(key, at, e))
		}
	}
	return out
}

// annotatePlaces adds where the value came from (a file line, an etcd key) to validation
// errors that name a key.
func annotatePlaces(err error, at places) error {
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		return err
	}
	var out []error
	for _, e := range joined.Unwrap() {
		var ke *KeyError
		if errors.As(e, &ke) {
			if place, ok := at.of(ke.Key); ok {
				e = fmt.Errorf("%s: %w", place, e)
			}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
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
	known, groups := keySets(fs)
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
				if near := nearest(key, keysOf(fs)); near != "" {
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

// keySets returns the settable keys of fs and the keys of the sections that hold them.
func keySets(fs []field) (known, groups map[string]bool) {
	known, groups = map[string]bool{}, map[string]bool{}
	for _, f := range fs {
		known[f.key] = true
		for i := range f.key {
			if f.key[i] == '.' {
				groups[f.key[:i]] = true
			}
		}
	}
	return known, groups
}

func keysOf(fs []field) []string {
	keys := make([]string, len(fs))
	for i, f := range fs {
		keys[i] = f.key
	}
	return keys
}

// nearest returns the name among known closest to name by edit distance, if close enough
// to be a misspelling of it (a quarter of its length off, one for a short name, three at
// most): a key of the file or etcd, or an environment variable.
func nearest(name string, known []string) string {
	best, bestD := "", min(3, max(1, len(name)/4))+1
	for _, k := range known {
		if d := editDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// notSettings are the GATEKEEPER_ variables that are not settings but that the project
// itself sets, so that a proxy started with one is not refused: the descriptor a
// hand-over passes to the new process (handover.EnvFD), and the variables of
// bench/overhead.sh, which the proxies it starts inherit.
var notSettings = []string{
	"GATEKEEPER_HANDOVER_FD",
	"GATEKEEPER_BASELINE",
	"GATEKEEPER_BASELINE_MODE",
	"GATEKEEPER_BASELINE_ENV",
}

// checkEnv refuses every GATEKEEPER_ variable of environ (os.Environ) that sets no key, with
// the nearest variable that does: a misspelt variable is a setting the operator believes in
// and does not have.
func checkEnv(environ []string, fs []field) error {
	prefix := EnvPrefix + "_"
	keyOf := map[string]string{} // by variable, less the prefix
	var names []string
	for _, f := range fs {
		name := strings.TrimPrefix(EnvName(f.key), prefix)
		keyOf[name] = f.key
		names = append(names, name)
	}
	var errs []error
	for _, kv := range slices.Sorted(slices.Values(environ)) {
		name, _, _ := strings.Cut(kv, "=")
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok || keyOf[rest] != "" || slices.Contains(notSettings, name) {
			continue
		}
		if near := nearest(strings.ToUpper(rest), names); near != "" {
			errs = append(errs, fmt.Errorf("%s: names no setting; did you mean %s (%s)?", name, prefix+near, keyOf[near]))
		} else {
			errs = append(errs, fmt.Errorf("%s: names no setting, and none is close: docs/configuration.md lists every setting; its variable is %s_ and the key in upper case, dots as underscores", name, EnvPrefix))
		}
	}
	return errors.Join(errs...)
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
