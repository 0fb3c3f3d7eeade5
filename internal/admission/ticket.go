package admission

import "time"

// State is where a ticket's unit is.
type State uint8

const (
	// Idle: not in the controller (never arrived, refused, timed out, or released).
	Idle State = iota
	// Blocked: waiting in the session gate's blocking queue.
	Blocked
	// Queued: waiting for capacity.
	Queued
	// Admitted: running; its cost is charged until Release.
	Admitted
)

func (s State) String() string {
	return [...]string{"idle", "blocked", "queued", "admitted"}[s]
}

// Request describes a unit asking for admission.
type Request struct {
	// Type is the unit's request type key, for listings.
	Type uint64
	// Shape groups the units that take about as long as each other alone, for the
	// adaptive capacity's solo times (0: by Type). A type may gather statements of very
	// different costs, and one solo time for them all would swing with which ran alone last.
	Shape uint64
	// Cost is the unit's expected cost, charged while it runs.
	Cost time.Duration
	// Service is how long the unit is expected to run, its expected service time: the aging
	// bound is a multiple of it. Zero means Cost (costs measured as busy time).
	Service time.Duration
	// Txn says the unit is a transaction, for max_open_transactions.
	Txn bool
	// Accepted says the unit's session was admitted before (AWAIT).
	Accepted bool
	// Conn identifies the client connection, for listings.
	Conn uint64
	// Holding says the unit's session already holds a backend connection that admitted
	// units may need (pooled mode: a transaction opened by BEGIN, a pinned session). It is
	// admitted at once, and charged: waiting while it holds the connection could leave the
	// units admitted meanwhile without one. Such units are as many as the pool's
	// connections at most.
	Holding bool
	// Unmeasured says that Cost is a default, not a measurement: the unit's type has no
	// sample yet. Admission charges such a unit coldCharge instead, and counts it lengthy
	// under the reserve, until its type is measured.
	Unmeasured bool
}

// shape is what the unit's solo time is kept by.
func (r *Request) shape() uint64 {
	if r.Shape != 0 {
		return r.Shape
	}
	return r.Type
}

// service is the unit's expected service time.
func (r *Request) service() time.Duration {
	if r.Service > 0 {
		return r.Service
	}
	return r.Cost
}

// Heap slots of Ticket.pos: where the ticket sits in each heap that may hold it at once.
const (
	slotOrder    = iota // the queue's order heap, or one of its heaps aside (blocked, held, parked, probing)
	slotBound           // the queue's aging-bound heap
	slotDeadline        // the queue's deadline heap
	slotQuick           // the queue's quick units waiting under fifo with the reserve
	numSlots
	// slotRunning is the granter's heap of running units. A unit enters it only once it
	// has left every heap of the queue, so it takes the order's slot.
	slotRunning = slotOrder
)

// Ticket carries one unit through admission. The caller owns it and may reuse it for its
// next unit once the previous one is Idle again. Its fields belong to the Controller.
type Ticket struct {
	req      Request
	state    State
	seq      uint64
	arrived  time.Time
	deadline time.Time
	// bound is when the unit must go first (SJF with Aging or LastCall): when it has waited
	// Aging times its expected service time, or LastCall before its deadline.
	bound time.Time
	// waited is how long the unit waited before admission.
	waited time.Duration
	// end is when the admitted unit is expected to end: its admission plus its expected
	// service time.
	end time.Time
	pos [numSlots]int
	// gated: the unit holds an active slot of the session gate.
	gated bool
	// lane: the unit runs in the lengthy lane, inside the reserve.
	lane bool
	// lengthy: the admitted unit's cost counts in the lengthy load.
	lengthy bool
	// lengthyWait: the waiting unit counts against the lengthy units' share of the queue.
	lengthyWait bool
	// held: the transaction waits aside for an open transaction to end.
	held bool
	// parked: the lengthy unit waits aside for room in the lengthy lane.
	parked bool
	// probe: the unit is the first of its unmeasured type, charged the default cost;
	// later units of the type wait aside (probing) until it ends.
	probe   bool
	probing bool
	// alone: the unit started with no other running; admitNo is the granter's count of
	// admissions at its own, so that it ran alone throughout if no other came after it.
	alone   bool
	admitNo uint64
	err     error
	ready   chan struct{}
}

// State returns where the unit is.
func (t *Ticket) State() State { return t.state }

// Waited returns how long the admitted unit waited.
func (t *Ticket) Waited() time.Duration { return t.waited }

// Err returns why the unit was refused, once it is Idle.
func (t *Ticket) Err() error { return t.err }

// reset readies the ticket for a new unit, req, the seq-th to arrive, at now. Its channel
// is kept, emptied of a signal left from an earlier unit.
func (t *Ticket) reset(req Request, seq uint64, now time.Time) {
	*t = Ticket{req: req, seq: seq, arrived: now, ready: t.ready}
	for i := range t.pos {
		t.pos[i] = -1
	}
	if t.ready != nil {
		select {
		case <-t.ready:
		default:
		}
	}
}

// signal wakes the unit's Wait.
func signal(t *Ticket) {
	select {
	case t.ready <- struct{}{}:
	default:
	}
}
