package rules

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Match is a rule's conditions; every one that is set must hold. A Match with none set
// matches every statement.
type Match struct {
	// Type is the statement's gk:type tag, compared exactly.
	Type string
	// User is the login user, compared exactly.
	User string
	// Schema is the current schema, compared without regard to letter case.
	Schema string
	// Table is a table the statement reads or writes: schema.table matches that table,
	// a bare table name that table in any schema; letter case is ignored.
	Table string
	// Digest must match somewhere in the statement's normalized digest (regexp.Match).
	Digest *regexp.Regexp
}

// CacheAction is what a rule says about caching a statement's result.
type CacheAction uint8

// Cache actions.
const (
	// CacheUnset leaves caching to later rules and cache.mode.
	CacheUnset CacheAction = iota
	// CacheOn caches the result, for Rule.TTL when set.
	CacheOn
	// CacheOff never caches it.
	CacheOff
)

func (c CacheAction) String() string {
	switch c {
	case CacheUnset:
		return ""
	case CacheOn:
		return "on"
	case CacheOff:
		return "off"
	}
	return "CacheAction(" + strconv.Itoa(int(c)) + ")"
}

// Route is where a rule sends a statement.
type Route uint8

// Routes.
const (
	// RouteUnset leaves the choice to later rules and the routing policy.
	RouteUnset Route = iota
	// RoutePrimary runs the statement on the primary.
	RoutePrimary
	// RouteReplica runs it on a replica that qualifies (the routing policy's consistency
	// still holds).
	RouteReplica
)

func (r Route) String() string {
	switch r {
	case RouteUnset:
		return ""
	case RoutePrimary:
		return "primary"
	case RouteReplica:
		return "replica"
	}
	return "Route(" + strconv.Itoa(int(r)) + ")"
}

// Consistency values a rule may set, as routing names them.
var consistencies = []string{"strong", "session", "eventual"}

// Rule is one query rule: conditions and the actions they trigger. Zero values leave an
// action unset.
type Rule struct {
	// Name identifies the rule in errors, warnings, counts and the deny message; unique.
	Name  string
	Match Match
	// Cache is CacheUnset, CacheOn or CacheOff.
	Cache CacheAction
	// TTL, with CacheOn, bounds how long a cached result serves hits; zero means until a
	// write to its tables invalidates it.
	TTL time.Duration
	// Route is RouteUnset, RoutePrimary or RouteReplica.
	Route Route
	// Consistency is strong, session or eventual; empty is unset.
	Consistency string
	// Deny, when set, refuses the statement with this message; it goes with no other action.
	Deny string
	// MaxConcurrent bounds the matching units that run at once through this proxy; zero is
	// unset.
	MaxConcurrent int
}

// hasAction tells whether r sets anything.
func (r *Rule) hasAction() bool {
	return r.Cache != CacheUnset || r.Route != RouteUnset || r.Consistency != "" ||
		r.Deny != "" || r.MaxConcurrent != 0
}

// String writes the rule as one line, its conditions before the arrow and its actions
// after: type=report table=shop.orders digest=/^SELECT/ => cache=30s max_concurrent=4.
func (r *Rule) String() string {
	var b strings.Builder
	m := r.Match
	cond := func(key, value string) {
		if value == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(key + "=" + value)
	}
	cond("type", m.Type)
	cond("user", m.User)
	cond("schema", m.Schema)
	cond("table", m.Table)
	if m.Digest != nil {
		cond("digest", "/"+m.Digest.String()+"/")
	}
	if b.Len() == 0 {
		b.WriteString("*")
	}
	b.WriteString(" =>")
	action := func(key, value string) {
		if value != "" {
			b.WriteString(" " + key + "=" + value)
		}
	}
	cache := r.Cache.String()
	if r.Cache == CacheOn && r.TTL > 0 {
		cache = r.TTL.String()
	}
	action("cache", cache)
	action("route", r.Route.String())
	action("consistency", r.Consistency)
	if r.MaxConcurrent > 0 {
		action("max_concurrent", strconv.Itoa(r.MaxConcurrent))
	}
	if r.Deny != "" {
		action("deny", strconv.Quote(r.Deny))
	}
	return b.String()
}

