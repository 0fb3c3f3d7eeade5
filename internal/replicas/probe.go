package replicas

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// Probe checks that a MySQL server answers at an address.
type Probe struct {
	addr    string
	timeout time.Duration
	// ttl is how long a result is reused.
	ttl time.Duration
	now func() time.Time

	// mu guards the cached result; held across a check so concurrent callers share one.
	mu      sync.Mutex
	checked time.Time
	err     error
	version string
}

// NewProbe returns a Probe of addr whose checks take at most timeout; results are reused
// for ttl (zero means every call checks).
func NewProbe(addr string, timeout, ttl time.Duration) *Probe {
	return &Probe{addr: addr, timeout: timeout, ttl: ttl, now: time.Now}
}

// Addr returns the address probed.
func (p *Probe) Addr() string { return p.addr }

// Check returns nil when the server answered with a greeting, recently or now.
func (p *Probe) Check(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.checked.IsZero() && p.now().Sub(p.checked) < p.ttl {
		return p.err
	}
	p.version, p.err = greet(ctx, p.addr, p.timeout)
	p.checked = p.now()
	return p.err
}

// greet connects to addr, reads the greeting and hangs up.
func greet(ctx context.Context, addr string, timeout time.Duration) (version string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("backend %s: %w", addr, err)
	}
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	c := protocol.NewConn(nc)
	c.SetLimit(64 << 10)
	pkt, err := c.ReadPacket()
	if err != nil {
		return "", fmt.Errorf("backend %s: no greeting: %w", addr, err)
	}
	if len(pkt) > 0 && pkt[0] == mysql.ERR_HEADER {
		e, perr := protocol.ParseError(pkt)
		if perr != nil {
			return "", fmt.Errorf("backend %s: %w", addr, perr)
		}
		return "", fmt.Errorf("backend %s refuses connections: %w", addr, e)
	}
	g, err := protocol.ParseGreeting(pkt)
	if err != nil {
		return "", fmt.Errorf("backend %s: %w", addr, err)
	}
	return g.ServerVersion, nil
}

// ErrNotChecked is returned by Version before the first successful check.
var ErrNotChecked = errors.New("not checked yet")

// Version returns the server version seen by the last successful check.
func (p *Probe) Version() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.version == "" {
		return "", ErrNotChecked
	}
	return p.version, nil
}
