package proxy

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
	"github.com/gatekeeperdb/gatekeeper/internal/routing"
	"github.com/gatekeeperdb/gatekeeper/internal/rules"
)

// ruleState is what the query rules decided for the command, and the buffers their view of
// it is built in.
type ruleState struct {
	verdict rules.Verdict
	// mode is the consistency a rule asks of the statement, over its hint.
	mode routing.Rule
	st   rules.Statement
}

// applyRules is the query rules' step, right after classification: it decides what the
// rules say of the command's statement, refuses it when a rule denies it, and applies the
// route and consistency rules ask for. ok is false when the command was refused; keep then
// tells whether the session goes on.
func (s *session) applyRules(p *plan) (ok, keep bool) {
	r := &p.rules
	r.verdict, r.mode = rules.Verdict{}, routing.Rule{}
	set := s.rules.Load()
	if set.Len() == 0 || !p.stmt.valid || (p.op != mysql.COM_QUERY && p.op != mysql.COM_STMT_EXECUTE) {
		return true, true
	}
	s.ruleStatement(p)
	set.Apply(&r.st, &r.verdict)
	v := &r.verdict
	if v.Deny != nil {
		if !s.cmd.Complete() && s.client.DiscardCommand(&s.cmd) != nil {
			return false, false
		}
		s.sendError(errDenied(v.Deny.Name, v.Deny.Deny))
		return false, s.client.IOErr() == nil
	}
	if v.Consistency != "" {
		c, err := replicas.ParseConsistency(v.Consistency) // validated with the rules
		r.mode = routing.Rule{Mode: c, Set: err == nil}
	}
	if v.Route == rules.RouteReplica && !s.inTxn && s.autocommit && p.stmt.Kind != classify.Read {
		// The rule vouches that the statement only reads.
		p.stmt.Kind, p.stmt.Opaque = classify.Read, false
	}
	return true, true
}

// ruleStatement fills what the rules look at: the statement's tag, the user, the schema,
// the digest and the tables. The strings point into the session's buffers, which hold
// still while the rules look.
func (s *session) ruleStatement(p *plan) {
	st := &p.rules.st
	st.Type, st.User, st.Schema, st.Digest = bytesString(p.stmt.tag), s.user, s.schema, p.stmt.digest
	st.Tables = st.Tables[:0]
	if p.stmt.Tables != nil {
		read, written := p.stmt.Tables.Keys()
		for _, t := range read {
			st.Tables = append(st.Tables, bytesString(t))
		}
		for _, t := range written {
			st.Tables = append(st.Tables, bytesString(t))
		}
	}
}

// bytesString views b as a string without copying; b must not change while it is used.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// routedToPrimary tells whether a rule sends the command's unit to the primary.
func (p *plan) routedToPrimary() bool { return p.rules.verdict.Route == rules.RoutePrimary }

// limit waits for a slot of the max_concurrent of the rule the new unit matched, bounded by
// admission.queue_timeout. The unit holds it until it ends. ok is false when the unit was
// refused; keep then tells whether the session goes on.
func (s *session) limit(p *plan) (ok, keep bool) {
	l := p.rules.verdict.Limit
	if l == nil || s.unit.open {
		return true, true
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Admission.QueueTimeout)
	defer cancel()
	start := time.Now()
	if err := l.Acquire(ctx); err != nil {
		s.releaseUnit()
		if !s.cmd.Complete() && s.client.DiscardCommand(&s.cmd) != nil {
			return false, false
		}
		s.sendError(errRuleLimit(p.rules.verdict.LimitRule.Name, l.Max(), time.Since(start)))
		return false, s.client.IOErr() == nil
	}
	s.unit.limit = l
	return true, true
}

// releaseLimit gives back the slot the unit holds, if any.
func (s *session) releaseLimit() {
	if s.unit.limit != nil {
		s.unit.limit.Release()
		s.unit.limit = nil
	}
}

func errDenied(rule, msg string) *clientError {
	return &clientError{code: codeNotAllowed, state: stateAccess, msg: fmt.Sprintf(
		"gatekeeper: refused by query rule %q: %s", rule, msg)}
}

func errRuleLimit(rule string, n int, waited time.Duration) *clientError {
	return &clientError{code: codeLockWaitTimeout, state: stateGeneral, msg: fmt.Sprintf(
		"gatekeeper: query rule %q lets %d such units run at once (max_concurrent) and none finished within %v (admission.queue_timeout); retry later",
		rule, n, waited.Round(time.Millisecond))}
}