// check returns what is wrong with r on its own, or nil.
func (r *Rule) check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if r.Name == "" {
		bad("a name is required")
	}
	if !r.hasAction() {
		bad("sets no action: give it cache, route, consistency, deny or max_concurrent")
	}
	if r.Deny != "" && (r.Cache != CacheUnset || r.Route != RouteUnset || r.Consistency != "" || r.MaxConcurrent != 0) {
		bad("deny goes alone: a refused statement has nothing else applied to it")
	}
	if r.Cache > CacheOff {
		bad("cache %v is not unset, on or off", r.Cache)
	}
	if r.TTL < 0 || (r.TTL > 0 && r.Cache != CacheOn) {
		bad("ttl %s needs cache on and must be positive", r.TTL)
	}
	if r.Route > RouteReplica {
		bad("route %v is not unset, primary or replica", r.Route)
	}
	if r.Consistency != "" && !slices.Contains(consistencies, r.Consistency) {
		bad("consistency %q is not one of %s", r.Consistency, strings.Join(consistencies, ", "))
	}
	if r.MaxConcurrent < 0 {
		bad("max_concurrent %d must be at least 1 (or 0, unset)", r.MaxConcurrent)
	}
	if _, _, err := ParseTable(r.Match.Table); err != nil {
		bad("table %v", err)
	}
	return errors.Join(errs...)
}

// ParseTable reads a rule's table as the configuration writes it, schema.table or a bare
// table, into its lower-case schema (empty for a bare name) and table name.
func ParseTable(t string) (schema, table string, err error) {
	if t == "" {
		return "", "", nil
	}
	lower := strings.ToLower(t)
	schema, table, qualified := strings.Cut(lower, ".")
	if !qualified {
		schema, table = "", lower
	}
	if table == "" || (qualified && schema == "") || strings.ContainsAny(lower, "` \t") || strings.Contains(table, ".") {
		return "", "", fmt.Errorf("%q is neither schema.table nor table; write it without quotes, such as shop.orders", t)
	}
	return schema, table, nil
}

// ParseCache reads a cache action as the configuration writes it: on, off, or a
// time-to-live such as 30s (CacheOn with that TTL); empty is CacheUnset.
func ParseCache(s string) (CacheAction, time.Duration, error) {
	switch s {
	case "":
		return CacheUnset, 0, nil
	case "on":
		return CacheOn, 0, nil
	case "off":
		return CacheOff, 0, nil
	}
	ttl, err := time.ParseDuration(s)
	if err != nil || ttl <= 0 {
		return CacheUnset, 0, fmt.Errorf("%q is neither on, off nor a positive duration such as 30s", s)
	}
	return CacheOn, ttl, nil
}

// ParseRoute reads a route as the configuration writes it: primary or replica; empty is
// RouteUnset.
func ParseRoute(s string) (Route, error) {
	switch s {
	case "":
		return RouteUnset, nil
	case "primary":
		return RoutePrimary, nil
	case "replica":
		return RouteReplica, nil
	}
	return RouteUnset, fmt.Errorf("%q is not one of primary, replica", s)
}

// Statement is what the rules look at in one statement. The caller owns it and may reuse it.
type Statement struct {
	// Type is the statement's gk:type tag; User the login user; Schema the current schema.
	Type, User, Schema string
	// Digest is the normalized text: literals as ?, keywords in upper case.
	Digest []byte
	// Tables are the tables read or written, as schema.table in lower case.
	Tables []string
}

// Verdict is what the rules decide for one statement: for each action, the first matching
// rule that sets it. The *Rule fields point into the Set and must not be changed; each is nil
// while its action is unset.
type Verdict struct {
	// Deny, when set, refuses the statement with Deny.Deny, naming Deny.Name; every other
	// field is then unset.
	Deny *Rule
	// Cache and TTL are CacheRule's.
	Cache     CacheAction
	TTL       time.Duration
	CacheRule *Rule
	Route     Route
	RouteRule *Rule
	// Consistency is empty when unset.
	Consistency     string
	ConsistencyRule *Rule
	// Limit bounds the statement's unit with LimitRule's max_concurrent; nil when unset.
	Limit     *Limiter
	LimitRule *Rule
}

// Set is a compiled, immutable list of rules, safe for concurrent use. A nil *Set has no
// rules.
type Set struct {
	rules []compiled
}

// compiled is a rule with its table split and its state.
type compiled struct {
	Rule
	// schema and table are Match.Table in lower case; schema is empty for a bare name.
	schema, table string
	count         *counter
	// limiter is set when MaxConcurrent is.
	limiter *Limiter
}

// counter counts a rule's matches. It fills a cache line, so that the counters of two rules
// matched on different processors do not contend.
type counter struct {
	n atomic.Uint64
	_ [56]byte
}

// Compile checks rules and compiles them into a Set, with a warning for each rule that can
// never decide some or all of what it sets. Every problem is reported at once.
func Compile(rules []Rule) (*Set, []Warning, error) {
	return CompileFrom(nil, rules)
}

