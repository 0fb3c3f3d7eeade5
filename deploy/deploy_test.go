package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.yaml.in/yaml/v3"

	"github.com/gatekeeperdb/gatekeeper/internal/mdtable"
)

// promtool returns the path of promtool, failing the test with what to install when it is
// missing: the rules are not checked until it runs.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install Debian's prometheus package (apt-get install prometheus), as .ci/run does")
	}
	return p
}

func TestPromtoolCheckRules(t *testing.T) {
	out, err := exec.Command(promtool(t), "check", "rules", "prometheus/alerts.yml").CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

func TestPromtoolCheckConfig(t *testing.T) {
	out, err := exec.Command(promtool(t), "check", "config", "prometheus/prometheus.yml").CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
}

func TestPromtoolTestRules(t *testing.T) {
	out, err := exec.Command(promtool(t), "test", "rules", "prometheus/alerts_test.yml").CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// TestEveryAlertIsTestedAndDocumented checks that each rule has the annotations an
// operator reads and a unit test in alerts_test.yml that expects it to fire.
func TestEveryAlertIsTestedAndDocumented(t *testing.T) {
	rules := alertRules(t)
	tests, err := os.ReadFile("prometheus/alerts_test.yml")
	if err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(tests, &suite); err != nil {
		t.Fatal(err)
	}
	fires := map[string]bool{}
	for _, tc := range suite.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			}
		}
	}
	for _, r := range rules {
		for _, k := range []string{"summary", "description", "runbook"} {
			if strings.TrimSpace(r.Annotations[k]) == "" {
				t.Errorf("alert %s has no %s annotation", r.Alert, k)
			}
		}
		if r.Labels["severity"] != "warning" && r.Labels["severity"] != "critical" {
			t.Errorf("alert %s: severity %q, want warning or critical", r.Alert, r.Labels["severity"])
		}
		if !fires[r.Alert] {
			t.Errorf("alert %s: no test in alerts_test.yml expects it to fire", r.Alert)
		}
	}
}

const dsVar = "${datasource}"

// TestDashboardSchema checks what Grafana needs to import the dashboard and what makes it
// work on any Prometheus: a data source variable every panel uses, an instance variable,
// unique panel ids, and panels that fit the grid without overlapping.
func TestDashboardSchema(t *testing.T) {
	d := readDashboard(t)
	if d.Title == "" || d.UID == "" {
		t.Error("dashboard needs a title and a uid")
	}
	if d.SchemaVersion < 36 { // Grafana 9.0; 10 and later read it
		t.Errorf("schemaVersion %d, want at least 36", d.SchemaVersion)
	}
	vars := map[string]int{}
	for i, v := range d.Templating.List {
		vars[v.Name] = i
	}
	if i, ok := vars["datasource"]; !ok || d.Templating.List[i].Type != "datasource" || d.Templating.List[i].Query != "prometheus" {
		t.Error(`templating needs a variable "datasource" of type datasource for prometheus`)
	}
	if i, ok := vars["instance"]; !ok {
		t.Error(`templating needs a variable "instance"`)
	} else if v := d.Templating.List[i]; v.Type != "query" || v.Datasource == nil || v.Datasource.UID != dsVar || !v.IncludeAll || v.AllValue != ".*" {
		t.Errorf("instance variable: want a query on %s with All as .*, got %+v", dsVar, v)
	}

	ids := map[int]string{}
	var rows []string
	type rect struct{ x0, y0, x1, y1 int }
	var placed []rect
	var names []string
	for _, p := range d.AllPanels() {
		if p.ID <= 0 {
			t.Errorf("panel %q: id %d", p.Title, p.ID)
		}
		if other, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, g)
		}
		r := rect{g.X, g.Y, g.X + g.W, g.Y + g.H}
		for i, o := range placed {
			if r.x0 < o.x1 && o.x0 < r.x1 && r.y0 < o.y1 && o.y0 < r.y1 {
				t.Errorf("panel %q overlaps %q", p.Title, names[i])
			}
		}
		placed, names = append(placed, r), append(names, p.Title)
		if p.Type == "row" {
			rows = append(rows, p.Title)
			continue
		}
		if p.Title == "" {
			t.Errorf("panel %d has no title", p.ID)
		}
		if !slices.Contains([]string{"timeseries", "stat", "gauge", "table", "bargauge"}, p.Type) {
			t.Errorf("panel %q: type %q", p.Title, p.Type)
		}
		if p.Datasource == nil || p.Datasource.UID != dsVar {
			t.Errorf("panel %q: data source must be %s", p.Title, dsVar)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no queries", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: missing or repeated refId %q", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q %s: empty query", p.Title, tg.RefID)
			}
			if tg.Datasource == nil || tg.Datasource.UID != dsVar {
				t.Errorf("panel %q %s: data source must be %s", p.Title, tg.RefID, dsVar)
			}
		}
	}
	for _, want := range []string{"Overview", "Admission", "Request types", "Backends", "Result cache", "Proxy process"} {
		if !slices.Contains(rows, want) {
			t.Errorf("no row %q (rows: %v)", want, rows)
		}
	}
}

