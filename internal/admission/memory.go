package admission

import (
	"math"
	"time"
)

// AutoMemory is what the adaptive capacity keeps across restarts: where the capacity stood
// and the times alone of the shapes it timed (see Request.Shape), so that a restarted proxy
// resumes at its capacity instead of starting cold at the least.
type AutoMemory struct {
	Capacity time.Duration
	Alone    map[uint64]time.Duration
}

// Memory returns the adaptive capacity's memory; ok is false while it is off.
func (c *Controller) Memory() (m AutoMemory, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.cfg.Auto.Enabled {
		return AutoMemory{}, false
	}
	m = AutoMemory{Capacity: c.granter.capacity, Alone: make(map[uint64]time.Duration, len(c.adjuster.solo))}
	for shape, st := range c.adjuster.solo {
		if st.seeded() {
			m.Alone[shape] = time.Duration(math.Exp(st.log) * float64(time.Second))
		}
	}
	return m, true
}

// Resume starts the adaptive capacity from m, when it is on: at m's capacity (within its
// bounds), settled, with m's times alone; a probe checks them within two intervals. It
// returns whether it resumed.
func (c *Controller) Resume(m AutoMemory) bool {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.cfg.Auto.Enabled || m.Capacity <= 0 {
		return false
	}
	c.adjuster.resume(m, now)
	c.granter.setCapacity(min(max(m.Capacity, c.cfg.Auto.Min), c.cfg.Auto.Max))
	c.adjusted()
	c.dispatch(now)
	return true
}

// resume takes up m at now (see Controller.Resume).
func (u *adjuster) resume(m AutoMemory, now time.Time) {
	for shape, d := range m.Alone {
		if len(u.solo) >= maxTuneTypes {
			break
		}
		if d > 0 {
			u.solo[shape] = soloTime{log: math.Log(d.Seconds()), n: soloSeed}
		}
	}
	u.warm, u.blind, u.grad.settled = true, false, true
	u.grad.since, u.grad.probeAt = 0, now.Add(2*u.cfg.Interval)
	u.state.Phase = u.phase()
}
