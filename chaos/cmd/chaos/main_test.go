package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A run of two checks as `go test -json` reports it: one passes, one fails with a message and
// the proxy's log, one is not applicable.
const sampleRun = `{"Action":"start","Package":"github.com/gatekeeperdb/gatekeeper/chaos"}
{"Action":"run","Test":"TestSlowloris"}
{"Action":"output","Test":"TestSlowloris","Output":"=== RUN   TestSlowloris\n"}
{"Action":"run","Test":"TestSlowloris/pooled"}
{"Action":"output","Test":"TestSlowloris/pooled","Output":"chaos: slowloris (pooled): 20 slow clients closed after 2.00 s\n"}
{"Action":"pass","Test":"TestSlowloris/pooled"}
{"Action":"pass","Test":"TestSlowloris"}
{"Action":"run","Test":"TestAdmissionAbuse"}
{"Action":"output","Test":"TestAdmissionAbuse","Output":"chaos: admission abuse (passthrough): SELECT 1 | median 80 ms\n"}
{"Action":"output","Test":"TestAdmissionAbuse","Output":"    abuse_test.go:119: a fresh client's SELECT 1 took 80ms\n"}
{"Action":"output","Test":"TestAdmissionAbuse","Output":"    gatekeeper_test.go:82: the proxy's log, last lines:\n"}
{"Action":"output","Test":"TestAdmissionAbuse","Output":"        time=2026 level=INFO msg=started\n"}
{"Action":"fail","Test":"TestAdmissionAbuse"}
{"Action":"run","Test":"TestReplicaKilled"}
{"Action":"output","Test":"TestReplicaKilled","Output":"chaos: replica killed: not applicable: replica reads are not implemented\n"}
{"Action":"skip","Test":"TestReplicaKilled"}
{"Action":"fail","Package":"github.com/gatekeeperdb/gatekeeper/chaos"}
`

func TestCollectAndReport(t *testing.T) {
	var echo bytes.Buffer
	res := collect(strings.NewReader(sampleRun), &echo)
	if strings.Contains(echo.String(), "=== RUN") || !strings.Contains(echo.String(), "chaos: slowloris (pooled)") {
		t.Errorf("echoed output:\n%s", echo.String())
	}
	want := []line{
		{"TestSlowloris/pooled", "slowloris (pooled)", "20 slow clients closed after 2.00 s"},
		{"TestAdmissionAbuse", "admission abuse (passthrough)", "SELECT 1 | median 80 ms"},
		{"TestReplicaKilled", "replica killed", "not applicable: replica reads are not implemented"},
	}
	if len(res.lines) != len(want) {
		t.Fatalf("lines = %+v, want %+v", res.lines, want)
	}
	verdicts := []string{"pass", "**FAIL**", "not applicable"}
	for i, l := range res.lines {
		if l != want[i] {
			t.Errorf("line %d = %+v, want %+v", i, l, want[i])
		}
		if got := res.verdict(l); got != verdicts[i] {
			t.Errorf("verdict of %s = %q, want %q", l.check, got, verdicts[i])
		}
	}
	if got := res.failures["TestAdmissionAbuse"]; len(got) != 1 || got[0] != "a fresh client's SELECT 1 took 80ms" {
		t.Errorf("failures = %q, want the assertion's message alone", got)
	}

	var order []string
	for _, l := range res.ordered() {
		order = append(order, l.check)
	}
	if want := "slowloris (pooled),replica killed,admission abuse (passthrough)"; strings.Join(order, ",") != want {
		t.Errorf("rows in the order %q, want the checks' order %q", order, want)
	}

	res.duration = 95 * time.Second
	var md bytes.Buffer
	writeReport(&md, res, "`make chaos`", time.Date(2026, 11, 25, 19, 0, 0, 0, time.UTC), "2 CPUs")
	for _, s := range []string{
		"| slowloris (pooled) | **slowloris client.** Both modes;",
		`| SELECT 1 \| median 80 ms | **FAIL** |`,
		"| replica killed | **a replica killed.** Pooled mode routing reads",
		"- `TestAdmissionAbuse`: a fresh client's SELECT 1 took 80ms",
		"Command: `make chaos` (2026-11-25 19:00 UTC; the suite took 1m35s)",
		"Machine: 2 CPUs",
	} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, md.String())
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"bench/results/chaos/README.md":               "bench/results/chaos/README.md",
		"TestNetworkFaults/(passthrough|pooled)/loss": "'TestNetworkFaults/(passthrough|pooled)/loss'",
		"it's": `'it'\''s'`,
		"":     "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
