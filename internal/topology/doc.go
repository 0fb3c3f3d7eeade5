// Package topology reads which server is the primary, and holds writes while there is
// none.
//
// The proxy does not promote anyone: promotion belongs to the operator or the
// orchestrator. It reads each server's role every interval, and at once after a connection
// error to the primary: whether it is read_only, whether it replicates and from whom, and
// its binary log position. The primary is the one server that is up, writable and not
// replicating. None such (the primary died, a promotion is under way) is a failover: writes
// and transactions wait for one to appear, up to a bound in time and in number, as Vitess's
// vtgate buffers queries during a reparent. Two or more (split brain) is never resolved by
// guessing: writes fail with an error that names them, until one of them is read-only again.
//
// A planned switchover pauses writes instead (Pause): new writes wait as in a failover, and
// the pause answers once the primary has no unit of work in flight; the operator promotes a
// replica and resumes.
//
// When the primary changes, each function given to OnChange runs before writes are let
// through to the new primary: the pools, the position reader, the binary log follower and
// the version map move to it there.
package topology
