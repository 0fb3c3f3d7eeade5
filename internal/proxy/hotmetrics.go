package proxy

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// hotMetrics are the series every relayed command adds to: commands, statement latency,
// units, bytes, the classifier's verdicts and the wait for admission. A Prometheus counter
// or histogram is one set of words that every processor writes, so on a busy many-core host
// each command waited for those cache lines to come over from the processor that wrote them
// last. Here every session counts in its own sessionCounts, which only its goroutine writes;
// a scrape sums the live sessions' counts and those of the sessions that ended.
type hotMetrics struct {
	mu sync.Mutex
	// live are the counts of the sessions running; ended adds up those of the sessions
	// that ended.
	live  map[*sessionCounts]struct{}
	ended sessionCounts

	commands   *prometheus.Desc
	statements *prometheus.Desc
	units      *prometheus.Desc
	unitBusy   *prometheus.Desc
	bytesIn    *prometheus.Desc
	bytesOut   *prometheus.Desc
	classified *prometheus.Desc
	unsure     *prometheus.Desc
	waits      *prometheus.Desc

	// commandSlot maps a command byte to its slot in sessionCounts.commands: 1 + its
	// index in protocol.Commands, 0 (unknown) for the rest; slotNames are the labels.
	commandSlot [256]uint8
	slotNames   []string
	// timedSeries maps a command byte to its series of the statement histogram: 1 + its
	// index in timedCommands, 0 (other) for the rest.
	timedSeries [256]uint8
}

// maxCommandSlots bounds the commands counted apart, unknown included.
const maxCommandSlots = 48

// sessionCounts are one session's counts. Only the session's goroutine adds to them, so
// an add is a load and a store; they are atomic for the scrapes that read them.
type sessionCounts struct {
	commands   [maxCommandSlots]count
	statement  [len(timedCommands) + 1]durations
	unitBusy   durations
	units      [2]count // autocommit statements, transactions
	bytesIn    count
	bytesOut   count
	classified [classify.NumKinds]count
	unsure     count
	waits      waits
}

// count is a counter with one writer.
type count struct{ atomic.Uint64 }

func (c *count) add(n uint64) { c.Store(c.Load() + n) }

// durations is a latency histogram's counts: one per bucket of latencyBuckets and one
// past the last, and the sum in nanoseconds.
type durations struct {
	counts [numLatencyBuckets + 1]count
	sumNS  count
}

const numLatencyBuckets = 17

// latencyBounds are latencyBuckets as durations, for the comparisons of observe.
var latencyBounds = func() (b [numLatencyBuckets]time.Duration) {
	if len(latencyBuckets) != numLatencyBuckets {
		panic("proxy: numLatencyBuckets differs from len(latencyBuckets)")
	}
	for i, s := range latencyBuckets {
		b[i] = time.Duration(s * float64(time.Second))
	}
	return b
}()

// observe counts d in the first bucket whose bound it does not exceed.
func (h *durations) observe(d time.Duration) {
	d = max(d, 0)
	i := 0
	for i < numLatencyBuckets && d > latencyBounds[i] {
		i++
	}
	h.counts[i].add(1)
	h.sumNS.add(uint64(d))
}

// waits is a histogram of the waits for admission: durations, with a bucket of its own
// for those of zero or less.
type waits struct {
	zero count
	durations
}

func (w *waits) observe(d time.Duration) {
	if d <= 0 {
		w.zero.add(1)
		return
	}
	w.durations.observe(d)
}

func (w *waits) addFrom(o *waits) {
	w.zero.add(o.zero.Load())
	w.durations.addFrom(&o.durations)
}

// Unit kinds, the index in sessionCounts.units.
const (
	unitStatement = iota
	unitTransaction
)

func newHotMetrics() *hotMetrics {
	h := &hotMetrics{
		live: map[*sessionCounts]struct{}{},
		commands: prometheus.NewDesc("gatekeeper_client_commands_total",
			"Commands received from clients, by command.", []string{"command"}, nil),
		statements: prometheus.NewDesc("gatekeeper_statement_duration_seconds",
			"Time from sending a command to the backend to the last packet of its response, by command.",
			[]string{"command"}, nil),
		units: prometheus.NewDesc("gatekeeper_units_total",
			"Units of work completed, by kind: autocommit statements and transactions.", []string{"kind"}, nil),
		unitBusy: prometheus.NewDesc("gatekeeper_unit_busy_seconds",
			"Backend busy time of completed units (summed over their statements).", nil, nil),
		bytesIn: prometheus.NewDesc("gatekeeper_client_received_bytes_total",
			"Bytes received from clients after the handshake (sent on to backends).", nil, nil),
		bytesOut: prometheus.NewDesc("gatekeeper_client_sent_bytes_total",
			"Bytes sent to clients after the handshake (relayed from backends).", nil, nil),
		classified: prometheus.NewDesc("gatekeeper_statements_classified_total",
			"Statements (COM_QUERY and COM_STMT_PREPARE) classified, by kind.", []string{"kind"}, nil),
		unsure: prometheus.NewDesc("gatekeeper_statements_unsure_total",
			"Statements the classifier could not read with confidence, treated as writes to unknown tables.", nil, nil),
		waits: prometheus.NewDesc("gatekeeper_admission_wait_seconds",
			"Time units waited for admission (0 for those admitted at once), refused ones included.", nil, nil),
		slotNames: []string{"unknown"},
	}
	for _, c := range protocol.Commands() {
		if len(h.slotNames) == maxCommandSlots {
			panic("proxy: more commands than maxCommandSlots")
		}
		h.commandSlot[c] = uint8(len(h.slotNames))
		h.slotNames = append(h.slotNames, protocol.CommandName(c))
	}
	for i, c := range timedCommands {
		h.timedSeries[c] = uint8(i + 1)
	}
	return h
}

