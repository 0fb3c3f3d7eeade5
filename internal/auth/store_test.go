package auth

import (
	"net/netip"
	"sync"
	"testing"
)

func TestStoreEnter(t *testing.T) {
	// Each step enters (+) or leaves (-, the nth connection entered) for a user.
	type step struct {
		user  string
		leave int  // 0: enter; n: call the leave of the nth successful enter
		ok    bool // for an enter: whether it is let in
	}
	tests := []struct {
		name  string
		max   int
		steps []step
	}{
		{"no bound", 0, []step{{"app", 0, true}, {"app", 0, true}, {"app", 0, true}}},
		{"bound of one", 1, []step{{"app", 0, true}, {"app", 0, false}, {"app", 1, false}, {"app", 0, true}, {"app", 0, false}}},
		{"bound of two", 2, []step{{"app", 0, true}, {"app", 0, true}, {"app", 0, false}, {"app", 2, false}, {"app", 0, true}}},
		{"leave twice counts once", 1, []step{{"app", 0, true}, {"app", 1, false}, {"app", 1, false}, {"app", 0, true}, {"app", 0, false}}},
		{"users are counted apart", 1, []step{{"app", 0, true}, {"other", 0, true}, {"app", 0, false}, {"other", 0, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStore()
			users := map[string]*User{
				"app":   {Name: "app", Host: "%", MaxConnections: tt.max},
				"other": {Name: "other", Host: "%", MaxConnections: tt.max},
			}
			var leaves []func()
			for i, st := range tt.steps {
				if st.leave > 0 {
					leaves[st.leave-1]()
					continue
				}
				leave, ok := s.Enter(users[st.user])
				if ok != st.ok {
					t.Fatalf("step %d: Enter(%s) = %v, want %v", i, st.user, ok, st.ok)
				}
				if leave == nil {
					t.Fatalf("step %d: Enter returned a nil leave", i)
				}
				if ok {
					leaves = append(leaves, leave)
				} else {
					leave() // a refused connection's leave does nothing
				}
			}
		})
	}
}

func TestStoreCountsSurviveSwap(t *testing.T) {
	s := NewStore()
	s.Swap(NewUsers(User{Name: "app", Host: "%", HasPassword: true, MaxConnections: 3}))
	from := netip.MustParseAddr("10.0.0.1")
	enter := func() (func(), bool) {
		t.Helper()
		u, ok := s.Lookup("app", from)
		if !ok {
			t.Fatal("Lookup(app) found nothing")
		}
		return s.Enter(u)
	}
	var leaves []func()
	for range 3 {
		leave, ok := enter()
		if !ok {
			t.Fatal("Enter refused a connection under the bound")
		}
		leaves = append(leaves, leave)
	}

	// A reload lowers the bound to 2: three are in, so new ones wait until two have left.
	s.Swap(NewUsers(User{Name: "app", Host: "%", HasPassword: true, MaxConnections: 2}))
	if _, ok := enter(); ok {
		t.Fatal("Enter let in a fourth connection after the bound dropped to 2")
	}
	leaves[0]()
	if _, ok := enter(); ok {
		t.Fatal("Enter let in a third connection with the bound at 2")
	}
	leaves[1]()
	leave, ok := enter()
	if !ok {
		t.Fatal("Enter refused a second connection with the bound at 2")
	}
	if got := s.Connections("app"); got != 2 {
		t.Errorf("Connections = %d, want 2", got)
	}
	leave()
	leaves[2]()
	if got := s.Connections("app"); got != 0 {
		t.Errorf("Connections = %d after all left, want 0", got)
	}

	// The user removed by a reload is gone at once.
	s.Swap(NewUsers())
	if _, ok := s.Lookup("app", from); ok {
		t.Error("Lookup found a user that the last Swap removed")
	}
	s.Swap(nil)
	if _, ok := s.Lookup("app", from); ok {
		t.Error("Lookup found a user after Swap(nil)")
	}
}

func TestStoreEnterConcurrent(t *testing.T) {
	const bound, tries = 5, 50
	s := NewStore()
	u := &User{Name: "app", Host: "%", MaxConnections: bound}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		in     int
		peak   int
		leaves []func()
	)
	for range tries {
		wg.Go(func() {
			leave, ok := s.Enter(u)
			if !ok {
				return
			}
			mu.Lock()
			in++
			peak = max(peak, in)
			leaves = append(leaves, leave)
			mu.Unlock()
		})
	}
	wg.Wait()
	if in != bound || peak != bound {
		t.Fatalf("%d connections let in (peak %d), want exactly %d", in, peak, bound)
	}
	for _, leave := range leaves {
		wg.Go(leave)
	}
	wg.Wait()
	if got := s.Connections("app"); got != 0 {
		t.Errorf("Connections = %d after all left, want 0", got)
	}
}

func TestMergeKeepsTheFirstSetsNames(t *testing.T) {
	file := NewUsers(User{Name: "app", Password: "from-file", HasPassword: true, Host: "%"})
	backend := NewUsers(
		User{Name: "app", Stage2: make([]byte, 20), Host: "%"},
		User{Name: "report", Stage2: make([]byte, 20), Host: "%"},
	)
	m := Merge(file, backend)
	if m.Len() != 2 {
		t.Fatalf("Len = %d, want 2", m.Len())
	}
	u, ok := m.Lookup("app", netip.MustParseAddr("10.0.0.1"))
	if !ok || u.Password != "from-file" {
		t.Errorf("app = %v, %v; want the users file's entry", u, ok)
	}
	if _, ok := m.Lookup("report", netip.MustParseAddr("10.0.0.1")); !ok {
		t.Error("report missing: the backend's accounts fill in names the file lacks")
	}
	if Merge(nil, backend) != backend || Merge(file, nil) != file {
		t.Error("merging with an empty set returns the other set")
	}
}
