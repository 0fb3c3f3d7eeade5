package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/gatekeeperdb/gatekeeper/internal/handover"
)

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gatekeeper.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDefaultIsValid(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	got, err := Load(Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Listen != "127.0.0.1:6033" || !got.Admission.Capacity.Auto() || !got.Admission.Enabled || got.Admission.LastCallFor() != time.Second || got.Classify.TypeKey != "digest" {
		t.Errorf("defaults = %+v", got)
	}
}

func TestExampleConfigIsValid(t *testing.T) {
	if _, err := Load(Sources{File: "../../deploy/gatekeeper.yaml"}); err != nil {
		t.Fatal(err)
	}
}

func TestLoadPrecedence(t *testing.T) {
	path := writeFile(t, `
listen: 127.0.0.1:7000
backends:
  primary: db1:3306
  replicas: [db2:3306, db3:3306]
admission:
  discipline: fifo
  capacity: 250ms
client:
  max_packet_size: 16MiB
`)
	t.Setenv("GATEKEEPER_ADMISSION_DISCIPLINE", "sjf")
	t.Setenv("GATEKEEPER_ADMISSION_AGING", "10")
	t.Setenv("GATEKEEPER_BACKENDS_REPLICAS", "r1:1,r2:2")
	flags := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	flags.String("listen", "", "")
	flags.String("primary", "", "")
	if err := flags.Parse([]string{"--listen", "127.0.0.1:8000"}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Sources{File: path, Flags: flags, FlagKeys: map[string]string{"listen": "listen", "primary": "backends.primary"}})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"flag over file", c.Listen, "127.0.0.1:8000"},
		{"file when flag unset", c.Backends.Primary, "db1:3306"},
		{"env over file", c.Admission.Discipline, "sjf"},
		{"env number", c.Admission.Aging, 10.0},
		{"env list", strings.Join(c.Backends.Replicas, ","), "r1:1,r2:2"},
		{"file duration", c.Admission.Capacity, Capacity(250 * time.Millisecond)},
		{"file size", c.Client.MaxPacketSize, ByteSize(16 << 20)},
		{"default", c.Admission.QueueTimeout, 5 * time.Second},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: got %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		env  map[string]string
		want []string // substrings of the error
	}{
		{
			name: "unknown key with suggestion and line",
			yaml: "listen: 127.0.0.1:1\nadmission:\n  disciplin: fifo\n",
			want: []string{`line 3: unknown key "admission.disciplin"`, `did you mean "admission.discipline"`},
		},
		{
			name: "unknown section",
			yaml: "routes:\n  size: 3\n",
			want: []string{`line 1: unknown key "routes"`},
		},
		{
			name: "bad duration",
			yaml: "admission:\n  capacity: fast\n",
			want: []string{"line 2: admission.capacity", `invalid capacity "fast": use auto, or a positive duration`},
		},
		{
			name: "negative capacity", // -1ns must not read as auto
			yaml: "admission:\n  capacity: -1ns\n",
			want: []string{"line 2: admission.capacity", `invalid capacity "-1ns"`},
		},
		{
			name: "negative last call", // -1ns must not read as auto
			yaml: "admission:\n  last_call: -1ns\n",
			want: []string{"line 2: admission.last_call", `invalid last call "-1ns": use auto`},
		},
		{
			name: "last call past the queue timeout",
			yaml: "admission:\n  last_call: 2s\n  queue_timeout: 1s\n",
			want: []string{"admission.last_call: must be auto (a fifth of admission.queue_timeout), 0 (off), or shorter than admission.queue_timeout (1s)"},
		},
		{
			name: "bare number duration",
			yaml: "admission:\n  queue_timeout: 5\n",
			want: []string{"admission.queue_timeout", "use a number with a unit"},
		},
		{
			name: "bad enum",
			yaml: "admission:\n  discipline: lifo\n",
			want: []string{"line 2: admission.discipline", `"lifo" is not one of fifo, sjf`},
		},
		{
			name: "bad address",
			yaml: "backends:\n  primary: localhost\n",
			want: []string{"backends.primary", "is not host:port"},
		},
		{
			name: "paced lane without a reserve",
			yaml: "admission:\n  reserve:\n    lane_rate: -1\n    quick_wait_target: 10ms\n",
			want: []string{"admission.reserve.lane_rate: must be 0 (no bound) or positive",
				"admission.reserve.quick_wait_target", "needs admission.reserve.floor"},
		},
		{
			name: "section given a scalar",
			yaml: "admission: on\n",
			want: []string{"line 1: admission must be a mapping"},
		},
		{
			name: "several problems at once",
			yaml: "log:\n  level: loud\n  format: xml\n",
			want: []string{"log.level", "log.format"},
		},
		{
			name: "last call as long as the queue timeout",
			yaml: "admission:\n  queue_timeout: 2s\n  last_call: 2s\n",
			want: []string{"admission.last_call", "shorter than admission.queue_timeout (2s)"},
		},
		{
			name: "bad environment value",
			env:  map[string]string{"GATEKEEPER_ADMISSION_MAX_QUEUE": "many"},
			want: []string{"admission.max_queue"},
		},
		{
			name: "bad size",
			yaml: "client:\n  max_packet_size: 12 apples\n",
			want: []string{"client.max_packet_size", "invalid size"},
		},
		{
			name: "tls key without cert",
			yaml: "tls:\n  key_file: /nonexistent.key\n",
			want: []string{"tls.cert_file", "go together"},
		},
		{
			name: "estimator bounds",
			yaml: "estimator:\n  weight: 1.5\n  window: 10m\n  max_types: 0\n  default_cost: -1ms\n  backend_cpus: -2\n  state_file: /nonexistent/dir/estimates.json\n",
			want: []string{"estimator.weight", "estimator.max_types", "estimator.default_cost", "estimator.backend_cpus",
				`estimator.state_file: directory "/nonexistent/dir" does not exist`},
		},
		{
			name: "threads neither auto nor a count",
			yaml: "threads: 0\n",
			want: []string{"line 1: threads", `"0" is neither auto nor a number of processors from 1`},
		},
		{
			name: "estimator window too short",
			yaml: "estimator:\n  window: 500ms\n",
			want: []string{"estimator.window", "between 1s and 1h"},
		},
		{
			name: "pooled without accounts",
			yaml: "mode: pooled\n",
			want: []string{"line 1: mode: pooled needs accounts", "auth.users_file, auth.from_backend"},
		},
		{
			name: "unknown mode",
			yaml: "mode: proxy\n",
			want: []string{`mode: "proxy" is not one of passthrough, pooled`},
		},
		{
			name: "accounts from the backend without a monitor account",
			yaml: "auth:\n  from_backend: true\n",
			want: []string{"line 2: auth.from_backend: needs monitor.user"},
		},
		{
			name: "users file readable by others",
			yaml: "mode: pooled\nauth:\n  users_file: USERS_0644\n",
			want: []string{"auth.users_file", "chmod 600"},
		},
		{
			name: "users file with a bad entry",
			yaml: "mode: pooled\nauth:\n  users_file: USERS_BAD\n",
			want: []string{"auth.users_file", "users.yaml:4", "password and password_hash"},
		},
		{
			name: "pool bounds",
			yaml: "pools:\n  max_open: 4\n  max_idle: 8\n  wait_timeout: 0\n",
			want: []string{"line 3: pools.max_idle: must be between 0 and pools.max_open (4)", "pools.wait_timeout"},
		},
		{
			name: "cache values",
			yaml: "cache:\n  mode: always\n  replacement: lfu\n  consistency: session\n  wait: -1ms\n",
			want: []string{`line 2: cache.mode: "always" is not one of off, rules, auto`,
				`line 3: cache.replacement: "lfu" is not one of cost_aware, lru`,
				`line 4: cache.consistency: "session" is not one of strong, eventual`,
				"line 5: cache.wait: must be between 0"},
		},
		{
			name: "cache bounds",
			yaml: "cache:\n  mode: rules\n  max_bytes: 0\n",
			want: []string{"line 3: cache.max_bytes: must be positive with cache.mode rules",
				"cache.max_entry_bytes: must be positive and at most cache.max_bytes (0B)"},
		},
		{
			name: "cache entry over the whole",
			yaml: "cache:\n  mode: auto\n  max_bytes: 1MiB\n  max_entry_bytes: 2MiB\n",
			want: []string{"line 4: cache.max_entry_bytes: must be positive and at most cache.max_bytes (1MiB)"},
		},
		{
			name: "cache size",
			yaml: "cache:\n  max_bytes: lots\n",
			want: []string{"line 2: cache.max_bytes: invalid size"},
		},
		{
			name: "rules each wrong",
			yaml: `rules:
  - match: {table: t}
    cache: on
  - name: a
    match: {user: u}
  - name: b
    deny: no
    route: primary
  - name: c
    match:
      digest: "(SELECT"
      table: "a.b.c"
    cache: sometimes
    route: anywhere
    consistency: linear
    max_concurrent: -1
`,
			want: []string{
				"line 2: rules[0].name: is required",
				"line 4: rules[1]: sets no action",
				"line 7: rules[2].deny: goes alone",
				"line 11: rules[3].match.digest: is not an RE2 regular expression",
				`line 12: rules[3].match.table: "a.b.c" is neither schema.table nor table`,
				`line 13: rules[3].cache: "sometimes" is neither on, off nor a positive duration`,
				`line 14: rules[3].route: "anywhere" is not one of primary, replica`,
				`line 15: rules[3].consistency: "linear" is not one of strong, session, eventual`,
				"line 16: rules[3].max_concurrent: must be at least 1",
			},
		},
		{
			name: "rule names unique",
			yaml: "rules:\n  - name: a\n    cache: on\n  - name: a\n    cache: off\n",
			want: []string{`line 4: rules[1].name: "a" is also the name of rules[0]; names must be unique`},
		},
		{
			name: "unknown keys inside rules, every one",
			yaml: "rules:\n  - name: a\n    match: {tabel: t}\n    cache: on\n  - name: b\n    cach: off\n",
			want: []string{"line 3: rules[0].match: has invalid keys: tabel", "line 5: rules[1]: has invalid keys: cach"},
		},
		{
			name: "rules from the environment",
			env:  map[string]string{"GATEKEEPER_RULES": "a,b"},
			want: []string{"rules: a list of sections is set only in the configuration file or a fleet's shared settings, not in GATEKEEPER_RULES"},
		},
		{
			name: "yaml syntax",
			yaml: "listen: [\n",
			want: []string{"yaml"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			src := Sources{}
			if tt.yaml != "" {
				src.File = writeFile(t, usersFiles(t, tt.yaml))
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
		})
	}
}