// open gives a session its counts.
func (h *hotMetrics) open() *sessionCounts {
	c := &sessionCounts{}
	h.mu.Lock()
	h.live[c] = struct{}{}
	h.mu.Unlock()
	return c
}

// close adds the counts of a session that ended to those of the others that did.
func (h *hotMetrics) close(c *sessionCounts) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.live, c)
	h.ended.addFrom(c)
}

// command counts a command of byte cmd.
func (h *hotMetrics) command(c *sessionCounts, cmd byte) {
	c.commands[h.commandSlot[cmd]].add(1)
}

// statement is the latency histogram of command byte cmd.
func (h *hotMetrics) statement(c *sessionCounts, cmd byte) *durations {
	return &c.statement[h.timedSeries[cmd]]
}

// addFrom adds o's counts to c's. Only for the ended sessions' counts, under hotMetrics.mu.
func (c *sessionCounts) addFrom(o *sessionCounts) {
	for i := range c.commands {
		c.commands[i].add(o.commands[i].Load())
	}
	for i := range c.statement {
		c.statement[i].addFrom(&o.statement[i])
	}
	c.unitBusy.addFrom(&o.unitBusy)
	for i := range c.units {
		c.units[i].add(o.units[i].Load())
	}
	c.bytesIn.add(o.bytesIn.Load())
	c.bytesOut.add(o.bytesOut.Load())
	for i := range c.classified {
		c.classified[i].add(o.classified[i].Load())
	}
	c.unsure.add(o.unsure.Load())
	c.waits.addFrom(&o.waits)
}

func (d *durations) addFrom(o *durations) {
	for i := range d.counts {
		d.counts[i].add(o.counts[i].Load())
	}
	d.sumNS.add(o.sumNS.Load())
}

// Describe implements prometheus.Collector.
func (h *hotMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{h.commands, h.statements, h.units, h.unitBusy, h.bytesIn, h.bytesOut, h.classified, h.unsure, h.waits} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the counts of every session, live or ended,
// summed. Every series is there from the start, at zero.
func (h *hotMetrics) Collect(ch chan<- prometheus.Metric) {
	var sum sessionCounts
	h.mu.Lock()
	sum.addFrom(&h.ended)
	for c := range h.live {
		sum.addFrom(c)
	}
	h.mu.Unlock()

	for i, name := range h.slotNames {
		ch <- prometheus.MustNewConstMetric(h.commands, prometheus.CounterValue, float64(sum.commands[i].Load()), name)
	}
	ch <- sum.statement[0].metric(h.statements, "other")
	for i, c := range timedCommands {
		ch <- sum.statement[i+1].metric(h.statements, protocol.CommandName(c))
	}
	ch <- prometheus.MustNewConstMetric(h.units, prometheus.CounterValue, float64(sum.units[unitStatement].Load()), "statement")
	ch <- prometheus.MustNewConstMetric(h.units, prometheus.CounterValue, float64(sum.units[unitTransaction].Load()), "transaction")
	ch <- sum.unitBusy.metric(h.unitBusy)
	ch <- prometheus.MustNewConstMetric(h.bytesIn, prometheus.CounterValue, float64(sum.bytesIn.Load()))
	ch <- prometheus.MustNewConstMetric(h.bytesOut, prometheus.CounterValue, float64(sum.bytesOut.Load()))
	for k := range classify.NumKinds {
		ch <- prometheus.MustNewConstMetric(h.classified, prometheus.CounterValue, float64(sum.classified[k].Load()), k.String())
	}
	ch <- prometheus.MustNewConstMetric(h.unsure, prometheus.CounterValue, float64(sum.unsure.Load()))
	ch <- sum.waits.metric(h.waits)
}

// metric is the histogram with cumulative buckets. Its count is the buckets' total, so
// that a scrape during an observation still sees a consistent histogram.
func (d *durations) metric(desc *prometheus.Desc, labels ...string) prometheus.Metric {
	return d.metricFrom(desc, 0, map[float64]uint64{}, labels)
}

// metricFrom is metric with n counted below the first bucket already, and buckets holding
// those below it.
func (d *durations) metricFrom(desc *prometheus.Desc, n uint64, buckets map[float64]uint64, labels []string) prometheus.Metric {
	for i, bound := range latencyBuckets {
		n += d.counts[i].Load()
		buckets[bound] = n
	}
	n += d.counts[numLatencyBuckets].Load()
	return prometheus.MustNewConstHistogram(desc, n, time.Duration(d.sumNS.Load()).Seconds(), buckets, labels...)
}

// metric is the histogram with cumulative buckets, the first at 0.
func (w *waits) metric(desc *prometheus.Desc) prometheus.Metric {
	n := w.zero.Load()
	return w.durations.metricFrom(desc, n, map[float64]uint64{0: n}, nil)
}
