// Package sim is a discrete-event simulator that runs the real admission controller
// (internal/admission) in front of a model database, with a virtual clock, so that its
// policies can be studied at loads and sizes no test machine reaches: hundreds of closed-loop
// clients, open-loop and bursty arrivals, tens of thousands of sessions, in seconds.
//
// The database is processor sharing over K cores with a thrashing penalty (DatabaseConfig):
// every running request is served at the same rate, K/n of full speed once n > K, and past a
// knee of concurrency the whole database slows down as it thrashes, so that without admission
// its throughput falls past saturation, as the Gatekeeper paper measured (its Figure 5).
// Requests draw their demand from the TPC-W shopping mix of the paper's Table 1 (Mix): a class
// by its frequency, then a lognormal demand around the class mean; the interaction that does
// not reach the database is answered at once.
//
// Clients come as a closed loop (each issues, waits for the answer, thinks), an open loop
// (Poisson, or any Arrivals), or sessions arriving by a two-state Markov-modulated Poisson
// process, as in AWAIT, each a closed loop of a number of requests. Between clients and
// database sits the controller, driven exactly as the proxy drives it: Arrive with the
// class's expected cost, then, for a waiting unit, whatever later call admits or refuses it,
// and Release with the time spent in the database. The simulator sees which waiting units
// those calls admitted or refused from their tickets' states, guided by the controller's
// counts of waiting units, so the controller needs no hook for it. Direct runs skip the
// controller.
//
// A run may have a cluster instead of the one database (ClusterConfig): a primary and
// replicas, each a database as above. Writes run on the primary, and once it has answered
// one every replica applies a share of it, so replicas add read capacity but not write
// capacity. Reads go where a balance policy sends them, after Amza, Cox and Zwaenepoel's
// conflict-aware replica scheduling (section 5): SELF, the least estimated work
// outstanding (each request counted at its class's mean demand); LARD, a backend per request
// type, moved off it when overloaded; SQF, the fewest requests outstanding; or round robin.
// A per-backend limit can hold requests in front of a backend whose running estimated work
// reaches it, as that paper's database proxies do. RunBalance compares the policies on
// clusters of several sizes.
//
// A run may have a fleet of proxies instead of the one (FleetConfig): each member its own
// controller and an equal part of the closed loop's clients, alone or coordinated by
// internal/fleet's rule, with members that join and leave. RunFleet asks what N adaptive
// controllers do in front of one database, and whether the rule holds them to one's capacity.
//
// A run is single-threaded and depends only on its Config, seed included. RunAll runs the
// experiments of make sim — capacity by incremental steps, throughput against clients,
// response time per discipline, AWAIT's aborted sessions against the blocking queue at three
// levels of burstiness — many runs at once, and Results writes their charts and report.
package sim
