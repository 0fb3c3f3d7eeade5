package binlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/auth"
	"github.com/gatekeeperdb/gatekeeper/internal/backend"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// Positions reads the primary's position for the reads that need it, as Raft's ReadIndex
// does: one read in flight at a time, and a caller joins the next read that starts after it
// called, so that the position it gets was read after it arrived, however many callers share
// one read. The reads go over one connection of the proxy's own, logged in as monitor.user.
type Positions struct {
	// read reads the primary's position once; owned by the goroutine of run.
	read func(ctx context.Context) (replicas.Pos, error)
	m    *positionMetrics
	// reads counts the positions read, served the callers they served.
	reads, served atomic.Uint64

	// dialer and want open the connection, conn; owned by the goroutine of run.
	dialer *backend.Dialer
	want   backend.Want
	conn   *backend.Conn

	// mu guards the fields below it.
	mu sync.Mutex
	// addr is where the primary is: the dialer's address until Repoint.
	addr string
	// running: a goroutine reads positions for the waiting rounds; closed: Close was called.
	running, closed bool
	// next is the round the callers arriving now join; it starts once the one in flight
	// has ended.
	next *round
}

// round is one read of the primary's position and the callers it serves.
type round struct {
	done chan struct{}
	pos  replicas.Pos
	err  error
	n    int
}

// readTimeout bounds one read of the position.
const readTimeout = 2 * time.Second

// errClosed: the position reader was closed.
var errClosed = errors.New("binlog: the position reader is closed")

// NewPositions returns the position reader of the primary at addr, which logs in as user.
func NewPositions(addr, user, password string, m *Metrics) *Positions {
	p := &Positions{m: &m.positions, addr: addr,
		dialer: &backend.Dialer{Addr: addr, ConnectTimeout: readTimeout},
		want:   backend.Want{Credential: auth.Credential{User: user, Password: password, HasPassword: true}},
	}
	p.read = p.query
	return p
}

// Read returns the primary's position as read by a query that started after Read was
// called, or ctx's error when it ends first.
func (p *Positions) Read(ctx context.Context) (replicas.Pos, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errClosed
	}
	r := p.next
	if r == nil {
		r = &round{done: make(chan struct{})}
		p.next = r
	}
	r.n++
	if !p.running {
		p.running = true
		go p.run() // ends when no round waits
	}
	p.mu.Unlock()
	select {
	case <-r.done:
		return r.pos, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run reads a position for each round in turn, until none waits.
func (p *Positions) run() {
	for {
		p.mu.Lock()
		r, closed := p.next, p.closed
		if closed {
			p.mu.Unlock()
			p.closeConn() // still the goroutine's own while running holds
			p.mu.Lock()
			p.running = false
			p.mu.Unlock()
			return
		}
		if r == nil {
			p.running = false
			p.mu.Unlock()
			return
		}
		p.next = nil // who arrives now joins a round that starts after this one
		p.mu.Unlock()
		p.m.inFlight.Set(1)
		r.pos, r.err = p.read(context.Background())
		p.m.inFlight.Set(0)
		p.m.reads.Inc()
		p.m.served.Add(float64(r.n))
		p.reads.Add(1)
		p.served.Add(uint64(r.n))
		close(r.done)
	}
}

// query reads the primary's position on the reader's connection, opening it first when
// there is none or it broke.
func (p *Positions) query(ctx context.Context) (replicas.Pos, error) {
	p.mu.Lock()
	addr := p.addr
	p.mu.Unlock()
	if addr != p.dialer.Addr {
		p.closeConn()
		p.dialer = &backend.Dialer{Addr: addr, ConnectTimeout: readTimeout}
	}
	if p.conn == nil || p.conn.Broken() {
		p.closeConn()
		c, err := p.dialer.Dial(ctx, &p.want)
		if err != nil {
			return nil, fmt.Errorf("binlog: reading the primary's position: %w", err)
		}
		p.conn = c
	}
	_ = p.conn.Packets().SetDeadline(time.Now().Add(readTimeout))
	v, err := p.conn.Global("gtid_binlog_pos")
	if err != nil {
		return nil, fmt.Errorf("binlog: reading the primary's position: %w", err)
	}
	return replicas.ParsePos(v)
}

func (p *Positions) closeConn() {
	if p.conn != nil {
		_ = p.conn.Close()
		p.conn = nil
	}
}

// Repoint reads the positions of the primary at addr from the next read on, after a
// failover.
func (p *Positions) Repoint(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.addr = addr
}

// Stats returns how many positions were read, and how many callers they served.
func (p *Positions) Stats() (reads, served uint64) { return p.reads.Load(), p.served.Load() }

// Close closes the reader: its connection, once no read is in flight, and every Read after.
func (p *Positions) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if !p.running {
		p.closeConn()
	}
	return nil
}

// openPrimary returns a handle on one connection to the primary at addr as user.
func openPrimary(addr, user, password string) (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "tcp", addr, user, password
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = readTimeout, readTimeout, readTimeout
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("binlog: the primary %s: %w", addr, err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	return db, nil
}

// queryPosition reads the primary's binary log position (@@gtid_binlog_pos).
func queryPosition(ctx context.Context, db *sql.DB) (replicas.Pos, error) {
	var s string
	if err := db.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&s); err != nil {
		return nil, fmt.Errorf("binlog: reading the primary's position: %w", err)
	}
	return replicas.ParsePos(s)
}

// CheckGrant tells whether user may read the binary log of the primary at addr
// (REPLICATION SLAVE, which ALL PRIVILEGES includes), from its grants; an error when they
// cannot be read.
func CheckGrant(ctx context.Context, addr, user, password string) (bool, error) {
	db, err := openPrimary(addr, user, password)
	if err != nil {
		return false, err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	rows, err := db.QueryContext(ctx, "SHOW GRANTS FOR CURRENT_USER()")
	if err != nil {
		return false, fmt.Errorf("binlog: reading the grants of %s on %s: %w", user, addr, err)
	}
	defer rows.Close()
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return false, err
		}
		if grantsLog(g) {
			return true, nil
		}
	}
	return false, rows.Err()
}

// grantsLog tells whether a line of SHOW GRANTS gives the right to read the binary log: a
// global grant of REPLICATION SLAVE (REPLICATION REPLICA) or ALL PRIVILEGES.
func grantsLog(line string) bool {
	u := strings.ToUpper(line)
	if !strings.Contains(u, " ON *.* ") {
		return false
	}
	return strings.Contains(u, "ALL PRIVILEGES") || strings.Contains(u, "REPLICATION SLAVE") || strings.Contains(u, "REPLICATION REPLICA")
}

// primaryPosition reads the position of the primary at addr once, on a connection of its
// own.
func primaryPosition(ctx context.Context, addr, user, password string) (replicas.Pos, error) {
	db, err := openPrimary(addr, user, password)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	return queryPosition(ctx, db)
}
