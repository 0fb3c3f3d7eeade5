// Package admission decides when a unit of work may go to the database. It follows three
// papers: Gatekeeper (Elnikety et al., "A Method for Transparent Admission Control and Request
// Scheduling in E-Commerce Web Sites") for the capacity as milliseconds of concurrent
// estimated work, admission while load plus cost fits it, and a shortest-job-first queue
// whose aging bound keeps any unit from waiting more than X times its expected service time;
// AWAIT (Lu et al.) for the session gate, which past A active units refuses new sessions and
// holds accepted ones in a blocking queue of adaptive size B; and the template servers
// (Courtwright et al.) for a reserve of capacity kept for quick units, with a bounded lane
// through which lengthy units may use it.
//
// Like CockroachDB's admission control, it keeps apart who goes next from whether there is
// room, and the adaptive capacity from both. Three parts, each in its own file, hold the
// state; a Controller joins them under one lock:
//
//   - The queue (queue.go) orders the waiting units: the discipline's order (fifo, or sjf
//     with its probes first), the bounds of aging and last call, the deadlines, and the units
//     that wait aside so that none holds back those behind it: the session gate's blocking
//     queue, transactions held by max_open_transactions, lengthy units parked for the lane,
//     and units waiting for their unmeasured type's probe. It never asks about room.
//   - The granter (granter.go) holds the capacity and what runs against it: the load, the
//     running units by expected end, the open transactions, the reserve with its lengthy lane
//     and the lane's pace (reserve.go, pace.go). It says whether a unit fits now and when one
//     would; it never orders units.
//   - The adjuster (adjust.go, solo.go, judge.go) is the adaptive capacity. It is fed plain
//     observations: each completed unit's estimated cost and busy time and whether it ran
//     alone, whether units wait, and the running units and their load over time. From them it
//     measures how many times longer than alone units run (their stretch) and sets the
//     granter's capacity and its bound on running units. It sees neither the queue nor the
//     granter.
//
// Dispatch (dispatch.go) is where they meet: it asks the queue for candidates (its head, the
// unit whose bound comes first, a parked lengthy unit, a quick unit that may pass a lengthy
// head) and the granter whether each fits, and admits them while one does. The Controller
// adds the session gate (sessions.go), the counters, and the API: Arrive, Wait, Release,
// Cancel, Tick and Configure. Token-bucket policers (policer.go), after Voigt and
// Gunningberg's adaptive inbound controls, stand before it all.
//
// It is pure logic: no I/O, and time comes from a Clock, so that tests and the simulator
// drive it with a manual clock. A Ticket, owned by the caller and reused unit after unit,
// carries one unit through Arrive, an optional Wait, and Release.
package admission