// usersFiles replaces USERS_0644 and USERS_BAD in yaml by users files made for the test:
// one readable by others, one with an entry that has both a password and a hash.
func usersFiles(t *testing.T, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	for name, f := range map[string]struct {
		mode os.FileMode
		data string
	}{
		"USERS_0644": {0o644, "users:\n  - user: app\n    password: x\n"},
		"USERS_BAD":  {0o600, "users:\n  - user: app\n    password: x\n    password_hash: \"*6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9\"\n"},
	} {
		if !strings.Contains(yaml, name) {
			continue
		}
		path := filepath.Join(dir, "users.yaml")
		if err := os.WriteFile(path, []byte(f.data), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, f.mode); err != nil {
			t.Fatal(err)
		}
		yaml = strings.ReplaceAll(yaml, name, path)
	}
	return yaml
}

func TestByteSize(t *testing.T) {
	for in, want := range map[any]ByteSize{"1024": 1024, "64KiB": 64 << 10, "16M": 16 << 20, "1 GiB": 1 << 30, 4096: 4096} {
		got, err := parseByteSize(in)
		if err != nil || got != want {
			t.Errorf("parseByteSize(%v) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []any{"", "MiB", "-5", "5XB", "99999999999999999999"} {
		if _, err := parseByteSize(in); err == nil {
			t.Errorf("parseByteSize(%q): no error", in)
		}
	}
	if s := ByteSize(16 << 20).String(); s != "16MiB" {
		t.Errorf("String = %q", s)
	}
}

func TestEveryKeyHasAnEnvironmentVariable(t *testing.T) {
	for _, k := range Keys() {
		if !strings.HasPrefix(EnvName(k), "GATEKEEPER_") || strings.Contains(EnvName(k), ".") {
			t.Errorf("key %s: env %s", k, EnvName(k))
		}
	}
	if EnvName("admission.discipline") != "GATEKEEPER_ADMISSION_DISCIPLINE" {
		t.Errorf("EnvName = %s", EnvName("admission.discipline"))
	}
}

// TestEnvironmentIsStrict: a GATEKEEPER_ variable that names no setting is an error, with the
// nearest one that does, reported with the other errors; a correct one still sets its key.
func TestEnvironmentIsStrict(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		yaml string
		want []string // substrings of the error
	}{
		{
			name: "misspelt",
			env:  map[string]string{"GATEKEEPER_ADMISION_ENABLED": "true"},
			want: []string{"GATEKEEPER_ADMISION_ENABLED: names no setting; did you mean GATEKEEPER_ADMISSION_ENABLED (admission.enabled)?"},
		},
		{
			name: "in lower case",
			env:  map[string]string{"GATEKEEPER_routing_consistency": "eventual"},
			want: []string{"GATEKEEPER_routing_consistency: names no setting; did you mean GATEKEEPER_ROUTING_CONSISTENCY (routing.consistency)?"},
		},
		{
			name: "a section, not a setting",
			env:  map[string]string{"GATEKEEPER_ADMISSION": "on"},
			want: []string{"GATEKEEPER_ADMISSION: names no setting, and none is close: docs/configuration.md lists every setting"},
		},
		{
			name: "nothing close",
			env:  map[string]string{"GATEKEEPER_FOO": "1"},
			want: []string{"GATEKEEPER_FOO: names no setting, and none is close: docs/configuration.md"},
		},
		{
			name: "with the file's errors",
			env:  map[string]string{"GATEKEEPER_ADMISSION_MAX_QUEUE": "10", "GATEKEEPER_ADMISSION_MAXQUEUE": "10"},
			yaml: "admission:\n  disciplin: fifo\n  aging: -1\n",
			want: []string{
				`line 2: unknown key "admission.disciplin"`,
				"GATEKEEPER_ADMISSION_MAXQUEUE: names no setting; did you mean GATEKEEPER_ADMISSION_MAX_QUEUE (admission.max_queue)?",
				"line 3: admission.aging: must be 0 (off)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			src := Sources{}
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
		})
	}

	t.Run("correct", func(t *testing.T) {
		t.Setenv("GATEKEEPER_ADMISSION_ENABLED", "false")
		t.Setenv("GATEKEEPER_FLEET_LEASE_TTL", "4s")
		c, err := Load(Sources{})
		if err != nil {
			t.Fatal(err)
		}
		if c.Admission.Enabled || c.Fleet.LeaseTTL != 4*time.Second {
			t.Errorf("admission.enabled %v, fleet.lease_ttl %s; want false and 4s from the environment", c.Admission.Enabled, c.Fleet.LeaseTTL)
		}
	})
	t.Run("not settings", func(t *testing.T) {
		if !slices.Contains(notSettings, handover.EnvFD) {
			t.Errorf("%s, which a hand-over sets, is not among %v", handover.EnvFD, notSettings)
		}
		for _, name := range notSettings {
			t.Setenv(name, "3")
		}
		if _, err := Load(Sources{}); err != nil {
			t.Errorf("with %v set: %v", notSettings, err)
		}
	})
}

// TestNearest: a misspelling finds its key; a short name finds only what is one edit away.
func TestNearest(t *testing.T) {
	keys := []string{"mode", "listen", "admission.discipline", "admission.capacity"}
	for name, want := range map[string]string{
		"admission.disciplin": "admission.discipline", "admision.capacty": "admission.capacity",
		"mod": "mode", "lisen": "listen", "foo": "", "routes": "", "admission.cap": "",
	} {
		if got := nearest(name, keys); got != want {
			t.Errorf("nearest(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestLastCall: auto is a fifth of queue_timeout, whatever that is; 0 is off; a duration
// is itself; the environment takes auto too.
func TestLastCall(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		env  string
		want time.Duration
	}{
		{yaml: "admission:\n  queue_timeout: 10s\n", want: 2 * time.Second},
		{yaml: "admission:\n  last_call: auto\n  queue_timeout: 500ms\n", want: 100 * time.Millisecond},
		{yaml: "admission:\n  last_call: 0\n", want: 0},
		{yaml: "admission:\n  last_call: 3s\n", want: 3 * time.Second},
		{yaml: "admission:\n  last_call: 3s\n", env: "auto", want: time.Second},
	} {
		if tt.env != "" {
			t.Setenv("GATEKEEPER_ADMISSION_LAST_CALL", tt.env)
		}
		c, err := Load(Sources{File: writeFile(t, tt.yaml)})
		if err != nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
		if got := c.Admission.LastCallFor(); got != tt.want {
			t.Errorf("%q (env %q): last call %s, want %s", tt.yaml, tt.env, got, tt.want)
		}
	}
}

// TestCacheAndRules: the cache keys come from the file and the environment alike, on and
// off read as words (not YAML 1.1 booleans), and the rules decode in order.
func TestCacheAndRules(t *testing.T) {
	path := writeFile(t, `
mode: pooled
monitor: {user: mon, password: mon}
auth: {from_backend: true}
cache:
  mode: off
  max_entry_bytes: 64KiB
  wait: 10ms
rules:
  - name: no-batch
    match: {user: batch}
    deny: "batch jobs run at night"
  - name: reports
    match:
      type: best_sellers
      digest: '^SELECT .* FROM orders'
      table: shop.orders
      schema: shop
    cache: on
    route: replica
    consistency: session
    max_concurrent: 4
  - name: ttl
    match: {}
    cache: 30s
  - name: never
    match: {table: audit}
    cache: off
`)
	c, err := Load(Sources{File: path})
	if err != nil || c.Cache.Mode != CacheOff {
		t.Fatalf("cache.mode off: %q, %v", c.Cache.Mode, err)
	}
	t.Setenv("GATEKEEPER_CACHE_MODE", "rules")
	t.Setenv("GATEKEEPER_CACHE_MAX_BYTES", "64MiB")
	c, err = Load(Sources{File: path})
	if err != nil {
		t.Fatal(err)
	}
	want := Cache{Mode: CacheRules, MaxBytes: 64 << 20, MaxEntryBytes: 64 << 10, Replacement: ReplacementCostAware,
		Consistency: "strong", Wait: 10 * time.Millisecond}
	if c.Cache != want {
		t.Errorf("cache = %+v, want %+v", c.Cache, want)
	}
	t.Setenv("GATEKEEPER_MODE", "passthrough")
	if _, err = Load(Sources{File: path}); err == nil || !strings.Contains(err.Error(), "needs mode: pooled") {
		t.Errorf("the cache in passthrough: %v, want an error that asks for pooled mode", err)
	}
	rules := []Rule{
		{Name: "no-batch", Match: RuleMatch{User: "batch"}, Deny: "batch jobs run at night"},
		{Name: "reports", Match: RuleMatch{Type: "best_sellers", Digest: "^SELECT .* FROM orders", Table: "shop.orders", Schema: "shop"},
			Cache: "on", Route: "replica", Consistency: "session", MaxConcurrent: 4},
		{Name: "ttl", Cache: "30s"},
		{Name: "never", Match: RuleMatch{Table: "audit"}, Cache: "off"},
	}
	if !reflect.DeepEqual(c.Rules, rules) {
		t.Errorf("rules = %+v\nwant %+v", c.Rules, rules)
	}
}

// backends.servers alone leaves the primary to be found; a primary named anywhere stays.
func TestServersWithoutAPrimary(t *testing.T) {
	servers := "backends:\n  servers: [db1:3306, db2:3306]\nmonitor:\n  user: mon\n"
	for _, tc := range []struct {
		name, file, env, flag, want string
	}{
		{"servers alone", servers, "", "", ""},
		{"primary in the file", "backends:\n  primary: db2:3306\n  servers: [db1:3306, db2:3306]\nmonitor:\n  user: mon\n", "", "", "db2:3306"},
		{"primary in the environment", servers, "db1:3306", "", "db1:3306"},
		{"primary as a flag", servers, "", "db2:3306", "db2:3306"},
		{"no servers", "monitor:\n  user: mon\n", "", "", "127.0.0.1:3306"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.file)
			if tc.env != "" {
				t.Setenv("GATEKEEPER_BACKENDS_PRIMARY", tc.env)
			}
			flags := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			flags.String("primary", "", "")
			var args []string
			if tc.flag != "" {
				args = []string{"--primary", tc.flag}
			}
			if err := flags.Parse(args); err != nil {
				t.Fatal(err)
			}
			c, err := Load(Sources{File: path, Flags: flags, FlagKeys: map[string]string{"primary": "backends.primary"}})
			if err != nil {
				t.Fatal(err)
			}
			if c.Backends.Primary != tc.want {
				t.Errorf("backends.primary = %q, want %q", c.Backends.Primary, tc.want)
			}
		})
	}
	path := writeFile(t, "backends:\n  servers: [db1:3306]\n")
	if _, err := Load(Sources{File: path}); err == nil || !strings.Contains(err.Error(), "backends.servers") {
		t.Errorf("servers alone without monitor.user: %v, want an error naming backends.servers", err)
	}
}
