package admission

import (
	"slices"
	"time"
)

// granter holds the capacity and what runs against it: it decides whether there is room for
// a unit (fits) and when there will be (startOf), and keeps the reserve for quick units, with
// the lengthy lane inside it and the lane's pace. It never orders the waiting units: the
// queue does. The adjuster, when on, sets its capacity and the bound it learnt on running
// units.
type granter struct {
	// The limits, from Config; capacity is Config.Capacity, or where the adjuster set it.
	capacity       time.Duration
	maxConcurrency int
	maxOpenTxns    int
	queueTimeout   time.Duration // for the lane's least pace (see paceFloor)
	reserveCfg     ReserveConfig
	// learnt is the adjuster's bound on running units (0: none); solo says a solo check
	// holds the database to one unit at a time.
	learnt int
	solo   bool
	// heldUntil: until then nothing new starts (another member of a fleet times units
	// alone; see Controller.Hold).
	heldUntil time.Time
	// busyElsewhere: other members of a fleet may be running units on the database, so
	// that a unit that starts with none of this controller's own running is not alone in
	// it (see Controller.Drained).
	busyElsewhere bool

	load        time.Duration // expected cost of the running units
	lengthyLoad time.Duration // the part of load that lengthy units hold (with the reserve on)
	running     int
	openTxns    int
	lane        int       // lengthy units running inside the reserve
	admits      uint64    // units admitted, ever
	active      heap      // the running units by expected end
	ends        []*Ticket // scratch for startOf
	reserve     reserve
	pace        pace
}

func (g *granter) init(cfg Config, now time.Time) {
	g.active = heap{less: byEnd, slot: slotRunning}
	g.pace.reset(cfg.Reserve.LaneRate, now)
	g.set(cfg)
}

// configure takes the limits from cfg; the lane's pace starts again when the reserve changed.
func (g *granter) configure(cfg Config, now time.Time) {
	if g.reserveCfg != cfg.Reserve {
		g.pace.reset(cfg.Reserve.LaneRate, now)
	}
	g.set(cfg)
}

func (g *granter) set(cfg Config) {
	g.maxConcurrency, g.maxOpenTxns = cfg.MaxConcurrency, cfg.MaxOpenTransactions
	g.queueTimeout, g.reserveCfg = cfg.QueueTimeout, cfg.Reserve
	g.setCapacity(cfg.Capacity)
}

// setCapacity moves the capacity to v; the reserve keeps within it.
func (g *granter) setCapacity(v time.Duration) {
	g.capacity = v
	g.reserve.value = min(g.reserve.value, v)
}

func byEnd(a, b *Ticket) bool {
	if !a.end.Equal(b.end) {
		return a.end.Before(b.end)
	}
	return a.seq < b.seq
}

// lengthy says whether t is a lengthy unit of the reserve (see ReserveConfig.lengthy).
func (g *granter) lengthy(t *Ticket) bool { return g.reserveCfg.lengthy(&t.req) }

// fits says whether t may start now, and whether it would run in the lengthy lane; parked
// is how many lengthy units wait for the lane (see paceFloor).
func (g *granter) fits(t *Ticket, now time.Time, parked int) (ok, lane bool) {
	if now.Before(g.heldUntil) {
		return false, false
	}
	if m := g.maxRunning(); m > 0 && g.running >= m || g.soloOnly() {
		return false, false
	}
	if g.txnCapped(t) {
		return false, false
	}
	cost := t.req.Cost
	if g.reserveCfg.Floor <= 0 {
		// Alone, even a unit larger than the whole capacity runs.
		return g.running == 0 || g.load+cost <= g.capacity, false
	}
	reserve := g.reserveValue()
	if !g.lengthy(t) {
		return g.running == 0 || g.quickLoad()+g.heldFromQuick(reserve)+cost <= g.capacity, false
	}
	return g.fitsLengthy(cost, reserve, now, parked)
}

// fitsLengthy is fits for a lengthy unit of cost, with the reserve at reserve.
func (g *granter) fitsLengthy(cost, reserve time.Duration, now time.Time, parked int) (ok, lane bool) {
	lane = g.capacity-g.load-cost < reserve
	switch {
	case g.running == 0:
		// Alone: even a unit larger than the whole capacity runs.
		return true, g.capacity-cost < reserve
	case g.load+cost > g.capacity:
		// Larger than the room. Once no other lengthy unit runs and the quick units hold no
		// more than the reserve's floor, it runs beside them as it would alone (it could
		// not start otherwise while they keep coming), in the lane, by the lane's rules: it
		// holds only what the reserve leaves against them (see heldFromQuick).
		if g.lengthyLoad > 0 || g.quickLoad() > g.reserveCfg.Floor {
			return false, false
		}
		lane = g.capacity-cost < reserve
	}
	if lane {
		// It would eat into the reserve: only in the lengthy lane, at its pace when paced.
		return g.lane < g.reserveCfg.LengthyLane && g.pace.allow(now, g.paceFloor(parked)), true
	}
	return true, false
}