// TestDashboardQueriesParse checks that every query of the dashboard is PromQL that
// Prometheus accepts, with Grafana's variables as a query would have them: promtool checks
// them as the expressions of recording rules. The integration suite evaluates them on a real
// Prometheus; this fails first, and without one.
func TestDashboardQueriesParse(t *testing.T) {
	vars := strings.NewReplacer("$__rate_interval", "1m", "$instance", ".*")
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	type group struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	}
	var rules []rule
	var names strings.Builder // which query each rule is, for a failure
	for i, q := range readDashboard(t).Queries() {
		r := rule{Record: fmt.Sprintf("dashboard:query_%d", i), Expr: vars.Replace(q.Expr)}
		rules = append(rules, r)
		fmt.Fprintf(&names, "%s: panel %q %s\n", r.Record, q.Panel, q.RefID)
	}
	b, err := yaml.Marshal(map[string][]group{"groups": {{Name: "dashboard", Rules: rules}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "dashboard.yml")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool(t), "check", "rules", file).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules on the dashboard's queries: %v\n%s\n%s", err, out, names.String())
	}
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(rules)); !strings.Contains(string(out), want) {
		t.Errorf("promtool check rules: want %q in\n%s", want, out)
	}
}

func metricName(sel string) string {
	name, _, _ := strings.Cut(sel, "{")
	return name
}

// TestQueriesSelectExportedSeries checks every metric the dashboard and the alert rules
// name against the metrics gatekeeper exports: the table of docs/metrics.md (which a test in
// cmd/gatekeeper keeps equal to the registry) and the Go and process collectors. A metric
// renamed in the code thus fails here before it fails on a user's dashboard.
func TestQueriesSelectExportedSeries(t *testing.T) {
	exported := documentedMetrics(t)
	for _, n := range runtimeMetrics(t) {
		exported[n] = "runtime"
	}
	exported["up"] = "prometheus"
	check := func(where, expr string) {
		sels := Selectors(expr)
		if len(sels) == 0 {
			t.Errorf("%s: no metric in %q", where, expr)
		}
		for _, sel := range sels {
			if !exportedName(exported, metricName(sel)) {
				t.Errorf("%s: %s is not a metric gatekeeper exports", where, metricName(sel))
			}
		}
	}
	for _, q := range readDashboard(t).Queries() {
		where := "dashboard panel " + q.Panel + " " + q.RefID
		check(where, q.Expr)
		for _, sel := range Selectors(q.Expr) {
			if !strings.Contains(sel, `instance=~"$instance"`) {
				t.Errorf("%s: %s does not follow the instance variable", where, sel)
			}
		}
	}
	for _, r := range alertRules(t) {
		check("alert "+r.Alert, r.Expr)
	}
}

// exportedName reports whether name is an exported metric or one of the series a histogram
// or summary of one is exposed as.
func exportedName(exported map[string]string, name string) bool {
	if _, ok := exported[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		switch exported[base] {
		case "histogram", "runtime":
			return true
		case "summary":
			return suffix != "_bucket"
		}
	}
	return false
}

// documentedMetrics reads the metric table of docs/metrics.md: a row per metric, its name in
// backticks in the first column and its type in the second.
func documentedMetrics(t *testing.T) map[string]string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, r := range mdtable.Rows(string(text), "metric", "type") {
		if name, ok := mdtable.OneCode(r.Cells[0]); ok {
			names[name] = r.Cells[1]
		}
	}
	if len(names) < 40 {
		t.Fatalf("found only %d metrics in docs/metrics.md", len(names))
	}
	return names
}

