// Package deploy holds what an operator installs beside the binary: the systemd unit, an
// example configuration, the Grafana dashboard and the Prometheus alert rules. The package
// reads the dashboard and the rules for the tests that check them: this package's, against
// the documented metrics and with promtool, and integration's, on a real Prometheus
// scraping a running proxy.
package deploy

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	"go.yaml.in/yaml/v3"
)

var (
	//go:embed grafana/gatekeeper.json
	dashboardJSON []byte
	//go:embed prometheus/alerts.yml
	alertsYAML []byte
)

// Rule is an alerting rule of alerts.yml.
type Rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// AlertRules returns the rules of prometheus/alerts.yml.
func AlertRules() ([]Rule, error) {
	var f struct {
		Groups []struct {
			Rules []Rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(alertsYAML, &f); err != nil {
		return nil, fmt.Errorf("prometheus/alerts.yml: %w", err)
	}
	var rules []Rule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("prometheus/alerts.yml: no rules")
	}
	return rules, nil
}

// Dashboard is the part of a Grafana dashboard the checks read.
type Dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []Panel `json:"panels"`
	Templating    struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Variable is a dashboard's template variable.
type Variable struct {
	Name       string      `json:"name"`
	Type       string      `json:"type"`
	Query      any         `json:"query"`
	Datasource *Datasource `json:"datasource"`
	IncludeAll bool        `json:"includeAll"`
	AllValue   string      `json:"allValue"`
}

// Datasource names the data source of a panel or a query.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Panel is a dashboard panel, or a row.
type Panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *Datasource `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *Datasource `json:"datasource"`
	} `json:"targets"`
	Panels []Panel `json:"panels"` // of a collapsed row
}

// ReadDashboard returns grafana/gatekeeper.json.
func ReadDashboard() (Dashboard, error) {
	var d Dashboard
	if err := json.Unmarshal(dashboardJSON, &d); err != nil {
		return d, fmt.Errorf("grafana/gatekeeper.json: %w", err)
	}
	return d, nil
}

// AllPanels returns the dashboard's panels, those inside collapsed rows included.
func (d Dashboard) AllPanels() []Panel {
	var ps []Panel
	for _, p := range d.Panels {
		ps = append(ps, p)
		ps = append(ps, p.Panels...)
	}
	return ps
}

// Query is one query of a dashboard panel.
type Query struct {
	Panel, RefID, Expr string
}

// Queries returns every query of the dashboard.
func (d Dashboard) Queries() []Query {
	var qs []Query
	for _, p := range d.AllPanels() {
		for _, tg := range p.Targets {
			qs = append(qs, Query{Panel: p.Title, RefID: tg.RefID, Expr: tg.Expr})
		}
	}
	return qs
}

// selector finds the metric names in a PromQL expression, with the label matchers that
// follow them. Every metric the dashboard and the rules read starts with one of these
// prefixes; up is Prometheus's own.
var selector = regexp.MustCompile(`\b((?:gatekeeper|go|process)_[a-zA-Z0-9_]+|up)\b(\{[^}]*\})?`)

// Selectors returns the series selectors of a PromQL expression, each once.
func Selectors(expr string) []string {
	var sels []string
	for _, m := range selector.FindAllString(expr, -1) {
		if !slices.Contains(sels, m) {
			sels = append(sels, m)
		}
	}
	return sels
}
