package config

import (
	"bytes"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// memberName is what fleet.name may hold: it becomes part of etcd keys.
var memberName = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)

// validateFleet checks the fleet keys. They are checked with or without fleet.etcd, so
// that a mistake is found before the fleet is turned on.
func (c *Config) validateFleet(bad func(key, format string, args ...any), readable func(key, path string), keyPair func(prefix, cert, key string)) {
	f := &c.Fleet
	for i, e := range f.Etcd {
		key := fmt.Sprintf("fleet.etcd[%d]", i)
		if strings.Contains(e, "://") {
			bad(key, "%q has a scheme: give host:port, such as etcd1:2379 (fleet.tls turns TLS on)", e)
			continue
		}
		host, port, err := net.SplitHostPort(e)
		if p, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || p < 1 || p > 65535 {
			bad(key, "%q is not host:port: give an etcd endpoint such as etcd1:2379", e)
		}
	}
	if !strings.HasPrefix(f.Prefix, "/") || !strings.HasSuffix(f.Prefix, "/") {
		bad("fleet.prefix", "%q must start and end with /, such as /gatekeeper/", f.Prefix)
	}
	if f.Name != "" && !memberName.MatchString(f.Name) {
		bad("fleet.name", "%q may hold only letters, digits, '.', '-', '_' and ':', such as proxy-1 (empty: the host name and the listen port)", f.Name)
	}
	if f.Interval < 100*time.Millisecond || f.Interval > 10*time.Second {
		bad("fleet.interval", "must be between 100ms and 10s, such as 500ms")
	}
	switch {
	case f.LeaseTTL%time.Second != 0 || f.LeaseTTL < 2*time.Second || f.LeaseTTL > time.Minute:
		bad("fleet.lease_ttl", "must be a whole number of seconds between 2s and 60s, such as 3s: etcd grants leases in seconds")
	case f.LeaseTTL < 2*f.Interval:
		least := max(2*time.Second, (2*f.Interval + time.Second - 1).Truncate(time.Second))
		bad("fleet.lease_ttl", "must be at least twice fleet.interval (%s), such as %s: a member renews its lease every interval, and one late renewal must not drop it", f.Interval, least)
	}
	if f.DialTimeout < 100*time.Millisecond || f.DialTimeout > 30*time.Second {
		bad("fleet.dial_timeout", "must be between 100ms and 30s, such as 2s")
	}
	switch {
	case f.User != "" && f.PasswordFile == "":
		bad("fleet.password_file", "is required with fleet.user: a file holding the etcd user's password, mode 0600, such as /etc/gatekeeper/etcd-password")
	case f.User == "" && f.PasswordFile != "":
		bad("fleet.user", "is required with fleet.password_file: the etcd user the password is for, such as gatekeeper")
	case f.PasswordFile != "":
		if _, err := f.ReadPassword(); err != nil {
			bad("fleet.password_file", "%v", err)
		}
	}
	readable("fleet.tls.ca_file", f.TLS.CAFile)
	keyPair("fleet.tls", f.TLS.CertFile, f.TLS.KeyFile)
}

// ReadPassword returns the etcd password in PasswordFile, or nil without one. The file is a
// regular file that only its owner may read or write (as admin.auth.bearer_token_file),
// holding the password on one line; the line's end is dropped, any other white space kept.
func (f *Fleet) ReadPassword() ([]byte, error) {
	path := f.PasswordFile
	if path == "" {
		return nil, nil
	}
	data, err := readSecretFile(path, "password")
	if err != nil {
		return nil, err
	}
	password := bytes.TrimSuffix(bytes.TrimSuffix(data, []byte("\n")), []byte("\r"))
	switch {
	case len(password) == 0:
		return nil, fmt.Errorf("%s holds no password: write the etcd user's password in it, on one line", path)
	case bytes.ContainsAny(password, "\r\n"):
		return nil, fmt.Errorf("%s holds more than one line; it holds the password alone, on one line", path)
	}
	return password, nil
}
