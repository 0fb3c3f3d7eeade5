package protocol

import (
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// commandBufferLimit is how much of a command is held in memory. A longer command (a large
// INSERT, a long-data chunk) is read up to this much and the rest streams to the backend.
const commandBufferLimit = 1 << 20

// Command is a command read from a client. When the command is longer than what is held in
// memory, Payload is its head and the rest is still unread; ForwardCommand streams it.
type Command struct {
	// Payload is the command byte followed by its arguments, or the head of them.
	Payload []byte
	// frameLen is the length of the command's first frame.
	frameLen int
	// unread is the number of bytes of the first frame not read into Payload.
	unread int
}

// Byte returns the command byte (COM_QUERY, ...).
func (c *Command) Byte() byte { return c.Payload[0] }

// Complete tells whether Payload holds the whole command.
func (c *Command) Complete() bool { return c.unread == 0 && c.frameLen < MaxFramePayload }

// Text returns the argument of a text command (the SQL of COM_QUERY and COM_STMT_PREPARE,
// the schema of COM_INIT_DB), or its head when the command is longer than what is held.
func (c *Command) Text() []byte { return c.Payload[1:] }

// ReadCommand reads the next command from the client. An empty packet is malformed; a
// command longer than c's limit is refused before anything of it is forwarded when its first
// frame already says so.
//
// A command that fits the read buffer is buffered whole before any of it is consumed: a
// read cut short by a deadline leaves it where Unread finds it.
func (c *Conn) ReadCommand(cmd *Command) error {
	n, err := c.readWholeHeader()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: empty command", ErrMalformed)
	}
	if c.limit > 0 && n > c.limit {
		c.refused = n
		return fmt.Errorf("%w: more than %d bytes", ErrPacketTooLarge, c.limit)
	}
	keep := min(n, commandBufferLimit)
	c.buf = c.buf[:0]
	if err := c.appendPayload(keep); err != nil {
		return err
	}
	cmd.Payload = c.buf
	cmd.frameLen = n
	cmd.unread = n - keep
	return nil
}

// ForwardCommand writes cmd to the backend b as a new exchange (sequence id 0), streaming
// the part of it that was not read yet from the client c.
func (c *Conn) ForwardCommand(cmd *Command, b *Conn) error {
	b.ResetSequence()
	if err := b.writeHeader(cmd.frameLen); err != nil {
		return err
	}
	if err := b.write(cmd.Payload); err != nil {
		return err
	}
	if err := c.copyPayload(b, cmd.unread); err != nil {
		return err
	}
	cmd.unread = 0
	if cmd.frameLen < MaxFramePayload {
		return b.Flush()
	}
	// More frames follow: stream them, keeping the client's limit over the whole packet.
	total := cmd.frameLen
	for {
		n, err := c.readHeader()
		if err != nil {
			return err
		}
		total += n
		if c.limit > 0 && total > c.limit {
			c.refused = n
			return fmt.Errorf("%w: more than %d bytes", ErrPacketTooLarge, c.limit)
		}
		if err := b.writeHeader(n); err != nil {
			return err
		}
		if err := c.copyPayload(b, n); err != nil {
			return err
		}
		if n < MaxFramePayload {
			return b.Flush()
		}
	}
}

// CommandName returns a short lower-case name of a command byte, for metrics and logs.
func CommandName(cmd byte) string {
	if int(cmd) < len(commandNames) && commandNames[cmd] != "" {
		return commandNames[cmd]
	}
	return "unknown"
}

var commandNames = [...]string{
	mysql.COM_SLEEP:               "sleep",
	mysql.COM_QUIT:                "quit",
	mysql.COM_INIT_DB:             "init_db",
	mysql.COM_QUERY:               "query",
	mysql.COM_FIELD_LIST:          "field_list",
	mysql.COM_CREATE_DB:           "create_db",
	mysql.COM_DROP_DB:             "drop_db",
	mysql.COM_REFRESH:             "refresh",
	mysql.COM_SHUTDOWN:            "shutdown",
	mysql.COM_STATISTICS:          "statistics",
	mysql.COM_PROCESS_INFO:        "process_info",
	mysql.COM_CONNECT:             "connect",
	mysql.COM_PROCESS_KILL:        "process_kill",
	mysql.COM_DEBUG:               "debug",
	mysql.COM_PING:                "ping",
	mysql.COM_TIME:                "time",
	mysql.COM_DELAYED_INSERT:      "delayed_insert",
	mysql.COM_CHANGE_USER:         "change_user",
	mysql.COM_BINLOG_DUMP:         "binlog_dump",
	mysql.COM_TABLE_DUMP:          "table_dump",
	mysql.COM_CONNECT_OUT:         "connect_out",
	mysql.COM_REGISTER_SLAVE:      "register_slave",
	mysql.COM_STMT_PREPARE:        "stmt_prepare",
	mysql.COM_STMT_EXECUTE:        "stmt_execute",
	mysql.COM_STMT_SEND_LONG_DATA: "stmt_send_long_data",
	mysql.COM_STMT_CLOSE:          "stmt_close",
	mysql.COM_STMT_RESET:          "stmt_reset",
	mysql.COM_SET_OPTION:          "set_option",
	mysql.COM_STMT_FETCH:          "stmt_fetch",
	mysql.COM_DAEMON:              "daemon",
	mysql.COM_BINLOG_DUMP_GTID:    "binlog_dump_gtid",
	mysql.COM_RESET_CONNECTION:    "reset_connection",
}

// Commands lists every command byte that has a name, for pre-registering metrics.
func Commands() []byte {
	var out []byte
	for i, n := range commandNames {
		if n != "" {
			out = append(out, byte(i))
		}
	}
	return out
}

// Replace makes p the command to forward instead of the one read; only for a command held
// whole in memory (Complete) and p shorter than one frame.
func (c *Command) Replace(p []byte) {
	c.Payload, c.frameLen, c.unread = p, len(p), 0
}

// DiscardCommand reads and drops what is left of a command that was read only in part, so
// that the client can be answered and the connection goes on.
func (c *Conn) DiscardCommand(cmd *Command) error {
	if err := c.discardFrames(cmd.unread, cmd.frameLen); err != nil {
		return err
	}
	cmd.unread, cmd.frameLen = 0, 0
	return nil
}

// discardFrames drops the unread bytes of the current frame, whose length is frameLen, and
// the frames that follow it in the same packet (a frame of MaxFramePayload bytes announces
// another).
func (c *Conn) discardFrames(unread, frameLen int) error {
	if err := c.discard(unread); err != nil {
		return err
	}
	for n := frameLen; n >= MaxFramePayload; {
		var err error
		if n, err = c.readHeader(); err != nil {
			return err
		}
		if err := c.discard(n); err != nil {
			return err
		}
	}
	return nil
}

// discard drops n bytes of the current frame.
func (c *Conn) discard(n int) error {
	for n > 0 {
		if err := c.flushBeforeBlock(1); err != nil {
			return err
		}
		if c.Buffered() == 0 {
			if err := c.fill(); err != nil {
				return err
			}
		}
		k := min(n, c.Buffered())
		c.skip(k)
		n -= k
	}
	return nil
}
