// Package rules decides what the operator's query rules say about one statement: whether it
// is refused, cached, sent to the primary or a replica, read at which consistency, and
// bounded by which concurrency limit.
//
// # The model
//
// The rules follow ProxySQL's mysql_query_rules: an ordered list, each rule a conjunction of
// match conditions (request type, user, schema, a table, a regular expression over the
// digest) and a set of actions. ProxySQL lets a later rule override an earlier one unless
// the earlier says apply=1; here the first matching rule that sets an action decides it, and
// later rules can only decide the actions still open. The list then reads as priorities, top
// down, as a firewall's does: specific rules go first, broad defaults last. It also makes a
// rule that can never decide anything detectable at load time (see below), which an
// override model cannot tell apart from a deliberate override. A deny ends the evaluation:
// the statement is refused and nothing else applies to it.
//
// # The hot path
//
// Compile turns the list into a Set, which is immutable and safe for concurrent use. Apply
// fills a caller-owned Verdict without allocating: conditions are checked cheapest first
// (strings before tables before the regular expression), and each rule that matches counts
// it on an atomic counter of its own, padded to a cache line so that rules do not share one.
// Every rule is evaluated, not only until every action is decided, so that the counts say
// which rules the traffic reaches; a deny stops it.
//
// # Reload
//
// A reload compiles a new Set and the caller swaps it in with an atomic.Pointer, as an RCU
// reader-writer would: statements in flight keep the Set they started with. CompileFrom
// carries two things over by rule name from the running Set: the match counters, so that
// counts continue across reloads, and the Limiter of a rule whose max_concurrent is
// unchanged, so that the units holding its slots release them into the limiter that new
// units wait on. A rule whose max_concurrent changed gets a new Limiter; the units that hold
// the old one release into it, so for a while both bounds are spent at once. Compiling never
// changes the running Set: a reload that another component refuses leaves it as it was.
//
// # Never-match warnings
//
// Compile reports, without refusing, a rule some or all of whose actions can never apply:
// an earlier rule whose match is equal or broader (each of its conditions is also one of the
// later rule's, the same; an empty match is broader than all; a bare table name is broader
// than the same table in a schema) sets the same action, or refuses every statement the
// later rule matches. The check is conservative: it warns only when it is certain, so two
// regular expressions are compared by their text alone.
package rules
