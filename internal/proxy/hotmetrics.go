package proxy

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatekeeperdb/gatekeeper/internal/classify"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// hotMetrics are the series every relayed command adds to: commands, statement latency,
// units, bytes and the classifier's verdicts. A Prometheus counter or histogram is one
// set of words that every processor writes, so on a busy many-core host each command
// waited for those cache lines to come over from the processor that wrote them last.
// Here every session adds to one of several stripes, chosen by its id, and a scrape sums
// the stripes: sessions on different processors seldom share a stripe, and the adds stay
// local.
type hotMetrics struct {
	stripes []hotStripe

	commands   *prometheus.Desc
	statements *prometheus.Desc
	units      *prometheus.Desc
	unitBusy   *prometheus.Desc
	bytesIn    *prometheus.Desc
	bytesOut   *prometheus.Desc
	classified *prometheus.Desc
	unsure     *prometheus.Desc

	// commandNames are the label of each command byte's series; unknown bytes share one.
	commandNames [256]string
	// timedSeries maps a command byte to its series of the statement histogram: 1 + its
	// index in timedCommands, 0 (other) for the rest.
	timedSeries [256]uint8
}

// hotStripe is one stripe of the hot counters. Every field only grows, by atomic adds.
type hotStripe struct {
	commands   [256]atomic.Uint64
	statement  [len(timedCommands) + 1]durations
	unitBusy   durations
	units      [2]atomic.Uint64 // autocommit statements, transactions
	bytesIn    atomic.Uint64
	bytesOut   atomic.Uint64
	classified [classify.NumKinds]atomic.Uint64
	unsure     atomic.Uint64
	_          [64]byte // the next stripe's first words on a line of their own
}

// durations is a latency histogram's counts: one per bucket of latencyBuckets and one
// past the last, and the sum in nanoseconds.
type durations struct {
	counts [numLatencyBuckets + 1]atomic.Uint64
	sumNS  atomic.Uint64
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
	h.counts[i].Add(1)
	h.sumNS.Add(uint64(d))
}

// Unit kinds, the index in hotStripe.units.
const (
	unitStatement = iota
	unitTransaction
)

func newHotMetrics() *hotMetrics {
	// Enough stripes that the sessions on different processors seldom meet on one.
	n := 4
	for n < 4*runtime.GOMAXPROCS(0) && n < 256 {
		n *= 2
	}
	h := &hotMetrics{
		stripes: make([]hotStripe, n),
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
	}
	for i := range h.commandNames {
		h.commandNames[i] = "unknown"
	}
	for _, c := range protocol.Commands() {
		h.commandNames[c] = protocol.CommandName(c)
	}
	for i, c := range timedCommands {
		h.timedSeries[c] = uint8(i + 1)
	}
	return h
}

// stripe is the stripe of the session with id.
func (h *hotMetrics) stripe(id uint64) *hotStripe {
	return &h.stripes[id%uint64(len(h.stripes))]
}

// Describe implements prometheus.Collector.
func (h *hotMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{h.commands, h.statements, h.units, h.unitBusy, h.bytesIn, h.bytesOut, h.classified, h.unsure} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the stripes summed. Every series is there from
// the start, at zero.
func (h *hotMetrics) Collect(ch chan<- prometheus.Metric) {
	var commands [256]uint64
	var statement [len(timedCommands) + 1]durationSums
	var unitBusy durationSums
	var units [2]uint64
	var in, out, unsure uint64
	var classified [classify.NumKinds]uint64
	for i := range h.stripes {
		s := &h.stripes[i]
		for c := range commands {
			commands[c] += s.commands[c].Load()
		}
		for j := range statement {
			statement[j].add(&s.statement[j])
		}
		unitBusy.add(&s.unitBusy)
		for k := range units {
			units[k] += s.units[k].Load()
		}
		in += s.bytesIn.Load()
		out += s.bytesOut.Load()
		for k := range classified {
			classified[k] += s.classified[k].Load()
		}
		unsure += s.unsure.Load()
	}
	byName := map[string]uint64{}
	for c, n := range commands {
		byName[h.commandNames[c]] += n
	}
	for name, n := range byName {
		ch <- prometheus.MustNewConstMetric(h.commands, prometheus.CounterValue, float64(n), name)
	}
	ch <- statement[0].metric(h.statements, "other")
	for i, c := range timedCommands {
		ch <- statement[i+1].metric(h.statements, protocol.CommandName(c))
	}
	ch <- prometheus.MustNewConstMetric(h.units, prometheus.CounterValue, float64(units[unitStatement]), "statement")
	ch <- prometheus.MustNewConstMetric(h.units, prometheus.CounterValue, float64(units[unitTransaction]), "transaction")
	ch <- unitBusy.metric(h.unitBusy)
	ch <- prometheus.MustNewConstMetric(h.bytesIn, prometheus.CounterValue, float64(in))
	ch <- prometheus.MustNewConstMetric(h.bytesOut, prometheus.CounterValue, float64(out))
	for k := range classify.NumKinds {
		ch <- prometheus.MustNewConstMetric(h.classified, prometheus.CounterValue, float64(classified[k]), k.String())
	}
	ch <- prometheus.MustNewConstMetric(h.unsure, prometheus.CounterValue, float64(unsure))
}

// durationSums is a histogram's stripes summed.
type durationSums struct {
	counts [numLatencyBuckets + 1]uint64
	sumNS  uint64
}

func (d *durationSums) add(h *durations) {
	for i := range d.counts {
		d.counts[i] += h.counts[i].Load()
	}
	d.sumNS += h.sumNS.Load()
}

// metric is the histogram with cumulative buckets. Its count is the buckets' total, so
// that a scrape during an observation still sees a consistent histogram.
func (d *durationSums) metric(desc *prometheus.Desc, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, numLatencyBuckets)
	var n uint64
	for i, bound := range latencyBuckets {
		n += d.counts[i]
		buckets[bound] = n
	}
	n += d.counts[numLatencyBuckets]
	return prometheus.MustNewConstHistogram(desc, n, time.Duration(d.sumNS).Seconds(), buckets, labels...)
}
