package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

const sharedPrefix = "/gatekeeper/config/"

// TestSharedPrecedence: a shared setting wins over the file and loses to the environment and
// the flags; what it does not set stays the file's.
func TestSharedPrecedence(t *testing.T) {
	path := writeFile(t, `
admission:
  capacity: 250ms
  discipline: fifo
  max_queue: 500
  queue_timeout: 3s
routing:
  consistency: session
`)
	t.Setenv("GATEKEEPER_ADMISSION_DISCIPLINE", "sjf")
	flags := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	flags.String("max-queue", "", "")
	if err := flags.Parse([]string{"--max-queue", "700"}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Sources{
		File: path, Flags: flags, FlagKeys: map[string]string{"max-queue": "admission.max_queue"},
		SharedPrefix: sharedPrefix,
		Shared: map[string]string{
			"admission.capacity":    "800ms",
			"admission.discipline":  "fifo",
			"admission.max_queue":   "600",
			"admission.aging":       "2.5",
			"routing.primary_reads": "true",
			"cache.max_bytes":       "64MiB",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"shared over file", c.Admission.Capacity, Capacity(800 * time.Millisecond)},
		{"env over shared", c.Admission.Discipline, "sjf"},
		{"flag over shared", c.Admission.MaxQueue, 700},
		{"shared over default", c.Admission.Aging, 2.5},
		{"shared bool", c.Routing.PrimaryReads, true},
		{"shared size", c.Cache.MaxBytes, ByteSize(64 << 20)},
		{"file where nothing is shared", c.Admission.QueueTimeout, 3 * time.Second},
		{"file beside a shared key of its section", c.Routing.Consistency, "session"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: got %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

// TestSharedRules: rules from etcd replace the file's and are decoded and checked as the
// file's are.
func TestSharedRules(t *testing.T) {
	path := writeFile(t, "rules:\n  - name: from-file\n    cache: on\n")
	c, err := Load(Sources{File: path, SharedPrefix: sharedPrefix, Shared: map[string]string{"rules": `
- name: reports
  match: {type: best_sellers, table: shop.orders}
  max_concurrent: 4
- name: no-batch
  match:
    user: batch
  deny: "batch jobs run at night"
`}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{
		{Name: "reports", Match: RuleMatch{Type: "best_sellers", Table: "shop.orders"}, MaxConcurrent: 4},
		{Name: "no-batch", Match: RuleMatch{User: "batch"}, Deny: "batch jobs run at night"},
	}
	if !reflect.DeepEqual(c.Rules, want) {
		t.Errorf("rules = %+v\nwant %+v", c.Rules, want)
	}
	c, err = Load(Sources{File: path, Shared: map[string]string{"rules": "[]"}})
	if err != nil || len(c.Rules) != 0 {
		t.Errorf("rules: [] from etcd: %+v, %v; want no rules", c.Rules, err)
	}
}

func TestSharedErrors(t *testing.T) {
	tests := []struct {
		name   string
		yaml   string
		env    map[string]string
		shared map[string]string
		want   []string // substrings of the error
		not    []string // and what it must not say
	}{
		{
			name:   "unknown key with suggestion",
			shared: map[string]string{"admission.capacty": "80ms"},
			want:   []string{"etcd key /gatekeeper/config/admission.capacty: names no setting; did you mean admission.capacity?"},
		},
		{
			name:   "unknown key with nothing close",
			shared: map[string]string{"replication.lag": "1s"},
			want:   []string{"etcd key /gatekeeper/config/replication.lag: names no setting, and no shared setting is close: docs/configuration.md"},
		},
		{
			name:   "a key of another section",
			shared: map[string]string{"backends.primary": "db9:3306"},
			want: []string{"etcd key /gatekeeper/config/backends.primary: backends.primary is not a shared setting; " +
				"set it in each proxy's file (shared: admission, routing, cache, rules)"},
		},
		{
			name:   "a key of the fleet itself",
			shared: map[string]string{"fleet.shared_config": "false", "listen": "0.0.0.0:3306"},
			want: []string{"etcd key /gatekeeper/config/fleet.shared_config: fleet.shared_config is not a shared setting",
				"etcd key /gatekeeper/config/listen: listen is not a shared setting"},
		},
		{
			name: "secrets",
			shared: map[string]string{"monitor.password": "x", "admin.auth.bearer_token_file": "/tmp/t",
				"admission.secret": "x"},
			want: []string{
				"etcd key /gatekeeper/config/monitor.password: monitor.password is a secret, which is never read from etcd: set it in each proxy's file or environment",
				"etcd key /gatekeeper/config/admin.auth.bearer_token_file: admin.auth.bearer_token_file is a secret",
				"etcd key /gatekeeper/config/admission.secret: admission.secret is a secret",
			},
		},
		{
			name:   "a section",
			shared: map[string]string{"admission.sessions": "{active_limit: 10}", "backends": "{primary: db1:3306}"},
			want: []string{"etcd key /gatekeeper/config/admission.sessions: admission.sessions is a section, not a setting: " +
				"give each of its settings a key of its own, such as /gatekeeper/config/admission.sessions.active_limit",
				"etcd key /gatekeeper/config/backends: backends is not a shared setting"},
		},
		{
			name:   "bad value names the etcd key, not the file's line",
			yaml:   "admission:\n  capacity: 250ms\n",
			shared: map[string]string{"admission.capacity": "fast"},
			want:   []string{`etcd key /gatekeeper/config/admission.capacity: admission.capacity: invalid capacity "fast"`},
			not:    []string{"line 2"},
		},
		{
			name:   "value refused by validation names the etcd key",
			shared: map[string]string{"routing.consistency": "linear", "cache.wait": "2m"},
			want: []string{`etcd key /gatekeeper/config/routing.consistency: routing.consistency: "linear" is not one of strong, session, eventual`,
				"etcd key /gatekeeper/config/cache.wait: cache.wait: must be between 0"},
		},
		{
			name:   "the environment over a shared value: its error names the key alone",
			env:    map[string]string{"GATEKEEPER_ADMISSION_MAX_QUEUE": "-1"},
			shared: map[string]string{"admission.max_queue": "100"},
			want:   []string{"admission.max_queue: must be positive"},
			not:    []string{"etcd key"},
		},
		{
			name: "the environment over the file: its error names the key alone",
			yaml: "admission:\n  max_queue: 5\n",
			env:  map[string]string{"GATEKEEPER_ADMISSION_MAX_QUEUE": "-1"},
			want: []string{"admission.max_queue: must be positive"},
			not:  []string{"line 2"},
		},
		{
			name:   "not YAML",
			shared: map[string]string{"admission.capacity": "[80ms"},
			want:   []string{"etcd key /gatekeeper/config/admission.capacity: admission.capacity: not a YAML value"},
		},
		{
			name:   "no value",
			shared: map[string]string{"admission.capacity": ""},
			want:   []string{"etcd key /gatekeeper/config/admission.capacity: admission.capacity: holds no value"},
		},
		{
			name: "an invalid rule",
			shared: map[string]string{"rules": `
- name: a
  cache: on
- match: {table: a.b.c}
  cache: sometimes
- name: a
  route: primary
`},
			want: []string{
				"etcd key /gatekeeper/config/rules: rules[1].name: is required",
				`etcd key /gatekeeper/config/rules: rules[1].match.table: "a.b.c" is neither schema.table nor table`,
				`etcd key /gatekeeper/config/rules: rules[1].cache: "sometimes" is neither on, off nor a positive duration`,
				`etcd key /gatekeeper/config/rules: rules[2].name: "a" is also the name of rules[0]`,
			},
		},
		{
			name:   "an unknown key in a rule",
			yaml:   "rules:\n  - name: x\n    cache: on\n",
			shared: map[string]string{"rules": "- name: a\n  cach: on\n- name: b\n  match: {tabel: t}\n  cache: on\n"},
			want: []string{"etcd key /gatekeeper/config/rules: rules[0]: has invalid keys: cach",
				"etcd key /gatekeeper/config/rules: rules[1].match: has invalid keys: tabel"},
			not: []string{"line "},
		},
		{
			name:   "rules not a list",
			shared: map[string]string{"rules": "a,b"},
			want:   []string{"etcd key /gatekeeper/config/rules: rules: must be a YAML list of entries"},
		},
		{
			name:   "with the file's errors",
			yaml:   "log:\n  level: loud\n",
			shared: map[string]string{"admission.capacty": "80ms"},
			want:   []string{"line 2: log.level", "etcd key /gatekeeper/config/admission.capacty: names no setting"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			src := Sources{Shared: tt.shared, SharedPrefix: sharedPrefix}
			if tt.yaml != "" {
				src.File = writeFile(t, tt.yaml)
			}
			_, err := Load(src)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q contains %q", err, w)
				}
			}
		})
	}
}

func TestSharedKeys(t *testing.T) {
	keys := SharedKeys()
	for _, k := range []string{"admission.capacity", "admission.sessions.active_limit", "admission.policers",
		"routing.consistency", "cache.mode", "rules"} {
		if !slices.Contains(keys, k) || !IsShared(k) {
			t.Errorf("%s: in SharedKeys %v, IsShared %v; want both", k, slices.Contains(keys, k), IsShared(k))
		}
	}
	for _, k := range []string{"backends.primary", "listen", "monitor.password", "fleet.etcd", "replicas.poll_interval",
		"admission", "admission.sessions", "admission.capacty", "rules[0].name", ""} {
		if slices.Contains(keys, k) || IsShared(k) {
			t.Errorf("%s: in SharedKeys %v, IsShared %v; want neither", k, slices.Contains(keys, k), IsShared(k))
		}
	}
	for _, k := range keys {
		if section, _, _ := strings.Cut(k, "."); !slices.Contains(sharedSections, section) {
			t.Errorf("shared key %s is outside %v", k, sharedSections)
		}
	}
}

func TestIsSecret(t *testing.T) {
	for key, want := range map[string]bool{
		"monitor.password": true, "fleet.password_file": true, "admin.auth.bearer_token_file": true,
		"x.token": true, "x.api_secret": true, "x.secret_file": true,
		"cache.mode": false, "auth.users_file": false, "fleet.user": false, "rules": false,
	} {
		if got := isSecret(key); got != want {
			t.Errorf("isSecret(%q) = %v, want %v", key, got, want)
		}
	}
}
