// Package estimator learns online what each type of request costs the database, so that
// admission can charge a unit its expected cost before it runs.
//
// It follows the Gatekeeper proxy of Elnikety, Nahum, Tracey and Zwaenepoel ("A Method for
// Transparent Admission Control and Request Scheduling in E-Commerce Web Sites", WWW 2004,
// section 3.1): requests are grouped into types, the execution time of every completed
// request is measured from outside the database, and a moving average of recent measurements
// per type is the load that the next request of that type is expected to impose. The paper
// found that costs differ across types by orders of magnitude but within a type far less, and
// that costs under load differ from costs measured in isolation, so they must be learned
// online and keep being learned.
//
// A [Table] maps a type's [Key] (a 64-bit hash chosen by the caller: a statement digest, a
// tag, a user) to its state. The estimate is an exponentially weighted moving average with
// a configured weight w: after a step change in a type's real cost, the error left after n
// samples is (1-w)^n of the step, so the estimate is within a fraction f of the new cost after
// ceil(ln f / ln(1-w)) samples (22 samples for 10% with the default w = 0.1, 44 for 1%).
// Alternatively the estimate is the plain mean of the samples of the last Window, kept in
// twelve time buckets that slide with the clock; it forgets the old cost exactly once Window
// has passed. A type with no sample in the window falls back to its moving average, which is
// maintained in both modes and is what [Table.Save] carries across a restart. A type never
// seen has the configured default cost; [Table.ExpectMeasured] says when an estimate is that
// guess rather than a measurement, so that admission can charge an unknown type by a
// policy of its own instead of trusting the default.
//
// Beside the estimate, each type keeps what an operator needs to see it: the count of
// samples, the rate and the summed cost of the recent horizon (the same time buckets, whence
// the share of the database's load each type accounts for), and a log-bucketed histogram with
// eight buckets per power of two (a relative error within 6.25%) for the 50th, 95th and 99th
// percentiles. The histogram has two generations that rotate every half horizon, so
// percentiles describe between half and all of the horizon.
//
// Both calls on the per-unit path, [Table.Record] and [Table.Estimate], run on hundreds of
// connections at once, and neither takes a lock for a known type. The table is split by key
// into shards (64 for the default thousand types, about sixteen types each for more), each an
// immutable map behind an atomic pointer: a lookup is one atomic load and a map access, and
// the rare writer, adding or evicting a type, publishes a changed copy. Everything a sample
// changes is an atomic word of the type's own state. A time bucket packs the bucket's tick
// into the high bits of its count and of its sum, so that restarting a bucket for a new tick
// and adding to it are one compare-and-swap and no sample lands in the wrong bucket (a read
// racing with a sample of the same type may see it in the count before the sum: an error of
// the samples in flight, gone at the next read). Neither call allocates for a known type.
//
// What a sample measures is the caller's choice: the busy time of a unit on the backend, or,
// with a [Share] clock, its share of the backend's processors over that time, which does not
// grow with the number of units running at once. Either way a type also keeps the moving
// average of its busy time ([Table.RecordBusy], [Table.Expect]): how long a unit of the type
// keeps the backend busy, its expected service time, which is what the paper's aging bound is
// a multiple of. With busy-time costs the two are the same.
//
// Memory is bounded whatever the workload sends: about 2.5 KiB per type and at most MaxTypes
// types. When the table is full, a new type gets in only the second time it is seen (a
// TinyLFU doorkeeper, a small Bloom filter of recently refused keys, remembers the first
// time), and then takes the place of the least used of eight types picked at random, scored
// by a use count that decays with a half-life of a third of the horizon. Evicted types, and
// the samples of types not let in, go to a single "other" bucket that keeps their aggregate
// statistics. So a flood of types that occur once (SQL with unparameterized literals, say)
// costs one shared bucket and no allocation, and cannot push out the types that recur.
// Digests are arbitrary SQL, so the sample text kept for display is cut to 1 KiB.
package estimator
