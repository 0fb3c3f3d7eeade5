package auth

import (
	"net/netip"
	"sync"
	"sync/atomic"
)

// Store holds the accounts the proxy authenticates against and counts each user's client
// connections. It is safe for concurrent use; its zero value is not (use NewStore).
type Store struct {
	users atomic.Pointer[Users]

	mu sync.Mutex
	// conns counts the client connections of each user name that has any.
	conns map[string]int
}

// NewStore returns a store with no accounts.
func NewStore() *Store {
	return &Store{conns: make(map[string]int)}
}

// Swap replaces the accounts at once (on reload, or when a Refresher has read them
// again); logins under way finish with the account they looked up. A nil u means none.
func (s *Store) Swap(u *Users) {
	s.users.Store(u)
}

// Users returns the accounts now held, nil before the first Swap.
func (s *Store) Users() *Users {
	return s.users.Load()
}

// Lookup finds the account of user name for a client at from, as Users.Lookup does.
func (s *Store) Lookup(name string, from netip.Addr) (*User, bool) {
	return s.users.Load().Lookup(name, from)
}

// Enter counts a client connection of u against u.MaxConnections. ok is false when the
// user is at its bound, and then the connection must be refused. Otherwise leave must be
// called once when the connection ends (later calls do nothing); it is a no-op when ok is
// false. Connections are counted by user name, whatever account of that name they logged
// in as, and the counts survive Swap: a bound lowered on reload refuses new connections
// until enough have ended.
func (s *Store) Enter(u *User) (leave func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.conns[u.Name]
	if u.MaxConnections > 0 && n >= u.MaxConnections {
		return func() {}, false
	}
	s.conns[u.Name] = n + 1
	var once sync.Once
	return func() { once.Do(func() { s.leave(u.Name) }) }, true
}

func (s *Store) leave(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns[name] <= 1 {
		delete(s.conns, name)
		return
	}
	s.conns[name]--
}

// Connections returns the number of client connections of user name now counted.
func (s *Store) Connections(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns[name]
}
