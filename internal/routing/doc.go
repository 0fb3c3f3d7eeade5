// Package routing decides where a unit of work runs: on the primary, or on a replica that
// has applied every write the unit depends on. It is the policy half of read routing; the
// servers themselves (their positions, health and lag, the version map of acknowledged
// writes, the balance among eligible backends) are package replicas'.
//
// A session asks once per unit, before admission, so that the unit waits for the capacity
// of the backend it will run on: writes, locking reads, DDL, statements the classifier is
// unsure of, reads inside transactions and reads that use connection state stay on the
// primary; an autocommit read (or a read-only transaction, with
// routing.read_only_transactions) goes to a replica that has applied what its consistency
// needs. Under strong consistency that is every acknowledged write to the tables it reads
// (the conflict-aware rule of Amza, Cox and Zwaenepoel's replica scheduling, per table);
// under session, the writes of the client's own session (or of its application session,
// /* gk:session=KEY */); under eventual, nothing beyond a lag bound. When no replica has
// what a read needs, it waits up to routing.causal_wait for one to catch up, then goes to
// the primary: never stale.
//
// The answer is a Decision (the backend, the reason, the position needed), handed alike
// to admission, which charges the unit to that backend's capacity, and to the lease,
// which takes a connection there. When the backend cannot run the unit after all (its
// pool gives no connection, its connection fails before answering), FellBack turns the
// decision into the primary's; the session moves the unit's charge with it.
//
// Writes are learnt as they are acknowledged: Ack reads the commit position (last_gtid)
// of each response before its end reaches the client, and records it for the tables the
// unit wrote, so that no read arriving after the acknowledgement misses the write.
//
// A nil *Session routes nothing: every unit runs on the primary, uncounted. That is a
// session of a proxy without replicas.
package routing
