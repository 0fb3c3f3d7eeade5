// Package handover is the channel over which a running gatekeeper hands its listening
// sockets and its client connections to a new process: a unix socket pair, one end kept
// by the running process and the other inherited by the process it starts, carrying
// length-prefixed JSON messages with file descriptors attached (SCM_RIGHTS).
//
// The exchange, old process (O) and new process (N):
//
//	O → N  hello      the format, the version, where O saved its learned state
//	N → O  accept     or refuse, with the reason; N then exits with ExitRefused
//	O → N  listeners  the listening sockets (O stopped accepting), the next connection id
//	N → O  ready      N serves; O tells systemd N is the main process
//	O → N  session    one per client connection, as each goes idle
//	O → N  done       O holds nothing more; its counts of what it handed over
package handover

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// Format is the version of what the messages carry. A process refuses a hand-over from a
// process whose format it cannot read. It is a variable so that a test can build a binary
// that refuses (-ldflags -X .../internal/handover.Format=...).
var Format = "1"

// ExitRefused is the exit status of a new process that refused a hand-over.
const ExitRefused = 3

// EnvFD names the environment variable that tells a new process the descriptor of its end
// of the channel.
const EnvFD = "GATEKEEPER_HANDOVER_FD"

// maxMessage bounds a message: a session's state with its prepared statements fits many
// times over.
const maxMessage = 64 << 20

// maxFiles bounds the descriptors one message carries.
const maxFiles = 8

// Message kinds.
const (
	KindHello     = "hello"
	KindAccept    = "accept"
	KindRefuse    = "refuse"
	KindListeners = "listeners"
	KindReady     = "ready"
	KindSession   = "session"
	KindDone      = "done"
)

// Hello opens the exchange.
type Hello struct {
	Format  string `json:"format"`
	Version string `json:"version"`
	PID     int    `json:"pid"`
	// Mode is the old process's mode: its sessions are of that mode.
	Mode string `json:"mode"`
	// EstimatesFile is where the old process saved the estimator's state just before, for
	// a new process without a state file of its own; empty when there is none.
	EstimatesFile string `json:"estimates_file,omitempty"`
}

// Accept says the new process reads the old one's state.
type Accept struct {
	Version string `json:"version"`
}

// Refuse ends the exchange from the new process.
type Refuse struct {
	Reason string `json:"reason"`
}

// Listeners carries the listening sockets: the client listener first, then the admin
// listener when there is one (Admin).
type Listeners struct {
	// NextID is the last connection id the old process gave; the new one goes on above.
	NextID uint64 `json:"next_id"`
	Admin  bool   `json:"admin"`
	// Versions is every position of a write the old process acknowledged (as
	// replicas.ParsePos reads it), and VersionMap its version map table by table, which
	// a process of the same format may not know.
	Versions   json.RawMessage `json:"versions,omitempty"`
	VersionMap json.RawMessage `json:"version_map,omitempty"`
}

// Ready says the new process serves.
type Ready struct {
	PID int `json:"pid"`
}

// Done ends the exchange from the old process.
type Done struct {
	// HandedOver counts the connections handed over; Drained those that could not be,
	// by reason.
	HandedOver int            `json:"handed_over"`
	Drained    map[string]int `json:"drained,omitempty"`
	// Versions and VersionMap are the old process's, as Listeners has them, as it ends:
	// the writes it acknowledged until its last connection left.
	Versions   json.RawMessage `json:"versions,omitempty"`
	VersionMap json.RawMessage `json:"version_map,omitempty"`
	// Handovers counts the hand-overs the old process started, by result, carried over
	// so that its metric keeps counting.
	Handovers map[string]int `json:"handovers,omitempty"`
}

// Message is one message as it arrives.
type Message struct {
	Kind string          `json:"kind"`
	Body json.RawMessage `json:"body,omitempty"`
	// Files are the descriptors that came with it; the receiver owns them.
	Files []*os.File `json:"-"`
}

// Decode reads the message's body into v.
func (m *Message) Decode(v any) error {
	if err := json.Unmarshal(m.Body, v); err != nil {
		return fmt.Errorf("handover: %s message: %w", m.Kind, err)
	}
	return nil
}

// Close closes the descriptors that came with the message and were not taken.
func (m *Message) Close() { CloseFiles(m.Files) }

// Channel is one end of the hand-over's socket pair. Send may be called from several
// goroutines at once (each message goes out whole); Receive from one at a time.
type Channel struct {
	c *net.UnixConn
	// wmu keeps each message's writes together.
	wmu sync.Mutex
}

// Pair returns the old process's end of a new channel and the file of the new process's
// end, to pass to it (exec.Cmd.ExtraFiles); the caller closes that file once the new
// process has started.
func Pair() (*Channel, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("handover: socketpair: %w", err)
	}
	mine := os.NewFile(uintptr(fds[0]), "handover")
	theirs := os.NewFile(uintptr(fds[1]), "handover-child")
	ch, err := Open(mine)
	if err != nil {
		_ = theirs.Close()
		return nil, nil, err
	}
	return ch, theirs, nil
}

