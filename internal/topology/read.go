package topology

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
)

// SQLReader reads roles over one connection per server, logged in as the monitoring
// account, each read bounded by timeout.
type SQLReader struct {
	user, password string
	timeout        time.Duration

	// mu guards dbs.
	mu  sync.Mutex
	dbs map[string]*sql.DB
}

// NewSQLReader returns a reader that logs in as user.
func NewSQLReader(user, password string, timeout time.Duration) *SQLReader {
	return &SQLReader{user: user, password: password, timeout: timeout, dbs: map[string]*sql.DB{}}
}

// Close closes the reader's connections.
func (r *SQLReader) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, db := range r.dbs {
		_ = db.Close()
	}
	r.dbs = map[string]*sql.DB{}
}

func (r *SQLReader) db(addr string) (*sql.DB, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if db := r.dbs[addr]; db != nil {
		return db, nil
	}
	db, err := replicas.OpenMonitor(addr, r.user, r.password, r.timeout)
	if err != nil {
		return nil, err
	}
	r.dbs[addr] = db
	return db, nil
}

// Read reads the role of the server at addr: read_only, its binary log position, and
// whether and from whom it replicates.
func (r *SQLReader) Read(ctx context.Context, addr string) Server {
	s := Server{Addr: addr, Checked: time.Now()}
	if err := r.read(ctx, addr, &s); err != nil {
		s.Up, s.Err = false, err.Error()
		return s
	}
	s.Up = true
	return s
}

func (r *SQLReader) read(ctx context.Context, addr string, s *Server) error {
	db, err := r.db(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := db.QueryRowContext(ctx, "SELECT @@read_only, @@gtid_binlog_pos").Scan(&s.ReadOnly, &s.Pos); err != nil {
		return err
	}
	st, err := replicas.ReplicaStatus(ctx, db)
	if err != nil {
		return fmt.Errorf("SHOW SLAVE STATUS: %w", err)
	}
	// Connecting counts: the replica means to replicate, and takes no writes of its own as
	// a primary would.
	s.Replicating = st["Slave_IO_Running"] == "Yes" || st["Slave_IO_Running"] == "Connecting" || st["Slave_SQL_Running"] == "Yes"
	if host := st["Master_Host"]; host != "" {
		s.Source = net.JoinHostPort(host, st["Master_Port"])
	}
	return nil
}
