// Package binlog learns every write committed on the primary, whoever made it, and says
// when a read may trust what it learnt: the ground strong reads stand on once more than one
// process writes (a second gatekeeper, a client connected straight to the primary, a cron
// job).
//
// A Follower registers with the primary as a replica (go-mysql's replication package, with
// a server_id of its own) and reads its binary log from the position it started at. Each
// committed transaction raises, in the version map (replicas.Versions), the version of every
// table it wrote, at its GTID: row events name their tables; a statement logged as text goes
// through the classifier; DDL, and anything it cannot read, raises the floor every read needs
// and has the trigger, cascade and view closure read again (row-based logs do not log
// cascades: the closure still counts them). The proxy's own acknowledgements keep recording
// their GTIDs as they come (the fast path); the log adds the writes the proxy never saw.
//
// A strong read needs the primary's position as of a moment after it arrived: Positions
// reads it, batched as Raft's ReadIndex is, with one read in flight and a statement joining
// the next read that starts after it arrived. Once the follower has passed that position,
// every write committed before the read arrived is in the version map, and the read chooses
// a replica by the tables it reads (package routing). A follower that is disconnected, or
// behind past the read's causal wait, vouches for nothing: the read goes to the primary,
// never stale. It reconnects from its last position, and when that position is purged it
// starts again from the primary's present one, raising the floor to it.
package binlog
