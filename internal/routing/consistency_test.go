package routing_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
	"github.com/gatekeeperdb/gatekeeper/internal/routing"
)

// A strong read waits for the last acknowledged write to the tables it reads, and only
// those: a replica behind on another table serves it.
func TestStrongReadNeedsWritesToItsTables(t *testing.T) {
	cases := []struct {
		sql string
		// need is what the read needs after a write to db.a at 0-1-5; "": nothing.
		need string
	}{
		{"SELECT * FROM b", ""},
		{"SELECT * FROM a", "0-1-5"},
		{"SELECT * FROM DB.A", "0-1-5"},
		{"SELECT * FROM b JOIN a ON a.id = b.id", "0-1-5"},
		{"SELECT * FROM other.a", ""},
		{"SELECT * FROM b WHERE x = f(1)", "0-1-5"}, // a function that may read any table
	}
	for _, tc := range cases {
		t.Run(tc.sql, func(t *testing.T) {
			f := newFixture(t, routing.Config{Consistency: replicas.Strong}, 1)
			replica := f.replica(1)
			s := f.policy.NewSession()
			commit(t, s, write(s, "INSERT INTO a VALUES (1)"), "0-1-5")
			f.record(replica, pos(t, "0-1-4"))

			d := route(s, read(s, tc.sql))
			if tc.need != "" {
				assert.Equal(t, routing.Decision{Reason: routing.FellBack}, d, "the replica is behind on the write")
				f.record(replica, pos(t, "0-1-5"))
				d = route(s, read(s, tc.sql))
			}
			assert.Equal(t, routing.Routed, d.Reason)
			assert.Same(t, replica, d.To)
			assert.Equal(t, tc.need, d.Need.String())
			s.Done()
		})
	}
}

// Among replicas, a strong read goes only to one that has its tables' writes; a read of
// other tables may go to either.
func TestStrongReadPicksAReplicaThatHasTheWrite(t *testing.T) {
	f := newFixture(t, routing.Config{Consistency: replicas.Strong}, 2)
	current, behind := f.replica(1), f.replica(2)
	s := f.policy.NewSession()
	commit(t, s, write(s, "INSERT INTO a VALUES (1)"), "0-1-5")
	f.record(current, pos(t, "0-1-5"))

	// Ties go round: in two turns each replica has its turn to be preferred.
	seen := map[*replicas.Backend]int{}
	for range 2 {
		a := route(s, read(s, "SELECT * FROM a"))
		assert.Same(t, current, a.To)
		s.Done()
	}
	for range 2 {
		b := route(s, read(s, "SELECT * FROM b"))
		seen[b.To]++
		s.Done()
	}
	assert.Equal(t, map[*replicas.Backend]int{current: 1, behind: 1}, seen, "the replica behind on db.a serves reads of db.b")
}

// Under session consistency a read needs the session's own writes, whatever tables they
// wrote, and no one else's; under eventual, nothing.
func TestConsistency(t *testing.T) {
	cases := []struct {
		name     string
		cfg      replicas.Consistency
		user     string // the user's consistency (SetConsistency); "": none
		writer   bool   // the reader wrote db.a at 0-1-5; else another session did
		sql      string
		fellBack bool // the replica, at nothing, does not serve it
	}{
		{"strong, written table", replicas.Strong, "", false, "SELECT * FROM a", true},
		{"strong, other table", replicas.Strong, "", true, "SELECT * FROM b", false},
		{"session, own write to another table", replicas.Session, "", true, "SELECT * FROM b", true},
		{"session, another session's write", replicas.Session, "", false, "SELECT * FROM a", false},
		{"eventual", replicas.Eventual, "", true, "SELECT * FROM a", false},

		{"hint eventual over strong", replicas.Strong, "", true, "SELECT * FROM a /* gk:consistency=eventual */", false},
		{"hint strong over eventual", replicas.Eventual, "", false, "/* gk:consistency=strong */ SELECT * FROM a", true},
		{"hint session over eventual", replicas.Eventual, "", true, "SELECT /* gk:consistency=session */ * FROM b", true},
		{"hint strong over session", replicas.Session, "", true, "SELECT * FROM b /* gk:consistency=strong */", false},
		{"hint not a consistency", replicas.Eventual, "", true, "SELECT * FROM a /* gk:consistency=fresh */", false},

		{"user eventual over strong", replicas.Strong, "eventual", true, "SELECT * FROM a", false},
		{"user strong over eventual", replicas.Eventual, "strong", false, "SELECT * FROM a", true},
		{"user session over strong", replicas.Strong, "session", false, "SELECT * FROM a", false},
		{"user names none", replicas.Eventual, "", true, "SELECT * FROM a", false},
		{"user names no consistency", replicas.Strong, "fresh", false, "SELECT * FROM a", true},
		{"hint over user", replicas.Strong, "eventual", false, "SELECT * FROM a /* gk:consistency=strong */", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, routing.Config{Consistency: tc.cfg}, 1)
			reader := f.policy.NewSession()
			reader.SetConsistency(tc.user)
			writer := reader
			if !tc.writer {
				writer = f.policy.NewSession()
			}
			commit(t, writer, write(writer, "INSERT INTO a VALUES (1)"), "0-1-5")

			d := route(reader, read(reader, tc.sql))
			if tc.fellBack {
				assert.Equal(t, routing.Decision{Reason: routing.FellBack}, d)
				return
			}
			assert.Equal(t, routing.Routed, d.Reason)
			assert.Same(t, f.replica(1), d.To)
			assert.Empty(t, d.Need)
		})
	}
}

