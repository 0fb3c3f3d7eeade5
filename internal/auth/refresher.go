package auth

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultMinInterval is the least time between two loads that RefreshNow starts.
const DefaultMinInterval = time.Second

// Refresher keeps a Store's accounts current from a source that changes under the proxy,
// such as a backend's mysql.user (auth.from_backend): every interval, and at once when a
// client names a user the store does not know, but then no more than once per
// MinInterval, so that a flood of unknown users does not hammer the server. Loads never
// overlap: a caller that finds one under way waits for it. A failed load keeps the last
// accounts.
type Refresher struct {
	store    *Store
	load     func(context.Context) (*Users, error)
	interval time.Duration
	log      *slog.Logger

	// MinInterval is the least time between the starts of two loads that RefreshNow runs;
	// zero means DefaultMinInterval. Set it before the Refresher is used.
	MinInterval time.Duration
	// Now tells the time for MinInterval; nil means time.Now. Set it before the Refresher
	// is used.
	Now func() time.Time

	mu sync.Mutex
	// last is when the last load started; zero before the first.
	last time.Time
	// flight is the load under way, nil when none.
	flight *flight
	// failing: the last load that ran to its end failed.
	failing bool
}

// flight is one load; done is closed when it has ended, and ok then says whether it
// succeeded.
type flight struct {
	done chan struct{}
	ok   bool
}

// NewRefresher returns a refresher that loads accounts with load into store every interval
// once Run is called (an interval of zero or less: only on RefreshNow). The first load is
// the caller's, so that a proxy can refuse to start without accounts. log receives a
// warning when loading starts failing and a note when it works again; nil discards them.
func NewRefresher(store *Store, load func(context.Context) (*Users, error), interval time.Duration, log *slog.Logger) *Refresher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Refresher{store: store, load: load, interval: interval, log: log}
}

// Run loads the accounts every interval until ctx ends.
func (r *Refresher) Run(ctx context.Context) {
	if r.interval <= 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.refresh(ctx, false)
		}
	}
}

// RefreshNow loads the accounts at once, unless a load started less than MinInterval ago,
// and reports whether a load ran and succeeded; if one is under way, it waits for that one
// and reports its outcome. A client whose user is unknown calls it, then looks the user up
// again when it returns true.
func (r *Refresher) RefreshNow(ctx context.Context) bool {
	return r.refresh(ctx, true)
}

// refresh runs a load, or waits for the one under way; limited applies MinInterval.
func (r *Refresher) refresh(ctx context.Context, limited bool) bool {
	r.mu.Lock()
	if f := r.flight; f != nil {
		r.mu.Unlock()
		select {
		case <-f.done:
			return f.ok
		case <-ctx.Done():
			return false
		}
	}
	now := r.now()
	if limited && !r.last.IsZero() && now.Sub(r.last) < r.minInterval() {
		r.mu.Unlock()
		return false
	}
	f := &flight{done: make(chan struct{})}
	r.flight, r.last = f, now
	r.mu.Unlock()

	users, err := r.load(ctx)
	if err == nil {
		if users == nil {
			users = NewUsers()
		}
		r.store.Swap(users)
	}

	r.mu.Lock()
	f.ok = err == nil
	r.flight = nil
	wasFailing := r.failing
	if err == nil || ctx.Err() == nil { // a load cut short by its caller says nothing of the source
		r.failing = err != nil
	}
	r.mu.Unlock()
	close(f.done)

	switch {
	case err != nil && ctx.Err() == nil && !wasFailing:
		r.log.Warn("auth: cannot load the accounts; keeping the last ones", "err", err)
	case err == nil && wasFailing:
		r.log.Info("auth: loading the accounts works again", "accounts", users.Len())
	}
	return f.ok
}

func (r *Refresher) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Refresher) minInterval() time.Duration {
	if r.MinInterval > 0 {
		return r.MinInterval
	}
	return DefaultMinInterval
}
