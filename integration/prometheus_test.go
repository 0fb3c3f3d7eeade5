package integration

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/deploy"
	"github.com/gatekeeperdb/gatekeeper/internal/fleet/etcdtest"
)

// offInTest lists the dashboard and alert selectors that select nothing in this test, with
// the feature each needs. Nothing is skipped silently: a selector that returns no data and
// is not listed here fails the test, and one listed here that returns data fails it too.
var offInTest = map[string]string{}

// TestPrometheusEvaluatesDashboardAndAlerts runs two gatekeeper processes (passthrough and
// pooled, admission on, with a policer and the monitor; pooled with the result cache in mode
// rules and the adaptive capacity) under a load that makes every counter move, scraped by a real Prometheus server
// that loads deploy/prometheus/alerts.yml.
// Every query of the dashboard, and every selector of every alert rule, must return data
// through Prometheus's HTTP API, every whole rule expression must evaluate, and every rule
// must be loaded and healthy.
func TestPrometheusEvaluatesDashboardAndAlerts(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus not found: install Debian's prometheus package (apt-get install prometheus), as .ci/run does")
	}
	dash, err := deploy.ReadDashboard()
	if err != nil {
		t.Fatal(err)
	}
	rules, err := deploy.AlertRules()
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	etcd := etcdtest.Start(t) // the pooled proxy is a fleet of one, for the fleet's series
	passthrough := startScraped(t, dir, "passthrough", `
mode: passthrough
client:
  max_connections: 40
`)
	pooled := startScraped(t, dir, "pooled", `
mode: pooled
auth:
  from_backend: true
pools:
  max_open: 4
  max_idle: 2
  wait_timeout: 2s
cache:
  mode: rules # no rule asks for a result: the cache's series exist, and the load runs as without it
fleet:
  etcd: [`+etcd.Endpoint+`]
  prefix: /prometheus-test/
`)

	promAddr := freeAddr(t)
	promCfg := filepath.Join(dir, "prometheus.yml")
	alerts := filepath.Join(repoRoot(), "deploy", "prometheus", "alerts.yml")
	writeFile(t, promCfg, fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %s
scrape_configs:
  - job_name: gatekeeper
    static_configs:
      - targets: [%q, %q]
`, alerts, passthrough.admin, pooled.admin))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prom := exec.CommandContext(ctx, promBin, "--config.file="+promCfg,
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+promAddr,
		"--log.level=warn")
	promLog := &lockedBuffer{}
	prom.Stdout, prom.Stderr = promLog, promLog
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = prom.Process.Kill()
		_ = prom.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", promLog.String())
		}
	}()
	api := "http://" + promAddr
	waitFor(t, 30*time.Second, "prometheus ready", func() bool {
		code, _ := tryGet(api + "/-/ready")
		return code == http.StatusOK
	})

	// Once, early, so that their counters are scraped before and after: a login with the
	// wrong password, and connections past client.max_connections.
	if db, err := sql.Open("mysql", fmt.Sprintf("%s:wrong@tcp(%s)/%s", env.User, passthrough.addr, env.Database)); err == nil {
		if err := db.Ping(); err == nil {
			t.Error("a login with a wrong password succeeded")
		}
		db.Close()
	}
	var held []net.Conn
	for range 45 {
		if c, err := net.Dial("tcp", passthrough.addr); err == nil {
			held = append(held, c)
		}
	}
	time.Sleep(200 * time.Millisecond)
	for _, c := range held {
		c.Close()
	}

	loadCtx, stopLoad := context.WithTimeout(ctx, 15*time.Second)
	defer stopLoad()
	var wg sync.WaitGroup
	for _, g := range []*scrapedProxy{passthrough, pooled} {
		db := openDB(t, g.addr, "")
		db.SetMaxOpenConns(24)
		for i := range 12 {
			wg.Add(1)
			go func() { // ends with loadCtx
				defer wg.Done()
				driveLoad(loadCtx, db, i)
			}()
		}
	}
	wg.Wait()

	// Every dashboard query returns data.
	vars := strings.NewReplacer("$__rate_interval", "10s", "$instance", ".*")
	for _, q := range dash.Queries() {
		expr := vars.Replace(q.Expr)
		n, err := promQuery(api, expr)
		where := fmt.Sprintf("dashboard %q %s", q.Panel, q.RefID)
		switch {
		case err != nil:
			t.Errorf("%s: %v\n%s", where, err, expr)
		case n == 0 && offInTest[q.Expr] == "":
			t.Errorf("%s: no data\n%s", where, expr)
		case n > 0 && offInTest[q.Expr] != "":
			t.Errorf("%s: listed as needing %s, but returns data", where, offInTest[q.Expr])
		}
	}
	// The errors clients were sent are counted by origin and code: the missing table (the
	// server's 1146), the refused units (1205) and the refused connections (1040).
	for _, sel := range []string{`gatekeeper_client_errors_total{origin="server", code="1146"}`,
		`gatekeeper_client_errors_total{origin="proxy", code="1205"}`,
		`gatekeeper_client_errors_total{origin="proxy", code="1040"}`} {
		if n, err := promQuery(api, sel+" > 0"); err != nil || n == 0 {
			t.Errorf("%s: no errors counted (%v)", sel, err)
		}
	}
	// Every alert expression evaluates, and each series it selects exists.
	for _, r := range rules {
		if _, err := promQuery(api, r.Expr); err != nil {
			t.Errorf("alert %s: %v", r.Alert, err)
		}
		for _, sel := range deploy.Selectors(r.Expr) {
			n, err := promQuery(api, sel)
			switch {
			case err != nil:
				t.Errorf("alert %s: %s: %v", r.Alert, sel, err)
			case n == 0 && offInTest[sel] == "":
				t.Errorf("alert %s: %s selects nothing", r.Alert, sel)
			case n > 0 && offInTest[sel] != "":
				t.Errorf("alert %s: %s listed as needing %s, but selects data", r.Alert, sel, offInTest[sel])
			}
		}
	}
	// Prometheus loaded every rule and evaluated it without error.
	checkRulesHealthy(t, api, rules)
}

// scrapedProxy is a gatekeeper process for Prometheus to scrape.
type scrapedProxy struct {
	addr, admin string
}

// startScraped runs the gatekeeper binary with admission on, a policer for the type "slow",
// the monitor and extra configuration, and waits until it is ready.
// replicasOf gives the pooled proxy the test replicas, so that its reads are routed.
func replicasOf(name string) string {
	if name != "pooled" {
		return ""
	}
	return fmt.Sprintf("  replicas: [%q, %q]\n", env.Replica1, env.Replica2)
}

// capacityOf gives the pooled proxy the adaptive capacity, whose metrics the dashboard
// draws, and the passthrough one a static capacity.
func capacityOf(name string) string {
	if name != "pooled" {
		return "30ms"
	}
	return "auto\n  capacity_min: 10ms\n  capacity_start: 30ms"
}

func startScraped(t *testing.T, dir, name, extra string) *scrapedProxy {
	t.Helper()
	bin := gatekeeperBinary(t)
	p := &scrapedProxy{addr: freeAddr(t), admin: freeAddr(t)}
	cfg := filepath.Join(dir, name+".yaml")
	writeFile(t, cfg, fmt.Sprintf(`listen: %s
admin:
  listen: %s
backends:
  primary: %s
%sadmission:
  enabled: true
  capacity: %s
  queue_timeout: 300ms
  max_queue: 50
  reserve:
    floor: 5ms
  policers:
    - name: slow
      type: slow
      rate: 4
      burst: 2
monitor:
  user: %s
  password: %s
%s`, p.addr, p.admin, env.Primary, replicasOf(name), capacityOf(name), env.User, env.Password, extra))
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", "--config", cfg)
	log := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("gatekeeper %s log:\n%s", name, log.String())
		}
	})
	waitFor(t, 30*time.Second, name+" ready", func() bool {
		code, _ := tryGet("http://" + p.admin + "/readyz")
		return code == http.StatusOK
	})
	return p
}

// driveLoad runs a mix until ctx ends: point reads of a few shapes, a statement that fails
// on the server, SLEEPs tagged "slow" that queue, time out and meet the policer, and in
// every tenth worker a GET_LOCK that pins a pooled session.
func driveLoad(ctx context.Context, db *sql.DB, worker int) {
	for i := 0; ctx.Err() == nil; i++ {
		var err error
		switch {
		case worker%4 == 0:
			_, err = db.ExecContext(ctx, "/* gk:type=slow */ SELECT SLEEP(0.1)")
		case i%10 == 0:
			_, err = db.ExecContext(ctx, "SELECT * FROM no_such_table")
		case worker == 5 && i%20 == 1:
			var got sql.NullInt64
			err = db.QueryRowContext(ctx, "SELECT GET_LOCK('gk_prometheus_test', 0) + RELEASE_LOCK('gk_prometheus_test')").Scan(&got)
		default:
			var n int
			err = db.QueryRowContext(ctx, fmt.Sprintf("SELECT %d + ?", i%3), i).Scan(&n)
		}
		var me *mysql.MySQLError
		if err != nil && ctx.Err() == nil && !errors.As(err, &me) {
			time.Sleep(10 * time.Millisecond) // not an answer from the server: back off a little
		}
	}
}

// promQuery evaluates expr now through Prometheus's HTTP API and returns how many series
// or samples it gave.
func promQuery(api, expr string) (int, error) {
	resp, err := http.Get(api + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, fmt.Errorf("query API: %w", err)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("%s: %s", r.ErrorType, r.Error)
	}
	if r.Data.ResultType == "scalar" {
		return 1, nil
	}
	var series []json.RawMessage
	if err := json.Unmarshal(r.Data.Result, &series); err != nil {
		return 0, fmt.Errorf("query API result: %w", err)
	}
	return len(series), nil
}

// checkRulesHealthy asks Prometheus for its rules: every rule of alerts.yml must be loaded,
// evaluated, and healthy.
func checkRulesHealthy(t *testing.T, api string, want []deploy.Rule) {
	t.Helper()
	resp, err := http.Get(api + "/api/v1/rules?type=alert")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	health := map[string]string{}
	for _, g := range r.Data.Groups {
		for _, rule := range g.Rules {
			health[rule.Name] = rule.Health
			if rule.Health != "ok" {
				t.Errorf("rule %s: health %q %s", rule.Name, rule.Health, rule.LastError)
			}
		}
	}
	for _, rule := range want {
		if _, ok := health[rule.Alert]; !ok {
			t.Errorf("Prometheus did not load rule %s", rule.Alert)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tryGet returns the status of a GET of url, or 0 when it could not be made.
func tryGet(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// lockedBuffer collects a process's output for the log of a failed test.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
