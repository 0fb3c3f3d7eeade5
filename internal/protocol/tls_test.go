package protocol

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"
)

func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// coalescingConn holds its first write back and sends it together with the second, as a
// client that starts TLS right after its SSLRequest may do on the wire.
type coalescingConn struct {
	net.Conn
	held []byte
	done bool
}

func (c *coalescingConn) Write(p []byte) (int, error) {
	if !c.done && c.held == nil {
		c.held = append([]byte(nil), p...)
		return len(p), nil
	}
	if !c.done {
		c.done = true
		if _, err := c.Conn.Write(append(c.held, p...)); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func TestUpgradeServerWithEarlyClientHello(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cert := selfSigned(t)
	clientErr := make(chan error, 1)
	go func() { // ends when the handshake ends
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			clientErr <- err
			return
		}
		defer nc.Close()
		cc := &coalescingConn{Conn: nc}
		ssl := make([]byte, sslRequestLen)
		ssl[1] = 0x0a // CLIENT_PROTOCOL_41 | CLIENT_SSL
		s := &stream{seq: 1}
		s.packet(ssl)
		if _, err := cc.Write(s.b); err != nil {
			clientErr <- err
			return
		}
		tc := tls.Client(cc, &tls.Config{InsecureSkipVerify: true})
		clientErr <- tc.Handshake()
	}()
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	c := NewConn(nc)
	p, err := c.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	if !IsSSLRequest(p) {
		t.Fatalf("not an SSLRequest: %x", p)
	}
	if c.Buffered() == 0 {
		t.Fatal("the ClientHello did not arrive with the SSLRequest; the test does not test the case")
	}
	if err := c.UpgradeServer(context.Background(), &tls.Config{Certificates: []tls.Certificate{cert}}); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if err := <-clientErr; err != nil {
		t.Fatalf("client handshake: %v", err)
	}
}