// Inherited returns the channel a process was started with (EnvFD), or nil when it was
// started otherwise. The variable is removed, so that a process this one starts later
// does not take it for its own.
func Inherited() (*Channel, error) {
	v, ok := os.LookupEnv(EnvFD)
	if !ok {
		return nil, nil
	}
	_ = os.Unsetenv(EnvFD)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("handover: %s=%q is not a descriptor", EnvFD, v)
	}
	syscall.CloseOnExec(fd)
	return Open(os.NewFile(uintptr(fd), "handover"))
}

// Open returns the channel of f, an end of a socket pair (Pair's other end), and closes f.
func Open(f *os.File) (*Channel, error) {
	defer f.Close() // FileConn holds a duplicate
	nc, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("handover: %w", err)
	}
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		_ = nc.Close()
		return nil, errors.New("handover: the descriptor is not a unix socket")
	}
	return &Channel{c: uc}, nil
}

// Close closes the channel; the other side's Receive then fails with io.EOF.
func (ch *Channel) Close() error { return ch.c.Close() }

// Send sends a message of kind with body, and files with it. The files stay the
// caller's: the receiver gets duplicates.
func (ch *Channel) Send(kind string, body any, files ...*os.File) error {
	if len(files) > maxFiles {
		return fmt.Errorf("handover: %d descriptors in one message, at most %d", len(files), maxFiles)
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("handover: %s message: %w", kind, err)
	}
	data, err := json.Marshal(Message{Kind: kind, Body: raw})
	if err != nil {
		return err
	}
	if len(data) > maxMessage {
		return fmt.Errorf("handover: %s message of %d bytes, at most %d", kind, len(data), maxMessage)
	}
	buf := make([]byte, 4+len(data))
	binary.BigEndian.PutUint32(buf, uint32(len(data)))
	copy(buf[4:], data)
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = syscall.UnixRights(fds...)
	}
	// The descriptors ride on the first bytes; the rest of a long message may take
	// further writes.
	ch.wmu.Lock()
	defer ch.wmu.Unlock()
	n, _, err := ch.c.WriteMsgUnix(buf, oob, nil)
	if err != nil {
		return fmt.Errorf("handover: send %s: %w", kind, err)
	}
	if n < len(buf) {
		if _, err := ch.c.Write(buf[n:]); err != nil {
			return fmt.Errorf("handover: send %s: %w", kind, err)
		}
	}
	return nil
}

// Receive returns the next message. At the end of the channel it returns io.EOF.
func (ch *Channel) Receive() (*Message, error) {
	var head [4]byte
	oob := make([]byte, syscall.CmsgSpace(maxFiles*4))
	// The length comes first, with the descriptors: read exactly its four bytes so that
	// the descriptors of the next message wait for it.
	n, oobn, _, _, err := ch.c.ReadMsgUnix(head[:], oob)
	if err != nil {
		return nil, err
	}
	files, ferr := parseRights(oob[:oobn])
	if n == 0 {
		CloseFiles(files)
		return nil, io.EOF
	}
	m := &Message{Files: files}
	if ferr != nil {
		m.Close()
		return nil, ferr
	}
	if n < len(head) {
		if _, err := io.ReadFull(ch.c, head[n:]); err != nil {
			m.Close()
			return nil, fmt.Errorf("handover: %w", err)
		}
	}
	size := binary.BigEndian.Uint32(head[:])
	if size > maxMessage {
		m.Close()
		return nil, fmt.Errorf("handover: message of %d bytes, at most %d", size, maxMessage)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(ch.c, data); err != nil {
		m.Close()
		return nil, fmt.Errorf("handover: %w", err)
	}
	if err := json.Unmarshal(data, m); err != nil {
		m.Close()
		return nil, fmt.Errorf("handover: %w", err)
	}
	return m, nil
}

// parseRights returns the descriptors of SCM_RIGHTS control messages as files.
func parseRights(oob []byte) ([]*os.File, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("handover: control message: %w", err)
	}
	var files []*os.File
	for i := range msgs {
		fds, err := syscall.ParseUnixRights(&msgs[i])
		if err != nil {
			CloseFiles(files)
			return nil, fmt.Errorf("handover: control message: %w", err)
		}
		for _, fd := range fds {
			syscall.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), "handed-over"))
		}
	}
	return files, nil
}

// CloseFiles closes files, descriptors a message carried or duplicates made to send.
func CloseFiles(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// Dup returns a duplicate of the socket of c, a listener or a connection, which stays
// open when c closes.
func Dup(c any) (*os.File, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("handover: %T is not a socket", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var fd int
	var dupErr error
	if err := rc.Control(func(s uintptr) { fd, dupErr = syscall.Dup(int(s)) }); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, dupErr
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "socket"), nil
}

// Compatible tells whether this process can read what a process of format sends.
func Compatible(format string) bool { return format == Format }
