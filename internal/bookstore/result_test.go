package bookstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPercentile(t *testing.T) {
	var hundred []time.Duration
	for i := 1; i <= 100; i++ {
		hundred = append(hundred, time.Duration(i)*time.Millisecond)
	}
	ten := hundred[:10]
	tests := []struct {
		name    string
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		{"none", nil, 50, 0},
		{"one", []time.Duration{7}, 99, 7},
		{"median of 100", hundred, 50, 50 * time.Millisecond},
		{"p95 of 100", hundred, 95, 95 * time.Millisecond},
		{"p99 of 100", hundred, 99, 99 * time.Millisecond},
		{"max of 100", hundred, 100, 100 * time.Millisecond},
		{"smallest rank", hundred, 0.001, 1 * time.Millisecond},
		{"median of 10", ten, 50, 5 * time.Millisecond},
		{"p95 of 10 is the max", ten, 95, 10 * time.Millisecond},
		{"p91 of 10", ten, 91, 10 * time.Millisecond},
		{"p90 of 10", ten, 90, 9 * time.Millisecond},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, percentile(tt.samples, tt.p), tt.name)
	}
}

// testResult is what two clients recorded in 2 seconds.
func testResult(t *testing.T) *Result {
	t.Helper()
	cfg, err := Config{DSN: "u:secret@tcp(127.0.0.1:3306)/shop", SLO: map[Interaction]time.Duration{Home: 10 * time.Millisecond}}.withDefaults()
	require.NoError(t, err)
	var slo [numInteractions]time.Duration
	for in, d := range cfg.SLO {
		slo[in] = d
	}
	a, b := newRecorder(slo), newRecorder(slo)
	a.add(Home, 5*time.Millisecond, completed, nil)
	a.add(Home, 15*time.Millisecond, completed, nil)
	b.add(Home, 1*time.Millisecond, completed, nil)
	b.add(Home, 0, failed, errors.New("boom"))
	refusal := &mysql.MySQLError{Number: 1040, Message: "gatekeeper: queue timeout"}
	a.add(BestSellers, 0, refused, refusal)
	b.add(BestSellers, 0, refused, refusal)
	b.add(BestSellers, 0, overflow, nil)
	a.add(BestSellers, 0, timedOut, context.DeadlineExceeded)
	a.add(BestSellers, 3*time.Second, completed, nil)
	return result(cfg, 2*time.Second, []*recorder{a, b})
}

func TestResultMerges(t *testing.T) {
	r := testResult(t)
	require.Len(t, r.Classes, 14)
	home := r.Classes[Home]
	assert.Equal(t, ClassResult{
		Name: "home", Completed: 3, Failed: 1, Good: 2, Throughput: 1.5, Goodput: 1,
		Mean: 7 * time.Millisecond, P50: 5 * time.Millisecond, P95: 15 * time.Millisecond,
		P99: 15 * time.Millisecond, Max: 15 * time.Millisecond,
	}, home)
	bs := r.Classes[BestSellers]
	assert.Equal(t, 1, bs.Completed)
	assert.Equal(t, 3, bs.Refused, "two refusals and an overflow")
	assert.Equal(t, 1, bs.Overflow)
	assert.Equal(t, 1, bs.TimedOut)
	assert.Equal(t, 0, bs.Good, "3s is past the 2s SLO of Best Sellers")
	assert.Equal(t, "admin_confirm", r.Classes[AdminConfirm].Name)
	assert.Zero(t, r.Classes[AdminConfirm].Completed)

	tot := r.Total
	assert.Equal(t, "total", tot.Name)
	assert.Equal(t, 4, tot.Completed)
	assert.Equal(t, 1, tot.Failed)
	assert.Equal(t, 3, tot.Refused)
	assert.Equal(t, 1, tot.TimedOut)
	assert.Equal(t, 2, tot.Good)
	assert.Equal(t, 3*time.Second, tot.Max)
	assert.Equal(t, 5*time.Millisecond, tot.P50)

	require.Len(t, r.Errors, 3)
	assert.Equal(t, ErrorCount{Class: "best_sellers", Outcome: "refused", Message: "Error 1040: gatekeeper: queue timeout", Count: 2}, r.Errors[0])
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, testResult(t).WriteTable(&b))
	out := b.String()
	assert.Contains(t, out, "| home | 3 | 1 | 0 | 0 | 0 | 2 | 10.0 | 1.50 | 1.00 | 7.00 | 5.00 | 15.0 | 15.0 | 15.0 |\n")
	assert.Contains(t, out, "| best_sellers | 1 | 0 | 3 | 1 | 1 | 0 | 2000 |")
	assert.Contains(t, out, "| **total** | 4 | 1 | 3 | 1 | 1 | 2 |  |")
	assert.Contains(t, out, "| best_sellers | refused | 2 | Error 1040: gatekeeper: queue timeout |")
	// A header, a separator, 14 classes and the total, then the errors.
	table, _, _ := strings.Cut(out, "\n\n")
	assert.Len(t, strings.Split(table, "\n"), 17)
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, testResult(t).WriteJSON(&b))
	var got struct {
		Config struct {
			DSN     string
			Mix     string
			Clients int
			Timeout string
		}
		ElapsedSeconds float64 `json:"elapsed_seconds"`
		Classes        []struct {
			Name      string
			Completed int
			Refused   int
			Overflow  int
			MeanMS    float64 `json:"mean_ms"`
			SLOMS     float64 `json:"slo_ms"`
		}
		Total struct{ Completed int }
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &got))
	assert.Equal(t, "u:xxx@tcp(127.0.0.1:3306)/shop", got.Config.DSN, "no password in the output")
	assert.NotContains(t, b.String(), "secret")
	assert.Equal(t, "shopping", got.Config.Mix)
	assert.Equal(t, 50, got.Config.Clients)
	assert.Equal(t, "30s", got.Config.Timeout)
	assert.Equal(t, 2.0, got.ElapsedSeconds)
	require.Len(t, got.Classes, 14)
	assert.Equal(t, "home", got.Classes[0].Name)
	assert.Equal(t, 7.0, got.Classes[0].MeanMS)
	assert.Equal(t, 10.0, got.Classes[0].SLOMS)
	assert.Equal(t, 3, got.Classes[BestSellers].Refused)
	assert.Equal(t, 1, got.Classes[BestSellers].Overflow)
	assert.Equal(t, 4, got.Total.Completed)
}

