package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/backend"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// backendSource is the seam through which a session obtains the backend connection for its
// next unit and gives it back when the unit ends. In passthrough mode it is the session's
// own dedicated connection; a pool and a read router will implement it too.
type backendSource interface {
	// acquire returns the connection to run the unit on.
	acquire(ctx context.Context) (*protocol.Conn, error)
	// release takes the connection back at the end of the unit.
	release(c *protocol.Conn)
}

// dedicated is the passthrough backendSource: the one backend connection the client
// authenticated on, for every unit.
type dedicated struct{ conn *protocol.Conn }

var _ backendSource = (*dedicated)(nil)

func (d *dedicated) acquire(context.Context) (*protocol.Conn, error) { return d.conn, nil }
func (d *dedicated) release(*protocol.Conn)                          {}

// dialBackend opens a TCP connection to addr within the connect timeout.
func dialBackend(ctx context.Context, addr string, timeout, deadAfter time.Duration) (net.Conn, error) {
	c, err := backend.NetDialer(timeout, deadAfter).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return c, nil
}

// backendTLS decides, per backend, whether and how to start TLS.
type backendTLS struct {
	mode string
	base *tls.Config // nil when mode is disabled
}

func newBackendTLS(c config.BackendTLS) (*backendTLS, error) {
	b := &backendTLS{mode: c.Mode}
	if c.Mode == config.TLSDisabled || c.Mode == "" {
		return b, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("backends.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("backends.tls.ca_file: no certificate found in %s", c.CAFile)
		}
		cfg.RootCAs = pool
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("backends.tls.cert_file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	switch c.Mode {
	case config.TLSPreferred, config.TLSRequired:
		cfg.InsecureSkipVerify = true // encryption without authentication, as MySQL's REQUIRED
	case config.TLSVerifyCA:
		// Verify the chain but not the name.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("backend sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: cfg.RootCAs, Intermediates: x509.NewCertPool()}
			for _, ic := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	b.base = cfg
	return b, nil
}

// forBackend returns the TLS configuration to use with a backend that does (offered) or
// does not offer TLS, or nil for none; an error when TLS is required but not offered.
func (b *backendTLS) forBackend(addr string, offered bool) (*tls.Config, error) {
	if b.base == nil || (b.mode == config.TLSPreferred && !offered) {
		return nil, nil
	}
	if !offered {
		return nil, fmt.Errorf("the backend does not offer TLS but backends.tls.mode is %s", b.mode)
	}
	cfg := b.base.Clone()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	return cfg, nil
}
