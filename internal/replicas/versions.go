package replicas

import (
	"sort"
	"strings"
	"sync"
	"time"
)

// Versions is the version map of acknowledged writes: for every table a write was
// acknowledged to, the position of the last such write, and a floor that every read
// waits for. A write whose tables are not known (DDL, CALL, several statements, a
// statement the classifier is unsure of, a table whose triggers cannot be read) raises the
// floor. Table keys are schema.table, as TableKey writes them.
type Versions struct {
	mu     sync.RWMutex
	tables map[string]Pos
	// floor is what every read needs; all is every position recorded, for reads of
	// tables not known.
	floor, all Pos
	// pendingAt is when the latest write without a position was acknowledged; zero when
	// none waits. Such a write raises the floor to the primary's position read after it.
	pendingAt time.Time
	closure   *Closure
	// generation counts the times the closure was dropped (after DDL).
	generation uint64
}

// NewVersions returns an empty version map. Until SetClosure, every write raises the
// floor: the tables behind triggers, cascades and views are not known yet.
func NewVersions() *Versions {
	return &Versions{tables: make(map[string]Pos)}
}

// Generation returns the number of times the closure was dropped. A closure read after
// it is installed by SetClosure only while no DDL dropped it in the meantime.
func (v *Versions) Generation() uint64 {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.generation
}

// SetClosure installs what writes and reads of each table touch beyond it, read when
// Generation was gen; it reports false, installing nothing, when DDL came since.
func (v *Versions) SetClosure(gen uint64, c *Closure) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if gen != v.generation {
		return false
	}
	v.closure = c
	return true
}

// DropClosure goes back to raising the floor with every write: DDL was acknowledged, and
// triggers, cascades and views may have changed until the closure is read again.
func (v *Versions) DropClosure() {
	v.mu.Lock()
	v.closure = nil
	v.generation++
	v.mu.Unlock()
}

// ClosureLoaded tells whether writes are recorded per table.
func (v *Versions) ClosureLoaded() bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.closure != nil
}

// Wrote records a write acknowledged at position g that wrote tables, and others not
// named when unknown.
func (v *Versions) Wrote(tables [][]byte, unknown bool, g GTID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.all = v.all.With(g)
	c := v.closure
	if unknown || c == nil {
		v.floor = v.floor.With(g)
		return
	}
	for _, t := range tables {
		if c.unknownWrites[string(t)] {
			v.floor = v.floor.With(g)
			return
		}
	}
	for _, t := range tables {
		v.tables[string(t)] = v.tables[string(t)].With(g)
		for _, u := range c.writes[string(t)] {
			v.tables[u] = v.tables[u].With(g)
		}
	}
}

// WroteUnknown records a write acknowledged at time at without a position (a response
// ended by EOF, a write not in the binary log): until the primary's position is read
// after it, reads cannot know what they need.
func (v *Versions) WroteUnknown(at time.Time) {
	v.mu.Lock()
	if at.After(v.pendingAt) {
		v.pendingAt = at
	}
	v.mu.Unlock()
}

// Covered records that every write up to position p (a resync, or a follower's start) is
// recorded without its tables: each read needs p at least.
func (v *Versions) Covered(p Pos) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.floor = v.floor.Merge(p)
	v.all = v.all.Merge(p)
}

// Resolve takes the primary's position p, read by a query sent at started: a write
// without a position acknowledged before started is in p.
func (v *Versions) Resolve(started time.Time, p Pos) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.pendingAt.IsZero() || started.Before(v.pendingAt) {
		return
	}
	v.pendingAt = time.Time{}
	v.floor = v.floor.Merge(p)
	v.all = v.all.Merge(p)
}

// Need appends to dst (reused, owned by the caller) what a read of tables, and of others
// not named when unknown, needs a replica to have applied. ok is false while a write
// without a position waits to be resolved: the need is not known.
func (v *Versions) Need(dst Pos, tables [][]byte, unknown bool) (need Pos, ok bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	dst = dst[:0]
	if !v.pendingAt.IsZero() {
		return dst, false
	}
	if unknown {
		return addAll(dst, v.all), true
	}
	dst = addAll(dst, v.floor)
	c := v.closure
	for _, t := range tables {
		if c != nil {
			if c.unknownViews[string(t)] {
				return addAll(dst[:0], v.all), true
			}
			for _, u := range c.views[string(t)] {
				dst = addAll(dst, v.tables[u])
			}
		}
		dst = addAll(dst, v.tables[string(t)])
	}
	return dst, true
}

// addAll merges p into dst in place.
func addAll(dst, p Pos) Pos {
	for _, g := range p {
		dst = add(dst, g)
	}
	return dst
}

// add merges g into dst in place.
func add(dst Pos, g GTID) Pos {
	for i := range dst {
		if dst[i].Domain == g.Domain {
			if dst[i].Seq < g.Seq {
				dst[i] = g
			}
			return dst
		}
	}
	return append(dst, g)
}

