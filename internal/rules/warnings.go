package rules

import (
	"fmt"
	"strings"
)

// Warning is a rule some or all of whose actions can never apply, because earlier rules
// decide them first for every statement it matches.
type Warning struct {
	// Rule is the rule's name and Index its place in the list, from 0.
	Rule  string
	Index int
	// Never tells that nothing the rule sets ever applies; otherwise only some of its
	// actions never do.
	Never bool
	// Reason names the actions and the earlier rules that decide them.
	Reason string
}

func (w Warning) String() string {
	return fmt.Sprintf("rule %d %q: %s", w.Index, w.Rule, w.Reason)
}

// action names what a rule may set, in the order warnings list them.
type action string

const (
	actDeny        action = "deny"
	actCache       action = "cache"
	actRoute       action = "route"
	actConsistency action = "consistency"
	actLimit       action = "max_concurrent"
)

var actions = []action{actDeny, actCache, actRoute, actConsistency, actLimit}

// sets tells whether r sets a.
func (r *Rule) sets(a action) bool {
	switch a {
	case actDeny:
		return r.Deny != ""
	case actCache:
		return r.Cache != CacheUnset
	case actRoute:
		return r.Route != RouteUnset
	case actConsistency:
		return r.Consistency != ""
	case actLimit:
		return r.MaxConcurrent != 0
	}
	return false
}

// warnings returns a Warning for each rule with an action that earlier rules always decide.
func (s *Set) warnings() []Warning {
	var out []Warning
	for j := range s.rules {
		if w, ok := s.shadowed(j); ok {
			out = append(out, w)
		}
	}
	return out
}

// shadowed tells what of rule j the rules before it decide for every statement it matches.
func (s *Set) shadowed(j int) (Warning, bool) {
	later := &s.rules[j]
	w := Warning{Rule: later.Name, Index: j}
	decidedBy := map[action]string{}
	for i := range s.rules[:j] {
		earlier := &s.rules[i]
		if !earlier.covers(later) {
			continue
		}
		if earlier.Deny != "" {
			w.Never = true
			w.Reason = fmt.Sprintf("never reached: rule %d %q before it matches every statement it matches and refuses them", i, earlier.Name)
			return w, true
		}
		for _, a := range actions {
			if _, done := decidedBy[a]; !done && earlier.sets(a) {
				decidedBy[a] = fmt.Sprintf("%s by rule %d %q", a, i, earlier.Name)
			}
		}
	}
	var shadowed []string
	set := 0
	for _, a := range actions {
		if !later.sets(a) {
			continue
		}
		set++
		if by, ok := decidedBy[a]; ok {
			shadowed = append(shadowed, by)
		}
	}
	if len(shadowed) == 0 {
		return w, false
	}
	w.Never = len(shadowed) == set
	what := "never decides anything"
	if !w.Never {
		what = "never decides part of what it sets"
	}
	w.Reason = fmt.Sprintf("%s: earlier rules that match every statement it matches decide it first (%s)",
		what, strings.Join(shadowed, "; "))
	return w, true
}

// covers tells whether c matches every statement that later matches: each of c's conditions
// is also one of later's, the same (a bare table name also covers that table in a schema).
// Regular expressions are compared by their text, so covers may say false when the answer
// is yes, never the other way.
func (c *compiled) covers(later *compiled) bool {
	m, n := &c.Match, &later.Match
	switch {
	case m.Type != "" && m.Type != n.Type,
		m.User != "" && m.User != n.User,
		m.Schema != "" && !strings.EqualFold(m.Schema, n.Schema),
		c.table != "" && (c.table != later.table || (c.schema != "" && c.schema != later.schema)),
		m.Digest != nil && (n.Digest == nil || m.Digest.String() != n.Digest.String()):
		return false
	}
	return true
}
