package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/netip"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
)

// adminGuard returns the guard of admin.auth, or nil when it sets no credentials.
func adminGuard(c config.AdminAuth, log *slog.Logger) (*admin.Guard, error) {
	if !c.Enabled() {
		return nil, nil
	}
	token, err := c.ReadToken()
	if err != nil {
		return nil, fmt.Errorf("admin.auth.bearer_token_file: %w", err)
	}
	g, err := admin.NewGuard(admin.GuardConfig{Token: token, Users: c.Users, ProtectReads: c.ProtectReads, Log: log})
	if err != nil {
		return nil, fmt.Errorf("admin.auth: %w", err)
	}
	return g, nil
}

// adminTLS returns the admin listener's TLS configuration, or nil for plain HTTP. It is
// applied where the admin server serves, not to the listener: a hand-over passes the
// listener as a plain socket, and the process that takes it serves it with its own
// certificate.
func adminTLS(c config.AdminTLS) (*tls.Config, error) {
	if c.CertFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("admin.tls.cert_file: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// adminWarnings says what is unsafe about an admin listener on c.Listen: open to other
// hosts without credentials, or credentials sent to it over the network in clear text.
// check-config prints them and serve logs them.
func adminWarnings(c config.Admin) []string {
	if c.Listen == "" || loopback(c.Listen) {
		return nil
	}
	switch {
	case !c.Auth.Enabled():
		return []string{fmt.Sprintf("admin.listen %s may be reached from other hosts and admin.auth sets no credentials: "+
			"whoever reaches it can reload the configuration, reset the estimates and hand the proxy over; "+
			"set admin.auth.bearer_token_file or admin.auth.users (docs/operations.md, Admin API authentication), or listen on 127.0.0.1", c.Listen)}
	case c.TLS.CertFile == "":
		return []string{fmt.Sprintf("admin.listen %s may be reached from other hosts and serves plain HTTP: "+
			"the credentials of admin.auth cross the network in clear text; set admin.tls.cert_file and admin.tls.key_file", c.Listen)}
	}
	return nil
}

// loopback tells whether addr (host:port, validated) listens on a loopback address only:
// localhost or a loopback IP. An empty host, a wildcard or any other name is not.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
