package sim

import "time"

// eventKind says what an event does when its time comes.
type eventKind uint8

const (
	// evIssue: a client's think time is over (or an open-loop arrival is due): its
	// request is issued.
	evIssue eventKind = iota
	// evArrival: the next open-loop request or new session arrives.
	evArrival
	// evDeadline: a waiting request reaches its queue timeout.
	evDeadline
	// evSpeed: the database's speed changes (gen indexes DatabaseConfig.Changes).
	evSpeed
	// evTick: the controller's periodic work, every tickEvery while the adaptive capacity
	// is on or the run is traced, as the proxy ticks it.
	evTick
	// evInterval: a fleet's members publish their records and take their shares.
	evInterval
	// evMember: a fleet member joins or leaves (gen is its index).
	evMember
)

// event is something due at a time. Events at the same time run in the order they were
// scheduled, so that a run depends on its seed alone.
type event struct {
	at   time.Duration
	seq  uint64
	kind eventKind
	req  *request
	gen  uint64 // the request's generation it was scheduled for
}

// eventQueue is a min-heap of events by time, then by scheduling order.
type eventQueue struct {
	items []event
	seq   uint64
}

func (q *eventQueue) len() int { return len(q.items) }

func (q *eventQueue) less(i, j int) bool {
	a, b := &q.items[i], &q.items[j]
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

func (q *eventQueue) push(e event) {
	q.seq++
	e.seq = q.seq
	q.items = append(q.items, e)
	for i := len(q.items) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.items[i], q.items[p] = q.items[p], q.items[i]
		i = p
	}
}

// peek returns the time of the next event; q must not be empty.
func (q *eventQueue) peek() time.Duration { return q.items[0].at }

func (q *eventQueue) pop() event {
	top := q.items[0]
	last := len(q.items) - 1
	q.items[0] = q.items[last]
	q.items = q.items[:last]
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(q.items) {
			break
		}
		m := l
		if r := l + 1; r < len(q.items) && q.less(r, l) {
			m = r
		}
		if !q.less(m, i) {
			break
		}
		q.items[i], q.items[m] = q.items[m], q.items[i]
		i = m
	}
	return top
}