func TestSessionConsistencyNeedsOwnWrites(t *testing.T) {
	f := newFixture(t, routing.Config{Consistency: replicas.Session}, 1)
	replica := f.replica(1)
	s := f.policy.NewSession()
	commit(t, s, write(s, "INSERT INTO a VALUES (1)"), "0-1-5")
	commit(t, s, write(s, "INSERT INTO c VALUES (1)"), "1-1-3")
	f.record(replica, pos(t, "0-1-5"))
	require.Equal(t, routing.FellBack, route(s, read(s, "SELECT * FROM b")).Reason, "behind in domain 1")

	f.record(replica, pos(t, "0-1-5,1-1-3"))
	d := route(s, read(s, "SELECT * FROM b"))
	assert.Same(t, replica, d.To)
	assert.Equal(t, "0-1-5,1-1-3", d.Need.String())
	s.Done()

	// A new user's session forgets the writes of the former.
	s.SetConsistency("session")
	f.record(replica, nil)
	assert.Same(t, replica, route(s, read(s, "SELECT * FROM b")).To)
}

// Sessions that name the same application session (/* gk:session=KEY */) see each other's
// writes under session consistency.
func TestApplicationSession(t *testing.T) {
	f := newFixture(t, routing.Config{Consistency: replicas.Session}, 1)
	writer, reader := f.policy.NewSession(), f.policy.NewSession()
	commit(t, writer, write(writer, "/* gk:session=cart-7 */ INSERT INTO a VALUES (1)"), "0-1-5")
	cases := []struct {
		sql      string
		fellBack bool
	}{
		{"/* gk:session=cart-7 */ SELECT * FROM b", true},
		{"/* gk:session=cart-8 */ SELECT * FROM a", false},
		{"SELECT * FROM a", false},
	}
	for _, tc := range cases {
		d := route(reader, read(reader, tc.sql))
		assert.Equal(t, tc.fellBack, d.Reason == routing.FellBack, tc.sql)
		reader.Done()
	}

	f.record(f.replica(1), pos(t, "0-1-5"))
	d := route(reader, read(reader, "/* gk:session=cart-7 */ SELECT * FROM b"))
	assert.Equal(t, routing.Routed, d.Reason)
	assert.Equal(t, "0-1-5", d.Need.String())
}

// While another process hands its connections over, a strong read goes to the primary:
// that process may still acknowledge writes this one does not see. Once it is done, its
// version map counts: a replica behind its last write to a table does not serve a read of
// it, and one that has it does. Session reads are not held.
func TestHoldStrongUntilTheOldProcessIsDone(t *testing.T) {
	f := newFixture(t, routing.Config{Consistency: replicas.Strong}, 1)
	replica := f.replica(1)
	f.record(replica, pos(t, "0-1-4"))
	f.policy.HoldStrong()
	s := f.policy.NewSession()
	assert.Equal(t, routing.Decision{Reason: routing.FellBack}, route(s, read(s, "SELECT * FROM b")), "held")
	s.Done()
	sess := f.policy.NewSession()
	sess.SetConsistency("session")
	assert.Equal(t, routing.Routed, route(sess, read(sess, "SELECT * FROM b")).Reason, "a session read is not held")
	sess.Done()

	// The old process wrote db.a at 0-1-5 after the hand-over began.
	old := f.policy.Versions()
	old.Tables = map[string]string{"gk.a": "0-1-5"}
	old.All = "0-1-5"
	f.policy.ReleaseStrong(&old)
	assert.Equal(t, routing.Decision{Reason: routing.FellBack}, route(s, read(s, "SELECT * FROM gk.a")), "behind the old process's write")
	s.Done()
	d := route(s, read(s, "SELECT * FROM b"))
	assert.Equal(t, routing.Routed, d.Reason, "another table: no need")
	s.Done()
	f.record(replica, pos(t, "0-1-5"))
	assert.Equal(t, routing.Routed, route(s, read(s, "SELECT * FROM gk.a")).Reason)
	s.Done()
}