// runtimeMetrics returns the names the Go and process collectors export, as gatekeeper
// serve registers them.
func runtimeMetrics(t *testing.T) []string {
	t.Helper()
	ch := make(chan *prometheus.Desc, 256)
	go func() { // ends when both have described themselves
		collectors.NewGoCollector().Describe(ch)
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}).Describe(ch)
		close(ch)
	}()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	var names []string
	for d := range ch {
		if m := fq.FindStringSubmatch(d.String()); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

func alertRules(t *testing.T) []Rule {
	t.Helper()
	rules, err := AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

func readDashboard(t *testing.T) Dashboard {
	t.Helper()
	d, err := ReadDashboard()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// unitSettings reads gatekeeper.service's [Service] section: each key with its values in the
// order they appear (a key such as SystemCallFilter= may be given more than once).
func unitSettings(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("gatekeeper.service")
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string][]string{}
	section := ""
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("gatekeeper.service: %q in [Service] is not KEY=VALUE", line)
			}
			settings[k] = append(settings[k], v)
		}
	}
	return settings
}

// TestUnitOutweighsTheDatabase checks the settings that keep the proxy responsive on the
// database's own host: a cgroup weight above the default 100 of mariadb.service, and a nice
// level below the database's 0 for the threads where the cpu controller is off.
func TestUnitOutweighsTheDatabase(t *testing.T) {
	s := unitSettings(t)
	number := func(key string) int {
		t.Helper()
		v := s[key]
		if len(v) != 1 {
			t.Fatalf("gatekeeper.service: %s= given %d times, want once", key, len(v))
		}
		n, err := strconv.Atoi(v[0])
		if err != nil {
			t.Fatalf("gatekeeper.service: %s=%s: %v", key, v[0], err)
		}
		return n
	}
	// systemd takes weights 1 to 10000; the default is 100. Above the database's, but not
	// by an order of magnitude: at 1000 a paced SELECT 1 beside a saturated database was
	// slower through the proxy than direct (bench/results/saturation-unit-weights).
	if w := number("CPUWeight"); w <= 100 || w >= 1000 {
		t.Errorf("CPUWeight=%d, want 101 to 999: above the database's default 100, below 10 times it", w)
	}
	if n := number("Nice"); n < -20 || n > -5 {
		t.Errorf("Nice=%d, want -20 to -5: well below the database's 0", n)
	}
	// The daemon must not be able to change its own priority: systemd sets it as root before
	// dropping privileges, and the filter keeps the daemon's hands off it afterwards.
	if !slices.Contains(s["SystemCallFilter"], "~@privileged @resources") {
		t.Errorf("SystemCallFilter %q no longer denies @resources", s["SystemCallFilter"])
	}
	if c := s["CapabilityBoundingSet"]; len(c) != 1 || c[0] != "" {
		t.Errorf("CapabilityBoundingSet %q, want empty: Nice= needs no capability in the daemon", c)
	}
}

// TestUnitVerifies runs systemd-analyze verify on the unit, with the binary's path pointed
// at one that exists here, and fails on any warning: systemd ignores a setting it cannot
// parse (an out-of-range CPUWeight=, a misspelt key) with a warning, not an error.
func TestUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not found (systemd's package); the unit's settings are still checked by TestUnitOutweighsTheDatabase")
	}
	b, err := os.ReadFile("gatekeeper.service")
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable() // this test binary: present and executable
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(t.TempDir(), "gatekeeper.service")
	if err := os.WriteFile(unit, []byte(strings.ReplaceAll(string(b), "/usr/local/bin/gatekeeper", exe)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestUnitReloadHandsOver: systemctl reload is the upgrade without dropping a client
// (docs/operations.md). ExecReload sends SIGUSR2, the daemon's hand-over, to the main
// process; the new process becomes the main one by the old one's MAINPID= and must be
// heard from its start; and its descriptor limit must need no raising, since the system-call
// filter denies the setrlimit the Go runtime would call at its start and in the child it
// forks.
func TestUnitReloadHandsOver(t *testing.T) {
	s := unitSettings(t)
	if r := s["ExecReload"]; len(r) != 1 || r[0] != "/bin/kill -USR2 $MAINPID" {
		t.Errorf("ExecReload %q, want /bin/kill -USR2 $MAINPID", r)
	}
	if n := s["NotifyAccess"]; len(n) != 1 || n[0] != "all" {
		t.Errorf("NotifyAccess %q, want all: the new process's notifications count from its start", n)
	}
	if l := s["LimitNOFILE"]; len(l) != 1 || strings.Contains(l[0], ":") {
		t.Errorf("LimitNOFILE %q, want one value (soft and hard alike)", l)
	}
}
