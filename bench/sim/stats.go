package sim

import (
	"math"
	"time"
)

// Latency summarises response times: count, mean waiting and execution parts, and a
// histogram for percentiles (buckets 2% wide from 10µs).
type Latency struct {
	N    int
	sum  float64 // seconds
	wait float64
	hist [latencyBuckets]uint32
}

const (
	latencyBuckets = 800
	latencyMin     = 10e-6 // seconds
)

var latencyLogBase = math.Log(1.02)

// add records one response of resp seconds, of which wait were spent before the database:
// waiting for admission, or in front of a database under a cluster's limit.
func (l *Latency) add(resp, wait float64) {
	l.N++
	l.sum += resp
	l.wait += wait
	i := 0
	if resp > latencyMin {
		i = min(int(math.Log(resp/latencyMin)/latencyLogBase)+1, latencyBuckets-1)
	}
	l.hist[i]++
}

// merge adds o's responses to l's.
func (l *Latency) merge(o *Latency) {
	l.N += o.N
	l.sum += o.sum
	l.wait += o.wait
	for i, c := range o.hist {
		l.hist[i] += c
	}
}

// Mean returns the mean response time (0 when empty).
func (l *Latency) Mean() time.Duration { return l.avg(l.sum) }

// MeanWait returns the mean time spent waiting for admission (or under a cluster's limit).
func (l *Latency) MeanWait() time.Duration { return l.avg(l.wait) }

// MeanExec returns the mean time spent in the database.
func (l *Latency) MeanExec() time.Duration { return l.avg(l.sum - l.wait) }

func (l *Latency) avg(s float64) time.Duration {
	if l.N == 0 {
		return 0
	}
	return seconds(s / float64(l.N))
}

// Quantile returns the upper bound of the bucket holding quantile q (0 when empty).
func (l *Latency) Quantile(q float64) time.Duration {
	if l.N == 0 {
		return 0
	}
	rank := uint32(math.Ceil(q * float64(l.N)))
	var seen uint32
	for i, c := range l.hist {
		seen += c
		if seen >= rank {
			if i == 0 {
				return seconds(latencyMin)
			}
			return seconds(latencyMin * math.Pow(1.02, float64(i)))
		}
	}
	return seconds(latencyMin * math.Pow(1.02, latencyBuckets-1))
}
