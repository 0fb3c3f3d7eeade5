package topology

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
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
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "tcp", addr, r.user, r.password
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = r.timeout, r.timeout, r.timeout
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
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
	rows, err := db.QueryContext(ctx, "SHOW SLAVE STATUS")
	if err != nil {
		return fmt.Errorf("SHOW SLAVE STATUS: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	if !rows.Next() {
		return rows.Err()
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return err
	}
	var host, port string
	for i, c := range cols {
		switch c {
		case "Master_Host":
			host = vals[i].String
		case "Master_Port":
			port = vals[i].String
		case "Slave_IO_Running":
			// Connecting counts: the replica means to replicate, and takes no writes of
			// its own as a primary would.
			s.Replicating = s.Replicating || vals[i].String == "Yes" || vals[i].String == "Connecting"
		case "Slave_SQL_Running":
			s.Replicating = s.Replicating || vals[i].String == "Yes"
		}
	}
	if host != "" {
		if _, err := strconv.Atoi(port); err == nil {
			s.Source = net.JoinHostPort(host, port)
		} else {
			s.Source = host
		}
	}
	return rows.Err()
}
