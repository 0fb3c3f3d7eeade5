package replicas

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
)

// monitor polls one backend's replication position with the monitoring account: the
// primary's @@gtid_binlog_pos, a replica's @@gtid_slave_pos, and every second whether a
// replica's replication threads run.
type monitor struct {
	r  *Router
	b  *Backend
	db *sql.DB
	// addr is the server db reaches: the backend's, or for the primary where it is now.
	addr string
}

// statusEvery is how often a replica's replication threads are checked.
const statusEvery = time.Second

func newMonitor(r *Router, b *Backend) (*monitor, error) {
	addr := b.Addr
	if b.Primary {
		addr = r.PrimaryAddr()
	}
	db, err := OpenMonitor(addr, r.cfg.User, r.cfg.Password, max(time.Second, 20*r.cfg.PollInterval))
	if err != nil {
		return nil, err
	}
	return &monitor{r: r, b: b, db: db, addr: addr}, nil
}

// openMonitor returns a handle on one connection to addr as user.
func OpenMonitor(addr, user, password string, timeout time.Duration) (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "tcp", addr, user, password
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = timeout, timeout, timeout
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("replicas: monitor of %s: %w", addr, err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	return db, nil
}

func (m *monitor) run(ctx context.Context) {
	defer func() { m.db.Close() }()
	interval := m.r.cfg.PollInterval
	t := time.NewTicker(interval)
	defer t.Stop()
	var checked time.Time
	replicating := true
	for {
		if m.b.Primary {
			m.follow()
		}
		started := time.Now()
		pos, err := m.position(ctx)
		now := time.Now()
		if m.b.Primary {
			if err == nil {
				m.r.sawPrimary(started, now, pos)
			}
			m.b.setPrimary(err, now)
		} else {
			if err == nil && now.Sub(checked) >= statusEvery {
				replicating, err = m.replicating(ctx)
				checked = now
			}
			if ctx.Err() != nil {
				return
			}
			m.r.sawReplica(m.b, pos, replicating, err, now)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// follow moves the primary's monitor to where the primary is now, after a failover.
func (m *monitor) follow() {
	a := m.r.PrimaryAddr()
	if a == m.addr {
		return
	}
	db, err := OpenMonitor(a, m.r.cfg.User, m.r.cfg.Password, max(time.Second, 20*m.r.cfg.PollInterval))
	if err != nil {
		return
	}
	m.db.Close()
	m.db, m.addr = db, a
}

// position reads the backend's position.
func (m *monitor) position(ctx context.Context) (Pos, error) {
	q := "SELECT @@gtid_slave_pos"
	if m.b.Primary {
		q = "SELECT @@gtid_binlog_pos"
	}
	var s string
	if err := m.db.QueryRowContext(ctx, q).Scan(&s); err != nil {
		return nil, err
	}
	return ParsePos(s)
}

// replicating tells whether both replication threads run.
func (m *monitor) replicating(ctx context.Context) (bool, error) {
	st, err := ReplicaStatus(ctx, m.db)
	return st["Slave_IO_Running"] == "Yes" && st["Slave_SQL_Running"] == "Yes", err
}

// ReplicaStatus returns the server's SHOW SLAVE STATUS by column name; nil when it is not
// a replica (no row).
func ReplicaStatus(ctx context.Context, db *sql.DB) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, "SHOW SLAVE STATUS")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if !rows.Next() {
		return nil, rows.Err()
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	st := make(map[string]string, len(cols))
	for i, c := range cols {
		st[c] = vals[i].String
	}
	return st, rows.Err()
}

// setPrimary records what a poll of the primary found.
func (b *Backend) setPrimary(err error, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.st.Up, b.st.Checked = err == nil, now
	if err != nil {
		b.st.Err = err.Error()
	} else {
		b.st.Err = ""
	}
}
