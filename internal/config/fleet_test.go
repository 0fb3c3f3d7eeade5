package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestFleet(t *testing.T) {
	dir := t.TempDir()
	password := writeSecret(t, dir, "etcd-password", "s3cret pass\n", 0o600)
	cert, key := writeCert(t, dir)
	c, err := Load(Sources{File: writeFile(t, `
fleet:
  etcd: [etcd1:2379, "[::1]:2379"]
  prefix: /shop/gatekeeper/
  name: host-1.example:6033
  interval: 1s
  lease_ttl: 5s
  dial_timeout: 500ms
  shared_config: false
  user: gatekeeper
  password_file: `+password+`
  tls:
    ca_file: `+cert+`
    cert_file: `+cert+`
    key_file: `+key+`
`)})
	if err != nil {
		t.Fatal(err)
	}
	want := Fleet{
		Etcd: []string{"etcd1:2379", "[::1]:2379"}, Prefix: "/shop/gatekeeper/", Name: "host-1.example:6033",
		Interval: time.Second, LeaseTTL: 5 * time.Second, DialTimeout: 500 * time.Millisecond,
		User: "gatekeeper", PasswordFile: password, TLS: FleetTLS{CAFile: cert, CertFile: cert, KeyFile: key},
	}
	if !reflect.DeepEqual(c.Fleet, want) {
		t.Errorf("fleet = %+v\nwant %+v", c.Fleet, want)
	}
	if !c.Fleet.Enabled() || !c.Fleet.TLS.Enabled() || c.Fleet.ConfigPrefix() != "/shop/gatekeeper/config/" {
		t.Errorf("Enabled %v, TLS.Enabled %v, ConfigPrefix %q", c.Fleet.Enabled(), c.Fleet.TLS.Enabled(), c.Fleet.ConfigPrefix())
	}
	if got, err := c.Fleet.ReadPassword(); err != nil || string(got) != "s3cret pass" {
		t.Errorf("ReadPassword = %q, %v; want the line without its end, inner space kept", got, err)
	}
	d := Default().Fleet
	if d.Enabled() || d.TLS.Enabled() || d.ConfigPrefix() != "/gatekeeper/config/" {
		t.Errorf("default fleet: Enabled %v, TLS.Enabled %v, ConfigPrefix %q", d.Enabled(), d.TLS.Enabled(), d.ConfigPrefix())
	}
}

func TestFleetErrors(t *testing.T) {
	dir := t.TempDir()
	loose := writeSecret(t, dir, "loose", "pw\n", 0o644)
	empty := writeSecret(t, dir, "empty", "\n", 0o600)
	twoLines := writeSecret(t, dir, "two", "pw\nmore\n", 0o600)
	good := writeSecret(t, dir, "good", "pw\n", 0o600)
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{
			name: "endpoints",
			yaml: "fleet:\n  etcd: [etcd1, 'http://etcd2:2379', ':2379', 'etcd4:0']\n",
			want: []string{
				`line 2: fleet.etcd[0]: "etcd1" is not host:port: give an etcd endpoint such as etcd1:2379`,
				`fleet.etcd[1]: "http://etcd2:2379" has a scheme: give host:port, such as etcd1:2379`,
				`fleet.etcd[2]: ":2379" is not host:port`,
				`fleet.etcd[3]: "etcd4:0" is not host:port`,
			},
		},
		{
			name: "prefix",
			yaml: "fleet:\n  prefix: gatekeeper\n",
			want: []string{`line 2: fleet.prefix: "gatekeeper" must start and end with /, such as /gatekeeper/`},
		},
		{
			name: "prefix without the trailing slash",
			yaml: "fleet:\n  prefix: /gatekeeper\n",
			want: []string{`fleet.prefix: "/gatekeeper" must start and end with /`},
		},
		{
			name: "name",
			yaml: "fleet:\n  name: proxy 1/a\n",
			want: []string{`line 2: fleet.name: "proxy 1/a" may hold only letters, digits, '.', '-', '_' and ':', such as proxy-1`},
		},
		{
			name: "interval",
			yaml: "fleet:\n  interval: 50ms\n",
			want: []string{"line 2: fleet.interval: must be between 100ms and 10s, such as 500ms"},
		},
		{
			name: "interval too long",
			yaml: "fleet:\n  interval: 11s\n  lease_ttl: 30s\n",
			want: []string{"fleet.interval: must be between 100ms and 10s"},
		},
		{
			name: "lease not whole seconds",
			yaml: "fleet:\n  lease_ttl: 2500ms\n",
			want: []string{"line 2: fleet.lease_ttl: must be a whole number of seconds between 2s and 60s, such as 3s"},
		},
		{
			name: "lease too short",
			yaml: "fleet:\n  lease_ttl: 1s\n",
			want: []string{"fleet.lease_ttl: must be a whole number of seconds between 2s and 60s"},
		},
		{
			name: "lease too long",
			yaml: "fleet:\n  lease_ttl: 61s\n",
			want: []string{"fleet.lease_ttl: must be a whole number of seconds between 2s and 60s"},
		},
		{
			name: "lease under twice the interval",
			yaml: "fleet:\n  interval: 2100ms\n  lease_ttl: 4s\n",
			want: []string{"line 3: fleet.lease_ttl: must be at least twice fleet.interval (2.1s), such as 5s"},
		},
		{
			name: "dial timeout",
			yaml: "fleet:\n  dial_timeout: 31s\n",
			want: []string{"line 2: fleet.dial_timeout: must be between 100ms and 30s, such as 2s"},
		},
		{
			name: "user without a password file",
			yaml: "fleet:\n  user: gatekeeper\n",
			want: []string{"fleet.password_file: is required with fleet.user"},
		},
		{
			name: "password file without a user",
			yaml: "fleet:\n  password_file: " + good + "\n",
			want: []string{"fleet.user: is required with fleet.password_file"},
		},
		{
			name: "password file readable by others",
			yaml: "fleet:\n  user: gk\n  password_file: " + loose + "\n",
			want: []string{"line 3: fleet.password_file: mode 0644 lets group or others read or write this password; chmod 600 " + loose},
		},
		{
			name: "empty password file",
			yaml: "fleet:\n  user: gk\n  password_file: " + empty + "\n",
			want: []string{"fleet.password_file: " + empty + " holds no password"},
		},
		{
			name: "password of two lines",
			yaml: "fleet:\n  user: gk\n  password_file: " + twoLines + "\n",
			want: []string{"fleet.password_file: " + twoLines + " holds more than one line"},
		},
		{
			name: "missing password file",
			yaml: "fleet:\n  user: gk\n  password_file: " + filepath.Join(dir, "nope") + "\n",
			want: []string{"fleet.password_file: open " + filepath.Join(dir, "nope") + ": no such file or directory"},
		},
		{
			name: "tls",
			yaml: "fleet:\n  tls:\n    ca_file: " + filepath.Join(dir, "nope.pem") + "\n    key_file: " + good + "\n",
			want: []string{"line 3: fleet.tls.ca_file: stat " + filepath.Join(dir, "nope.pem"), "fleet.tls.cert_file: cert_file and key_file go together"},
		},
		{
			name: "the password is no setting",
			yaml: "fleet:\n  password: x\n",
			want: []string{`line 2: unknown key "fleet.password"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(Sources{File: writeFile(t, tt.yaml)})
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
