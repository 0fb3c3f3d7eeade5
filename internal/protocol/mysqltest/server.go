package mysqltest

import (
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/protocol"
)

// DefaultCapabilities is what the server offers unless Options say otherwise: what a
// MariaDB server offers, without TLS and compression. CLIENT_LONG_PASSWORD is clear, as
// MariaDB clears it to announce its extended capabilities (none here).
const DefaultCapabilities = mysql.CLIENT_FOUND_ROWS | mysql.CLIENT_LONG_FLAG |
	mysql.CLIENT_CONNECT_WITH_DB | mysql.CLIENT_LOCAL_FILES | mysql.CLIENT_PROTOCOL_41 |
	mysql.CLIENT_TRANSACTIONS | mysql.CLIENT_SECURE_CONNECTION |
	mysql.CLIENT_MULTI_STATEMENTS | mysql.CLIENT_MULTI_RESULTS |
	mysql.CLIENT_PS_MULTI_RESULTS | mysql.CLIENT_PLUGIN_AUTH | mysql.CLIENT_CONNECT_ATTRS |
	mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA | mysql.CLIENT_SESSION_TRACK |
	mysql.CLIENT_DEPRECATE_EOF

// DefaultVersion is the server version the greeting announces unless Options say
// otherwise. The "5.5.5-" prefix is how MariaDB announces itself to MySQL clients.
const DefaultVersion = "5.5.5-10.11.0-MariaDB-mysqltest"

// UnknownSchema is the one schema the server does not have: USE, COM_INIT_DB, a login or
// COM_CHANGE_USER naming it fail with ERR 1049. Every other name is accepted.
const UnknownSchema = "nosuchdb"

// Options configure a Server. The zero value is a server with one user, root, without a
// password.
type Options struct {
	// Users maps a user name to its clear-text password. Nil means {"root": ""}.
	Users map[string]string
	// Version is the server version in the greeting. Empty means DefaultVersion.
	Version string
	// Capabilities are the capability flags the server offers; a connection uses those
	// both sides have. Zero means DefaultCapabilities. CLIENT_SSL is never offered.
	Capabilities uint32
	// Handler answers the statements the server does not answer itself; query is the
	// statement without surrounding space or a final semicolon. It runs on the connection's
	// goroutine, one statement at a time per connection, and is also asked for the Columns
	// of a statement that returns rows when it is prepared. Nil answers every such
	// statement with an OK.
	Handler func(c *Conn, query string) Reply
	// RefuseLogins makes every login fail with ERR 1045 from the start; see
	// Server.SetRefuseLogins.
	RefuseLogins bool
}

// Server is a fake MySQL server listening on a loopback port.
type Server struct {
	// Addr is the address the server listens on, host:port.
	Addr string

	opts   Options
	tb     testing.TB
	ln     net.Listener
	refuse atomic.Bool
	logins atomic.Int64
	// wg counts the accept loop and the connection goroutines.
	wg sync.WaitGroup

	mu sync.Mutex
	// conns holds every connection accepted, in accept order; the thread id of conns[i] is
	// i+1.
	conns  []*Conn
	open   int
	closed bool
}

// NewServer starts a server on 127.0.0.1 with an ephemeral port. It stops when tb's test
// ends, closing every connection.
func NewServer(tb testing.TB, opts Options) *Server {
	tb.Helper()
	if opts.Users == nil {
		opts.Users = map[string]string{"root": ""}
	}
	if opts.Version == "" {
		opts.Version = DefaultVersion
	}
	if opts.Capabilities == 0 {
		opts.Capabilities = DefaultCapabilities
	}
	opts.Capabilities &^= mysql.CLIENT_SSL
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("mysqltest: listen: %v", err)
	}
	s := &Server{Addr: ln.Addr().String(), opts: opts, tb: tb, ln: ln}
	s.refuse.Store(opts.RefuseLogins)
	s.wg.Add(1)
	go s.accept() // ends when Close closes the listener
	tb.Cleanup(s.Close)
	return s
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.tb.Errorf("mysqltest: accept: %v", err)
			}
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return
		}
		c := newConn(s, uint32(len(s.conns)+1), nc)
		s.conns = append(s.conns, c)
		s.open++
		s.wg.Add(1)
		s.mu.Unlock()
		go func() { // ends when the connection closes, from either side
			defer s.wg.Done()
			c.serve()
		}()
	}
}

// Close stops the server: it stops listening, closes every connection and waits for their
// goroutines to end. NewServer arranges for it to run when the test ends; calling it
// earlier simulates a server that went away. It must not be called from a Handler.
func (s *Server) Close() {
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	s.mu.Unlock()
	if first {
		_ = s.ln.Close()
		s.CloseAll()
	}
	s.wg.Wait()
}

// CloseAll closes every open connection from the server's side, as a restart or a KILL
// would, and keeps listening.
func (s *Server) CloseAll() {
	for _, c := range s.Conns() {
		c.Close()
	}
}

// Conns returns every connection accepted so far, closed ones included, in accept order.
func (s *Server) Conns() []*Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.conns)
}

// Conn returns the connection with thread id id, or nil.
func (s *Server) Conn(id uint32) *Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == 0 || int(id) > len(s.conns) {
		return nil
	}
	return s.conns[id-1]
}

// Open returns how many connections are open now.
func (s *Server) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

// Logins returns how many logins have succeeded; COM_CHANGE_USER does not count.
func (s *Server) Logins() int { return int(s.logins.Load()) }

// SetRefuseLogins makes every login from now on fail with ERR 1045 (refuse) or succeed
// again when the password is right.
func (s *Server) SetRefuseLogins(refuse bool) { s.refuse.Store(refuse) }

// connClosed updates the count of open connections.
func (s *Server) connClosed() {
	s.mu.Lock()
	s.open--
	s.mu.Unlock()
}

// verify checks a mysql_native_password answer to scramble for user.
func (s *Server) verify(user string, scramble, answer []byte) bool {
	password, ok := s.opts.Users[user]
	if !ok {
		return false
	}
	var stage2 []byte
	if password != "" {
		stage2 = protocol.NativeStage2(protocol.NativeStage1(password))
	}
	_, ok = protocol.NativeVerify(stage2, scramble, answer)
	return ok
}
