package routing

import (
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// Reason is why a unit went where it went: the reason label of gatekeeper_reads_total.
type Reason uint8

const (
	// ReasonNone: the unit is not counted (session state, transaction control, SHOW).
	ReasonNone Reason = iota
	// Routed: a read sent to a replica at once.
	Routed
	// Waited: a read sent to a replica after it caught up.
	Waited
	// FellBack: a read sent to the primary, no replica having caught up in time or given
	// it a connection.
	FellBack
	// Transaction: a read inside a transaction.
	Transaction
	// Pinned: a read that needs the session's connection (session state, a cursor).
	Pinned
	// Write: a write, a locking read or DDL.
	Write
	// Unsure: a statement the classifier is unsure of.
	Unsure
	numReasons
)

var reasonNames = [numReasons]string{"", "routed", "waited", "fell_back_to_primary", "in_transaction", "pinned", "write", "unsure"}

func (r Reason) String() string { return reasonNames[r] }

// Decision is where a unit runs and why.
type Decision struct {
	// To is the backend a read runs on, counted there as outstanding while it runs: a
	// replica, or the primary when it takes reads. Nil: the primary, not as a read.
	To     *replicas.Backend
	Reason Reason
	// Need is what a replica had to have applied for the read (valid until the
	// session's next decision); nil when nothing.
	Need replicas.Pos
	// Cost is the read's estimated work, what balancing counts on To.
	Cost time.Duration
	// Mode is the consistency a read on a replica was routed under.
	Mode replicas.Consistency
}

// Replica tells whether the unit runs on a replica.
func (d Decision) Replica() bool { return d.To != nil && !d.To.Primary }

// Backend returns the index of the backend the unit runs on: 0 for the primary, i for the
// i-th replica (replicas.Backend.Index).
func (d Decision) Backend() int {
	if d.To == nil {
		return 0
	}
	return d.To.Index
}
