package auth

import (
	"net/netip"
	"slices"
)

// Users is a set of accounts, from a users file or from a backend. It does not change once
// built; a Store swaps one for another.
type Users struct {
	// byName holds each name's accounts, most specific host first.
	byName map[string][]account
	n      int
}

type account struct {
	user *User
	host hostPattern
}

// NewUsers builds a set of accounts. An account with an empty Host matches no client (as
// a MariaDB role's empty host does); users-file entries have Host "%". Among accounts of
// the same name, the most specific host matches first, and accounts of equal specificity
// in the order given.
func NewUsers(users ...User) *Users {
	s := &Users{byName: make(map[string][]account)}
	for i := range users {
		u := users[i]
		s.byName[u.Name] = append(s.byName[u.Name], account{user: &u, host: compileHost(u.Host)})
		s.n++
	}
	for _, accounts := range s.byName {
		slices.SortStableFunc(accounts, func(a, b account) int {
			return b.host.specificity - a.host.specificity
		})
	}
	return s
}

// Len is the number of accounts.
func (s *Users) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// Lookup finds the account that a client of user name connecting from the address from
// logs in as: the one whose host pattern matches from, most specific first, as the server
// picks it. Host patterns are matched as by a server with skip-name-resolve: against the
// client's IP address (an IPv4-mapped address as IPv4), except that localhost, 127.0.0.1
// and ::1 all match any loopback client; other host names match nothing. An invalid from
// (a client with no IP address) matches only patterns made of wildcards, such as "%";
// pass a loopback address for a client on a Unix socket.
func (s *Users) Lookup(name string, from netip.Addr) (*User, bool) {
	if s == nil {
		return nil, false
	}
	from, text := clientText(from)
	for i := range s.byName[name] {
		a := &s.byName[name][i]
		if a.host.matches(from, text) {
			return a.user, true
		}
	}
	return nil, false
}

// Merge returns the accounts of first and then, for names first does not have, of second:
// the users file's entries win over the accounts read from a backend, since they may hold
// the clear password the backend's hash lacks.
func Merge(first, second *Users) *Users {
	if second.Len() == 0 {
		return first
	}
	if first.Len() == 0 {
		return second
	}
	out := &Users{byName: make(map[string][]account, len(first.byName)+len(second.byName))}
	for _, set := range []*Users{first, second} {
		for name, accounts := range set.byName {
			if _, taken := out.byName[name]; taken && set == second {
				continue
			}
			out.byName[name] = accounts
			out.n += len(accounts)
		}
	}
	return out
}