// VersionsRecord is a version map as a hand-over to a new process carries it: each
// table's position, the floor and every position recorded, as ParsePos reads them.
type VersionsRecord struct {
	Tables map[string]string `json:"tables,omitempty"`
	Floor  string            `json:"floor,omitempty"`
	All    string            `json:"all,omitempty"`
}

// Record returns the map as a record.
func (v *Versions) Record() VersionsRecord {
	v.mu.RLock()
	defer v.mu.RUnlock()
	r := VersionsRecord{Tables: make(map[string]string, len(v.tables)), Floor: v.floor.String(), All: v.all.String()}
	for t, p := range v.tables {
		r.Tables[t] = p.String()
	}
	return r
}

// Merge adds what r records: every table's position, the floor and every position
// recorded, each the later of this map's and r's. A position that does not parse raises
// the floor to everything r recorded.
func (v *Versions) Merge(r VersionsRecord) error {
	all, err := ParsePos(r.All)
	if err != nil {
		return err
	}
	floor, err := ParsePos(r.Floor)
	if err != nil {
		floor = all
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.all = v.all.Merge(all)
	v.floor = v.floor.Merge(floor)
	for t, s := range r.Tables {
		p, err := ParsePos(s)
		if err != nil {
			v.floor = v.floor.Merge(all)
			continue
		}
		v.tables[t] = v.tables[t].Merge(p)
	}
	return nil
}

// Floor returns the position every read needs.
func (v *Versions) Floor() Pos {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.floor
}

// Tables returns how many tables have a recorded write.
func (v *Versions) Tables() int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return len(v.tables)
}

// TableKey appends schema.table, in lower case, to dst; schema is the session's when the
// statement did not name one.
func TableKey(dst, schema, table []byte) []byte {
	dst = append(dst, schema...)
	dst = append(dst, '.')
	dst = append(dst, table...)
	return lowerASCII(dst)
}

func lowerASCII(b []byte) []byte {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return b
}

// Closure says what a write to a table writes beyond it (through triggers and foreign-key
// cascades), and which tables a view reads.
type Closure struct {
	// writes: table -> further tables a write to it writes.
	writes map[string][]string
	// unknownWrites: tables a write to which may write tables not known (a trigger whose
	// body cannot be read).
	unknownWrites map[string]bool
	// views: view -> the tables it reads; unknownViews: views whose tables are not known.
	views        map[string][]string
	unknownViews map[string]bool
}

// NewClosure returns an empty closure: no triggers, cascades or views.
func NewClosure() *Closure {
	return &Closure{writes: map[string][]string{}, unknownWrites: map[string]bool{},
		views: map[string][]string{}, unknownViews: map[string]bool{}}
}

// AddWrite records that a write to table writes also.
func (c *Closure) AddWrite(table, also string) {
	c.writes[table] = appendNew(c.writes[table], also)
}

// AddUnknownWrite records that a write to table may write tables not known.
func (c *Closure) AddUnknownWrite(table string) { c.unknownWrites[table] = true }

// AddView records that view reads table.
func (c *Closure) AddView(view, table string) {
	c.views[view] = appendNew(c.views[view], table)
}

// AddUnknownView records that the tables view reads are not known.
func (c *Closure) AddUnknownView(view string) { c.unknownViews[view] = true }

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// Close makes the relations transitive: a write to a table also writes what the tables it
// writes write (a cascade that fires a trigger), and a view of views reads their tables.
func (c *Closure) Close() {
	for t := range c.writes {
		c.writes[t] = reach(c.writes, t)
		for _, u := range c.writes[t] {
			if c.unknownWrites[u] {
				c.unknownWrites[t] = true
			}
		}
	}
	for v := range c.views {
		c.views[v] = reach(c.views, v)
		for _, u := range c.views[v] {
			if c.unknownViews[u] {
				c.unknownViews[v] = true
			}
		}
	}
}

// reach lists what from reaches in edges, itself excluded, breadth first.
func reach(edges map[string][]string, from string) []string {
	seen := map[string]bool{from: true}
	var out []string
	queue := append([]string(nil), edges[from]...)
	for len(queue) > 0 {
		t := queue[0]
		queue = queue[1:]
		if seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
		queue = append(queue, edges[t]...)
	}
	return out
}

// Equal tells whether two closures say the same.
func (c *Closure) Equal(o *Closure) bool { return c.String() == o.String() }

// String lists the closure's relations in order, for logs and comparisons.
func (c *Closure) String() string {
	var lines []string
	for t, also := range c.writes {
		lines = append(lines, t+" writes "+strings.Join(also, ","))
	}
	for t := range c.unknownWrites {
		lines = append(lines, t+" writes unknown tables")
	}
	for v, ts := range c.views {
		lines = append(lines, v+" reads "+strings.Join(ts, ","))
	}
	for v := range c.unknownViews {
		lines = append(lines, v+" reads unknown tables")
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}