// maxRunning is the most units that may run at once: max_concurrency, and under the
// adaptive capacity the bound its windows learnt (see countRoom), whichever is less; 0
// when neither bounds them.
func (g *granter) maxRunning() int {
	m, learnt := g.maxConcurrency, g.learnt
	if m == 0 || learnt > 0 && learnt < m {
		return learnt
	}
	return m
}

// soloOnly says whether a solo check holds back every unit while another runs.
func (g *granter) soloOnly() bool { return g.solo && g.running > 0 }

// txnCapped says whether t is a transaction kept out by max_open_transactions.
func (g *granter) txnCapped(t *Ticket) bool {
	return t.req.Txn && g.maxOpenTxns > 0 && g.openTxns >= g.maxOpenTxns
}

// quickLoad is the part of the load that quick units hold.
func (g *granter) quickLoad() time.Duration { return g.load - g.lengthyLoad }

// heldFromQuick is how much of the capacity the running lengthy units hold against quick
// units: their load, but never more than what the reserve leaves. The reserve is the quick
// units' own: neither the lane, which lets lengthy units start into it while it is free,
// nor a unit larger than the capacity, admitted alone, takes it from them. While quick
// units then use it, the database carries up to the reserve beyond the capacity, as the
// template servers' lengthy pool adds its threads to the general pool's.
func (g *granter) heldFromQuick(reserve time.Duration) time.Duration {
	return min(g.lengthyLoad, g.capacity-reserve)
}

// quickRoom is the capacity a quick unit finds spare: what the reserve moves by.
func (g *granter) quickRoom() time.Duration {
	return g.capacity - g.quickLoad() - g.heldFromQuick(g.reserveValue())
}

// paceFloor is the least start rate of a paced lane: enough to start every one of the
// parked units within half the queue timeout.
func (g *granter) paceFloor(parked int) float64 {
	return float64(parked) / (g.queueTimeout / 2).Seconds()
}

func (g *granter) reserveValue() time.Duration {
	return clampReserve(g.reserve.value, g.reserveCfg.Floor, g.capacity)
}

// moveReserve moves the reserve by the spare capacity a quick unit finds at now, and the
// lane's pace towards the quick units' wait target.
func (g *granter) moveReserve(now time.Time) {
	g.reserve.update(g.reserveCfg.Floor, g.capacity, g.quickRoom(), now)
	if g.reserveCfg.QuickWaitTarget > 0 {
		g.pace.adapt(g.reserveCfg.QuickWaitTarget, now)
	}
}

// start charges t, admitted at now, in the lengthy lane when lane says so.
func (g *granter) start(t *Ticket, now time.Time, lane bool) {
	t.lane = lane
	t.lengthy = g.lengthy(t)
	t.end = now.Add(t.req.service())
	g.active.push(t)
	g.admits++
	t.alone, t.admitNo = g.running == 0 && !g.busyElsewhere, g.admits
	g.load += t.req.Cost
	if t.lengthy {
		g.lengthyLoad += t.req.Cost
	}
	g.running++
	if t.req.Txn {
		g.openTxns++
	}
	if lane {
		g.lane++
		g.pace.started()
	}
	if g.reserveCfg.QuickWaitTarget > 0 && !t.lengthy {
		g.pace.quickAdmitted(t.waited)
	}
}

// finish gives back t's charge.
func (g *granter) finish(t *Ticket) {
	g.active.remove(t)
	g.load -= t.req.Cost
	if t.lengthy {
		g.lengthyLoad -= t.req.Cost
	}
	g.running--
	if t.req.Txn {
		g.openTxns--
	}
	if t.lane {
		g.lane--
	}
}

// ranAlone says whether the finished unit t ran with no other unit throughout: none was
// running when it started, and none started after it.
func (g *granter) ranAlone(t *Ticket) bool { return t.alone && g.admits == t.admitNo }

// startOf is when the waiting unit q is expected to fit by capacity and concurrency: the
// expected end of the running unit whose end leaves room for it, or of the last one.
func (g *granter) startOf(q *Ticket, now time.Time) time.Time {
	g.ends = append(g.ends[:0], g.active.items...)
	slices.SortFunc(g.ends, func(a, b *Ticket) int { return cmpBy(byEnd, a, b) })
	load, running := g.load, g.running
	start, most := now, g.maxRunning()
	for _, r := range g.ends {
		load -= r.req.Cost
		running--
		start = r.end
		concurrency := most == 0 || running < most
		if running == 0 || (concurrency && load+q.req.Cost <= g.capacity) {
			break
		}
	}
	clear(g.ends)
	return start
}

// lastEnd is when the last of the running units is expected to end (zero when none runs).
func (g *granter) lastEnd() time.Time {
	var last time.Time
	for _, r := range g.active.items {
		if r.end.After(last) {
			last = r.end
		}
	}
	return last
}
