// Package protocol speaks the MySQL client/server wire protocol on behalf of the proxy.
//
// The proxy sits between clients and MySQL or MariaDB servers and must stay invisible to both,
// except for speed. So this package decodes as little as it can: the framing of packets, the
// handshake and authentication exchange, the command byte and text of a command, and the
// terminal packets (OK, ERR, EOF) of a response, whose status flags tell where a transaction
// begins and ends and whose session-state tracking tells the current schema. Rows are never
// decoded: a result set streams from backend to client as raw frames, copied through reused
// buffers with only the header and first byte of each packet looked at, and with the sequence
// id rewritten for the side it goes to. Steady-state relaying allocates nothing.
//
// A [Conn] frames packets over one network connection and is owned by one goroutine. Two Conns
// are paired (client and backend) so that, before either blocks on a read, whatever is buffered
// for writing on both is flushed: a response streams as it arrives while the packets that are
// already in memory leave in one write.
//
// The response state machine ([ForwardResponse]) knows, for each command, the shape of what
// the server sends back: a single OK/ERR/EOF, a result set (column count, column definitions,
// an EOF unless CLIENT_DEPRECATE_EOF, rows, a terminal EOF or OK), several result sets chained
// by SERVER_MORE_RESULTS_EXISTS, a LOCAL INFILE request answered by the client's file
// streamed packet by packet, a prepared statement's metadata, a cursor's rows. Packets of 16
// MiB and more arrive as several frames; only the first frame of a packet is ever inspected.
//
// The package knows bytes and the protocol, never policy: admission, routing and accounting
// live with its callers.
package protocol
