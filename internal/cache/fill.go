package cache

import "context"

// Fill is one query running to fill a key. Concurrent misses of the key wait for it
// instead of running their own, as Vitess's query consolidator does.
type Fill struct {
	store *Store
	key   string
	// done closes when the leader is done; entry is set before.
	done  chan struct{}
	entry *Entry
	// finished is set by Done; guarded by store.flightMu.
	finished bool
}

// Fill joins the fill in flight for key or starts one. The leader (leader true) runs the
// query, stores the result with Put if it may be cached, and must then call f.Done
// exactly once, also when the query fails; the others call f.Wait. A caller that missed
// on Get and then leads a fill may be running the query just after another leader stored
// it; that costs one query, never a wrong result.
func (s *Store) Fill(key []byte) (f *Fill, leader bool) {
	s.flightMu.Lock()
	defer s.flightMu.Unlock()
	if f := s.flights[string(key)]; f != nil {
		s.coalesced++
		return f, false
	}
	f = &Fill{store: s, key: string(key), done: make(chan struct{})}
	s.flights[f.key] = f
	return f, true
}

// Done ends the fill and hands e, the entry the leader stored, to every waiter; nil, for
// a query that failed or a result not stored, sends them to run their own. Done does not
// store e: the leader Puts it first, so that a caller arriving after Done finds it with
// Get, and the next Fill of the key leads a new fill. Done panics when called twice.
func (f *Fill) Done(e *Entry) {
	s := f.store
	s.flightMu.Lock()
	if f.finished {
		s.flightMu.Unlock()
		panic("cache: Fill.Done called twice")
	}
	f.finished = true
	delete(s.flights, f.key)
	s.flightMu.Unlock()
	f.entry = e
	close(f.done)
}

// Wait returns the leader's entry once it is done, nil when the leader stored nothing,
// or ctx's error when ctx ends first. The leader must not wait on its own fill.
func (f *Fill) Wait(ctx context.Context) (*Entry, error) {
	select {
	case <-f.done:
		return f.entry, nil
	default:
	}
	select {
	case <-f.done:
		return f.entry, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