// CompileFrom is Compile for a reload: the rules named as in prev keep prev's match counts,
// and those whose max_concurrent is also unchanged keep prev's Limiter, with the units that
// hold or wait for its slots. A rule whose max_concurrent changed gets a new Limiter, while
// the old one's holders release into the old one. prev is not changed; it may be nil.
func CompileFrom(prev *Set, rules []Rule) (*Set, []Warning, error) {
	old := map[string]*compiled{}
	for i := range prev.Len() {
		old[prev.rules[i].Name] = &prev.rules[i]
	}
	s := &Set{rules: make([]compiled, len(rules))}
	names := map[string]int{}
	var errs []error
	for i, r := range rules {
		if err := r.check(); err != nil {
			errs = append(errs, fmt.Errorf("rule %d %q: %w", i, r.Name, err))
			continue
		}
		if j, dup := names[r.Name]; dup {
			errs = append(errs, fmt.Errorf("rule %d %q: rule %d has the same name; names must be unique", i, r.Name, j))
		}
		names[r.Name] = i
		s.rules[i] = compile(r, old[r.Name])
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	return s, s.warnings(), nil
}

// compile readies a checked rule, with the state of the rule of its name in the running Set
// (prev, or nil).
func compile(r Rule, prev *compiled) compiled {
	c := compiled{Rule: r, count: &counter{}}
	c.Match.Table = strings.ToLower(r.Match.Table)
	c.schema, c.table, _ = ParseTable(r.Match.Table)
	if prev != nil {
		c.count = prev.count
		if prev.MaxConcurrent == r.MaxConcurrent {
			c.limiter = prev.limiter
		}
	}
	if r.MaxConcurrent > 0 && c.limiter == nil {
		c.limiter = NewLimiter(r.MaxConcurrent)
	}
	return c
}

// Len returns the number of rules.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.rules)
}

// Apply fills v with what the rules decide for st, counting a match on every rule that
// matched. It does not allocate.
func (s *Set) Apply(st *Statement, v *Verdict) {
	*v = Verdict{}
	if s == nil {
		return
	}
	for i := range s.rules {
		c := &s.rules[i]
		if !c.matches(st) {
			continue
		}
		c.count.n.Add(1)
		if c.Deny != "" {
			*v = Verdict{Deny: &c.Rule}
			return
		}
		decide(c, v)
	}
}

// decide sets in v each action c sets that no earlier rule has.
func decide(c *compiled, v *Verdict) {
	if c.Cache != CacheUnset && v.CacheRule == nil {
		v.Cache, v.TTL, v.CacheRule = c.Cache, c.TTL, &c.Rule
	}
	if c.Route != RouteUnset && v.RouteRule == nil {
		v.Route, v.RouteRule = c.Route, &c.Rule
	}
	if c.Consistency != "" && v.ConsistencyRule == nil {
		v.Consistency, v.ConsistencyRule = c.Consistency, &c.Rule
	}
	if c.limiter != nil && v.LimitRule == nil {
		v.Limit, v.LimitRule = c.limiter, &c.Rule
	}
}

// matches tells whether every condition of c holds for st, the cheapest checked first.
func (c *compiled) matches(st *Statement) bool {
	m := &c.Match
	switch {
	case m.Type != "" && m.Type != st.Type,
		m.User != "" && m.User != st.User,
		m.Schema != "" && !strings.EqualFold(m.Schema, st.Schema),
		c.table != "" && !c.readsTable(st.Tables),
		m.Digest != nil && !m.Digest.Match(st.Digest):
		return false
	}
	return true
}

// readsTable tells whether tables (schema.table, lower case) hold c's table.
func (c *compiled) readsTable(tables []string) bool {
	for _, t := range tables {
		name := t
		if i := strings.LastIndexByte(t, '.'); i >= 0 {
			if c.schema != "" && t[:i] != c.schema {
				continue
			}
			name = t[i+1:]
		} else if c.schema != "" {
			continue
		}
		if name == c.table {
			return true
		}
	}
	return false
}

// RuleStats is one rule as GET /api/v1/rules shows it.
type RuleStats struct {
	Name string `json:"name"`
	// Rule is the rule as one line (Rule.String).
	Rule string `json:"rule"`
	// Matches counts the statements it matched, since the rule of this name was first
	// loaded.
	Matches uint64 `json:"matches"`
	// MaxConcurrent, Running and Waiting describe its Limiter; all zero without one.
	MaxConcurrent int `json:"max_concurrent,omitempty"`
	Running       int `json:"running,omitempty"`
	Waiting       int `json:"waiting,omitempty"`
}

// Snapshot returns every rule with its counts, in order.
func (s *Set) Snapshot() []RuleStats {
	if s == nil {
		return nil
	}
	out := make([]RuleStats, len(s.rules))
	for i := range s.rules {
		c := &s.rules[i]
		out[i] = RuleStats{Name: c.Name, Rule: c.Rule.String(), Matches: c.count.n.Load()}
		if c.limiter != nil {
			out[i].MaxConcurrent = c.limiter.Max()
			out[i].Running, out[i].Waiting = c.limiter.Load()
		}
	}
	return out
}
