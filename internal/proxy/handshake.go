package proxy

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// handshakeLimit bounds the packets of a client that has not authenticated yet.
const handshakeLimit = 64 << 10

// errAuthRefused reports that the backend refused the client's credentials; the client has
// the backend's own error.
var errAuthRefused = errors.New("backend refused authentication")

// errEvicted reports a login closed for a newer connection: it had kept silent since its
// greeting while the login slots were full (handshakeGate).
var errEvicted = errors.New("login closed for a newer connection: silent since its greeting while the login slots were full")

// loginDeadlines bounds the login on the client's side: reads end at deadline, and
// writes a second later, so that the error of a login that ran out of time at the
// deadline (a backend that stopped answering) still reaches the client.
func (s *session) loginDeadlines(deadline time.Time) {
	_ = s.client.SetReadDeadline(deadline)
	_ = s.client.SetWriteDeadline(deadline.Add(time.Second))
}

// clientGone reports a client that failed or left during the handshake.
func (s *session) clientGone(err error) error {
	reason := "client_gone"
	var ne net.Error
	switch {
	case s.slot.wasEvicted():
		reason = "evicted"
		// A line for each socket that never speaks would flood the log.
		if n, ok := s.logins.evictions.allow(time.Now()); ok {
			s.log.Info("closed logins silent since their greeting to make room for new connections "+
				"(client.max_handshakes_per_client, client.max_handshakes)", "since_last_line", n)
		}
	case errors.Is(err, protocol.ErrPacketTooLarge):
		reason = "malformed"
		s.log.Warn("closing client connection: login packet over 64 KiB", "err", err)
		s.refuseTooLarge(handshakeLimit)
	case errors.As(err, &ne) && ne.Timeout():
		reason = "timeout"
		// One line for every socket that connects and never speaks would flood the log.
		if n, ok := s.gate.timeouts.allow(time.Now()); ok {
			s.log.Info("handshakes timed out (client.handshake_timeout)", "since_last_line", n, "err", err)
		}
	}
	s.metrics.handshakeErrors.WithLabelValues(reason).Inc()
	s.backendBroken = true
	return err
}

// greet sends a greeting to the client and reads its handshake response, starting TLS
// when the client asks (with the proxy's certificate) and refusing it when the proxy has
// none or requires it. On failure the client has been told why.
func (s *session) greet(ctx context.Context, greeting []byte) (*protocol.HandshakeResponse, error) {
	m := s.metrics
	s.client.ResetSequence()
	if err := s.client.WritePacket(greeting); err != nil {
		return nil, s.clientGone(err)
	}
	s.slot.greeted()
	p, err := s.client.ReadPacket()
	if err != nil {
		return nil, s.clientGone(err)
	}
	if !s.slot.answered() {
		return nil, s.clientGone(errEvicted)
	}
	if protocol.IsSSLRequest(p) {
		if s.gate.clientTLS == nil {
			s.sendError(errTLSNotOffered())
			m.handshakeErrors.WithLabelValues("tls").Inc()
			return nil, errors.New("client asked for TLS, which is not configured")
		}
		if err := s.client.UpgradeServer(ctx, s.gate.clientTLS); err != nil {
			m.handshakeErrors.WithLabelValues("tls").Inc()
			return nil, err
		}
		if p, err = s.client.ReadPacket(); err != nil {
			return nil, s.clientGone(err)
		}
	} else if s.cfg.TLS.Required {
		s.sendError(errTLSRequired())
		m.handshakeErrors.WithLabelValues("tls_required").Inc()
		return nil, errors.New("client did not start TLS, which is required")
	}
	resp, err := protocol.ParseHandshakeResponse(p)
	if err != nil {
		s.sendError(errBadHandshake(err))
		m.handshakeErrors.WithLabelValues("malformed").Inc()
		s.log.Warn("bad handshake from client", "err", err)
		return nil, err
	}
	return resp, nil
}
