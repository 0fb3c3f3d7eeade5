// Package admission decides when a unit of work may go to the database: the capacity pool
// (milliseconds of concurrent estimated work, with an optional concurrency ceiling), the
// waiting queue and its discipline (fifo, sjf, sjf with an aging bound), deadlines, the
// AWAIT session gate with its blocking queue, and the reserve of capacity for quick units.
//
// It is pure logic: no I/O, and time comes from a Clock, so that tests and the simulator
// drive it with a manual clock. A Ticket, owned by the caller and reused unit after unit,
// carries one unit through Arrive, an optional Wait, and Release.
package admission
