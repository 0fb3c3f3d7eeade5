package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// sharedSections are the sections a fleet's etcd prefix may set for every member: what
// admits, routes and caches a statement, on which the members must agree. Whatever names
// a proxy's own place (its addresses, backends, accounts, secrets) stays in its file.
var sharedSections = []string{"admission", "routing", "cache", "rules"}

// SharedKeys returns the settings a fleet's etcd prefix may set, in the order of the
// reference.
func SharedKeys() []string {
	var keys []string
	for _, f := range fields() {
		if sharedKey(f.key) {
			keys = append(keys, f.key)
		}
	}
	return keys
}

// IsShared tells whether key is a setting a fleet's etcd prefix may set: a key of
// admission, routing or cache, or rules, and no secret.
func IsShared(key string) bool { return slices.Contains(Keys(), key) && sharedKey(key) }

// sharedKey tells whether a key, known to be a setting, is one etcd may set.
func sharedKey(key string) bool {
	section, _, _ := strings.Cut(key, ".")
	return slices.Contains(sharedSections, section) && !isSecret(key)
}

// isSecret tells whether key names a secret, or the file that holds one, by its last
// part: a password, token or secret is never read from etcd, where every member and every
// reader of the prefix would see it, whatever section it is in.
func isSecret(key string) bool {
	name := strings.TrimSuffix(key[strings.LastIndexByte(key, '.')+1:], "_file")
	return strings.HasSuffix(name, "password") || strings.HasSuffix(name, "token") || strings.HasSuffix(name, "secret")
}

// sharedOverlay checks src.Shared and returns it as a nested map, ready to lay over the
// file's: each key a shared setting, each value YAML. It records in at where each value
// came from. A key refused is left out of the map and reported in the error, with every
// other.
func sharedOverlay(src Sources, fs []field, at places) (map[string]any, error) {
	known, groups := keySets(fs)
	var shared []string
	types := map[string]reflect.Type{}
	for _, f := range fs {
		types[f.key] = f.typ
		if sharedKey(f.key) {
			shared = append(shared, f.key)
		}
	}
	sections := strings.Join(sharedSections, ", ")
	// refusal says why key may not be shared, or "".
	refusal := func(key string) string {
		first := firstUnder(key, shared)
		switch {
		case isSecret(key):
			return fmt.Sprintf("%s is a secret, which is never read from etcd: set it in each proxy's file or environment", key)
		case groups[key] && first != "":
			return fmt.Sprintf("%s is a section, not a setting: give each of its settings a key of its own, such as %s%s", key, src.SharedPrefix, first)
		case groups[key] || (known[key] && !sharedKey(key)):
			return fmt.Sprintf("%s is not a shared setting; set it in each proxy's file (shared: %s)", key, sections)
		case !known[key]:
			if near := nearest(key, shared); near != "" {
				return fmt.Sprintf("names no setting; did you mean %s?", near)
			}
			return fmt.Sprintf("names no setting, and no shared setting is close: docs/configuration.md lists them (the keys of %s)", sections)
		}
		return ""
	}
	overlay := map[string]any{}
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(src.Shared)) {
		place := "etcd key " + src.SharedPrefix + key
		if why := refusal(key); why != "" {
			errs = append(errs, fmt.Errorf("%s: %s", place, why))
			continue
		}
		value, err := parseShared(src.Shared[key], types[key])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", place, key, err))
			continue
		}
		setPath(overlay, key, value)
		at.set(key, place)
	}
	return overlay, errors.Join(errs...)
}

// parseShared reads the YAML text of a shared setting of type t, as the file would give it;
// the value is decoded and checked with the others.
func parseShared(text string, t reflect.Type) (any, error) {
	var value any
	if err := yaml.Unmarshal([]byte(text), &value); err != nil {
		return nil, fmt.Errorf("not a YAML value: %w", err)
	}
	if value == nil {
		return nil, errors.New("holds no value: give one, or delete the key to leave the setting to each proxy's file")
	}
	if _, ok := value.([]any); !ok && isSectionList(t) {
		return nil, errors.New("must be a YAML list of entries, each a mapping as in the file (- name: ...)")
	}
	return value, nil
}

// firstUnder returns the first shared setting in section, or "".
func firstUnder(section string, shared []string) string {
	for _, k := range shared {
		if strings.HasPrefix(k, section+".") {
			return k
		}
	}
	return ""
}

// setPath sets the dotted key in the nested map m.
func setPath(m map[string]any, key string, value any) {
	parts := strings.Split(key, ".")
	for _, p := range parts[:len(parts)-1] {
		sub, ok := m[p].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[p] = sub
		}
		m = sub
	}
	m[parts[len(parts)-1]] = value
}
