package backend

import (
	"crypto/tls"
	"fmt"
	"net"
)

// TLSPolicy is how the proxy secures its own connections to backends, in passthrough's
// relayed logins and in pooled mode's pools alike. The zero value starts no TLS.
type TLSPolicy struct {
	// Mode names the policy in errors (backends.tls.mode).
	Mode string
	// Optional: a backend that offers no TLS is used without it.
	Optional bool
	// Base is the configuration TLS starts with; nil: no TLS.
	Base *tls.Config
}

// For returns the TLS configuration to use with the backend at addr, which does (offered)
// or does not offer TLS, or nil for none; an error when TLS is required but not offered.
func (p *TLSPolicy) For(addr string, offered bool) (*tls.Config, error) {
	if p == nil || p.Base == nil || (p.Optional && !offered) {
		return nil, nil
	}
	if !offered {
		return nil, fmt.Errorf("the backend does not offer TLS but backends.tls.mode is %s", p.Mode)
	}
	cfg := p.Base.Clone()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	return cfg, nil
}