// TestPerSecond: each completed interaction counts in the second of the run it ended in
// (its start plus its response time), across the recorders; the others do not count.
func TestPerSecond(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	r := &runner{cfg: Config{PerSecond: true}, start: start}
	var slo [numInteractions]time.Duration
	a, b := newRecorder(slo), newRecorder(slo)
	a.inSecond(r, Home, start.Add(290*time.Millisecond), 10*time.Millisecond, completed)
	b.inSecond(r, Home, start.Add(870*time.Millisecond), 30*time.Millisecond, completed)
	b.inSecond(r, BestSellers, start.Add(500*time.Millisecond), 2*time.Second, completed)
	a.inSecond(r, Home, start.Add(1600*time.Millisecond), time.Second, timedOut)
	a.inSecond(r, Home, start.Add(-2*time.Millisecond), time.Millisecond, completed)
	res := &Result{Seconds: perSecond(start, []*recorder{a, b})}
	require.Len(t, res.Seconds, 3)
	assert.Equal(t, 2, res.Seconds[0].Completed[Home])
	assert.Equal(t, 40*time.Millisecond, res.Seconds[0].Total[Home])
	assert.Equal(t, Second{Start: start.Add(time.Second)}, res.Seconds[1])
	assert.Equal(t, 1, res.Seconds[2].Completed[BestSellers])
	assert.Zero(t, res.Seconds[2].Completed[Home], "a timeout is not a completion")

	var out bytes.Buffer
	require.NoError(t, res.WriteSeconds(&out))
	assert.Equal(t, "unix,class,completed,mean_ms\n"+
		"1700000000.000,home,2,20.000\n"+
		"1700000002.000,best_sellers,1,2000.000\n", out.String())

	r.cfg.PerSecond = false
	c := newRecorder(slo)
	c.inSecond(r, Home, start, time.Millisecond, completed)
	assert.Empty(t, c.seconds, "not asked for")
}

func TestErrorsGroupByCause(t *testing.T) {
	r := newRecorder([numInteractions]time.Duration{})
	for _, ms := range []int{300, 301, 1250} {
		r.add(Home, 0, refused, &mysql.MySQLError{Number: 1205,
			Message: fmt.Sprintf("gatekeeper: queue timeout: waited %d ms for admission", ms)})
	}
	r.add(Home, 0, failed, &mysql.MySQLError{Number: 1146, Message: "Table 'shop.t1' doesn't exist"})
	// Past maxErrorKinds, further messages are still counted, under one row.
	for i := range maxErrorKinds + 5 {
		r.add(Home, 0, failed, fmt.Errorf("dial tcp 127.0.0.1:%d: connection refused", 40000+i))
	}
	res := result(Config{}, time.Second, []*recorder{r})

	byMessage := map[string]int{}
	total := 0
	for _, e := range res.Errors {
		byMessage[e.Message] += e.Count
		total += e.Count
	}
	assert.Equal(t, 3, byMessage["Error 1205: gatekeeper: queue timeout: waited N ms for admission"])
	assert.Equal(t, 1, byMessage["Error 1146: Table 'shop.t1' doesn't exist"], "digits inside a name stay")
	assert.Equal(t, 7, byMessage[otherMessages], "37 dial errors: 30 fit under the cap with the two above")
	assert.Equal(t, 3+1+maxErrorKinds+5, total, "no error goes uncounted")
}
