package chaos

import "testing"

// TestReplicaKilled stands for the check that a replica's death costs a client nothing but
// a read sent again to another backend. Nothing routes reads to replicas yet, so there is
// nothing to break.
func TestReplicaKilled(t *testing.T) {
	const reason = "replica reads are not implemented"
	report("replica killed", "not applicable: %s", reason)
	t.Skip("not applicable: " + reason)
}
