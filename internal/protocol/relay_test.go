package protocol

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/go-mysql-org/go-mysql/mysql"
)

const (
	autocommit = mysql.SERVER_STATUS_AUTOCOMMIT
	inTrans    = mysql.SERVER_STATUS_IN_TRANS
	more       = mysql.SERVER_MORE_RESULTS_EXISTS
	cursor     = mysql.SERVER_STATUS_CURSOR_EXISTS
)

const baseCaps = mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_SECURE_CONNECTION |
	mysql.CLIENT_MULTI_RESULTS | mysql.CLIENT_PS_MULTI_RESULTS | mysql.CLIENT_LOCAL_FILES

func TestForwardResponse(t *testing.T) {
	big := bytes.Repeat([]byte{0xfe}, MaxFramePayload+10) // a row whose frames start with 0xFE
	bigRow := textRow(string(big))
	tests := []struct {
		name         string
		cmd          byte
		deprecateEOF bool
		response     func(s *stream)
		trailing     []byte // bytes that belong to the next exchange and must stay unread
		want         Response
	}{
		{
			name: "ok",
			cmd:  mysql.COM_QUERY,
			response: func(s *stream) {
				s.packet(okPacket(autocommit))
			},
			want: Response{Status: autocommit, HasStatus: true, Results: 1},
		},
		{
			name: "error",
			cmd:  mysql.COM_QUERY,
			response: func(s *stream) {
				s.packet(errPacket(1064, "syntax"))
			},
			want: Response{Err: &ServerError{Code: 1064, State: "HY000", Message: "syntax"}, Results: 1},
		},
		{
			name: "result set with EOF",
			cmd:  mysql.COM_QUERY,
			response: func(s *stream) {
				s.resultSet(false, inTrans, textRow("a"), textRow("b"))
			},
			want: Response{Status: inTrans, HasStatus: true, Results: 1, Rows: 2},
		},
		{
			name:         "result set with deprecated EOF",
			cmd:          mysql.COM_QUERY,
			deprecateEOF: true,
			response: func(s *stream) {
				s.resultSet(true, autocommit, textRow("a"), textRow("b"), textRow("c"))
			},
			want: Response{Status: autocommit, HasStatus: true, Results: 1, Rows: 3},
		},
		{
			name:         "empty result set with deprecated EOF",
			cmd:          mysql.COM_QUERY,
			deprecateEOF: true,
			response: func(s *stream) {
				s.resultSet(true, autocommit)
			},
			want: Response{Status: autocommit, HasStatus: true, Results: 1},
		},
		{
			name:         "row of 16 MiB split into frames that start with 0xFE",
			cmd:          mysql.COM_QUERY,
			deprecateEOF: true,
			response: func(s *stream) {
				s.resultSet(true, autocommit, bigRow, textRow("x"))
			},
			want: Response{Status: autocommit, HasStatus: true, Results: 1, Rows: 2},
		},
		{
			name: "error in the middle of rows",
			cmd:  mysql.COM_QUERY,
			response: func(s *stream) {
				s.packet([]byte{1}).packet(columnDef("c")).packet(eofPacket(0))
				s.packet(textRow("a")).packet(errPacket(1317, "interrupted"))
			},
			want: Response{HasStatus: true, Results: 1, Rows: 1,
				Err: &ServerError{Code: 1317, State: "HY000", Message: "interrupted"}},
		},
		{
			name: "three result sets and a final OK (stored procedure)",
			cmd:  mysql.COM_QUERY,
			response: func(s *stream) {
				s.resultSet(false, autocommit|more, textRow("1"))
				s.resultSet(false, autocommit|more, textRow("2"), textRow("2"))
				s.resultSet(false, autocommit|more, textRow("3"))
				s.packet(okPacket(autocommit))
			},
			want: Response{Status: autocommit, HasStatus: true, Results: 4, Rows: 4},
		},
		{
			name:         "multi-statement with an error in the second",
			cmd:          mysql.COM_QUERY,
			deprecateEOF: true,
			response: func(s *stream) {
				s.packet(okPacket(autocommit | more))
				s.packet(errPacket(1146, "no such table"))
			},
			want: Response{Status: autocommit | more, HasStatus: true, Results: 2,
				Err: &ServerError{Code: 1146, State: "HY000", Message: "no such table"}},
		},
		{
			name:         "binary rows start with 0x00 and are not OK packets",
			cmd:          mysql.COM_STMT_EXECUTE,
			deprecateEOF: true,
			response: func(s *stream) {
				s.resultSet(true, autocommit, []byte{0x00, 0x00, 1, 'a'}, []byte{0x00, 0x00, 1, 'b'})
			},
			want: Response{Status: autocommit, HasStatus: true, Results: 1, Rows: 2},
		},
		{
			name: "cursor opened: metadata only",
			cmd:  mysql.COM_STMT_EXECUTE,
			response: func(s *stream) {
				s.packet([]byte{1}).packet(columnDef("c")).packet(eofPacket(autocommit | cursor))
			},
			want: Response{Status: autocommit | cursor, HasStatus: true, Results: 1, Cursor: true},
		},
		{
			name:         "cursor opened with deprecated EOF",
			cmd:          mysql.COM_STMT_EXECUTE,
			deprecateEOF: true,
			response: func(s *stream) {
				s.packet([]byte{1}).packet(columnDef("c")).packet(okAsEOF(autocommit | cursor))
			},
			want: Response{Status: autocommit | cursor, HasStatus: true, Results: 1, Cursor: true},
		},
		// A procedure that opened cursors of its own sends result sets whose status carries
		// SERVER_STATUS_CURSOR_EXISTS, and their rows follow. The packets are MariaDB 10.11's
		// answer to CALL p() for
		//
		//	CREATE PROCEDURE p() BEGIN DECLARE x INT; DECLARE c1 CURSOR FOR SELECT data FROM t1 LIMIT 1;
		//	 BEGIN DECLARE y INT; DECLARE c2 CURSOR FOR SELECT i FROM t2 LIMIT 1; OPEN c2; FETCH c2 INTO y; CLOSE c2; SELECT 2,y; END;
		//	 OPEN c1; FETCH c1 INTO x; CLOSE c1; SELECT 1,x; END
		{
			name: "procedure with cursors, text protocol, as the mariadb client gets it",
			cmd:  mysql.COM_QUERY,
			response: func(s *stream) {
				s.captured(
					"0201", // two columns; metadata follows (MARIADB_CLIENT_CACHE_METADATA)
					"03646566000000013200000c3f0001000000038100000000",
					"0364656600000001790179000c3f000b000000030000000000",
					"fe00006a00", // autocommit, more results, no index used, cursor exists
					"01320132",
					"fe00006a00",
					"0201",
					"03646566000000013100000c3f0001000000038100000000",
					"0364656600000001780178000c3f000b000000030000000000",
					"fe00006a00",
					"01310131",
					"fe00006a00",
					"00000022000000",
				)
			},
			want: Response{Status: autocommit | mysql.SERVER_STATUS_NO_INDEX_USED, HasStatus: true, Results: 3, Rows: 2},
		},
		{
			name: "procedure with cursors, prepared CALL executed with a cursor asked for",
			cmd:  mysql.COM_STMT_EXECUTE,
			response: func(s *stream) {
				s.captured(
					"02",
					"036465660000000132000c3f0001000000038100000000",
					"03646566000000017901790c3f000b000000030000000000",
					"fe00006a00",
					"00000200000002000000",
					"fe00006a00",
					"02",
					"036465660000000131000c3f0001000000038100000000",
					"03646566000000017801780c3f000b000000030000000000",
					"fe00006a00",
					"00000100000001000000",
					"fe00006a00",
					"00000022000000",
				)
			},
			want: Response{Status: autocommit | mysql.SERVER_STATUS_NO_INDEX_USED, HasStatus: true, Results: 3, Rows: 2},
		},
		{
			name:         "procedure with cursors, deprecated EOF",
			cmd:          mysql.COM_STMT_EXECUTE,
			deprecateEOF: true,
			response: func(s *stream) {
				s.captured(
					"02",
					"036465660000000132000c3f0001000000038100000000",
					"03646566000000017901790c3f000b000000030000000000",
					"00000200000002000000",
					"fe00006a000000",
					"02",
					"036465660000000131000c3f0001000000038100000000",
					"03646566000000017801780c3f000b000000030000000000",
					"00000100000001000000",
					"fe00006a000000",
					"00000022000000",
				)
			},
			want: Response{Status: autocommit | mysql.SERVER_STATUS_NO_INDEX_USED, HasStatus: true, Results: 3, Rows: 2},
		},
		{
			// SELECT f() executed into a cursor, f a function created in strict mode that
			// returns 1e200 as a TINYINT: the statement fails while the cursor is filled,
			// after MariaDB 10.11 sent the metadata.
			name: "cursor whose statement fails after its metadata",
			cmd:  mysql.COM_STMT_EXECUTE,
			response: func(s *stream) {
				s.captured(
					"01",
					"036465660000000a7368705f7265743128290a7368705f7265743128290c3f0004000000010000000000",
					"fff0042332323030334f7574206f662072616e67652076616c756520666f7220636f6c756d6e20277368705f7265743128292720617420726f772030",
				)
			},
			want: Response{Results: 1, Err: &ServerError{Code: 1264, State: "22003",
				Message: "Out of range value for column 'shp_ret1()' at row 0"}},
		},
		{
			name:         "cursor whose statement fails after its metadata, deprecated EOF",
			cmd:          mysql.COM_STMT_EXECUTE,
			deprecateEOF: true,
			response: func(s *stream) {
				s.captured(
					"01",
					"036465660000000a7368705f7265743128290a7368705f7265743128290c3f0004000000010000000000",
					"fff0042332323030334f7574206f662072616e67652076616c756520666f7220636f6c756d6e20277368705f7265743128292720617420726f772030",
				)
			},
			want: Response{Results: 1, Err: &ServerError{Code: 1264, State: "22003",
				Message: "Out of range value for column 'shp_ret1()' at row 0"}},
		},
		{
			name: "procedure with cursors: an empty result set",
			cmd:  mysql.COM_STMT_EXECUTE,
			response: func(s *stream) {
				s.packet([]byte{1}).packet(columnDef("c")).packet(eofPacket(autocommit | more | cursor))
				s.packet(eofPacket(autocommit | more | cursor))
				s.packet(okPacket(autocommit))
			},
			want: Response{Status: autocommit, HasStatus: true, Results: 2},
		},
		{
			name: "fetch from a cursor",
			cmd:  mysql.COM_STMT_FETCH,
			response: func(s *stream) {
				s.packet([]byte{0, 0, 1, 'a'}).packet([]byte{0, 0, 1, 'b'}).packet(eofPacket(autocommit | cursor))
			},
			want: Response{Status: autocommit | cursor, HasStatus: true, Rows: 2},
		},
		{
			name: "prepare with parameters and columns",
			cmd:  mysql.COM_STMT_PREPARE,
			response: func(s *stream) {
				s.packet(prepareOK(7, 2, 1)).packet(columnDef("?")).packet(eofPacket(0))
				s.packet(columnDef("a")).packet(columnDef("b")).packet(eofPacket(0))
			},
			want: Response{StmtID: 7},
		},
		{
			name:         "prepare with deprecated EOF",
			cmd:          mysql.COM_STMT_PREPARE,
			deprecateEOF: true,
			response: func(s *stream) {
				s.packet(prepareOK(9, 1, 2)).packet(columnDef("?")).packet(columnDef("?")).packet(columnDef("a"))
			},
			want: Response{StmtID: 9},
		},
		{
			name: "prepare refused",
			cmd:  mysql.COM_STMT_PREPARE,
			response: func(s *stream) {
				s.packet(errPacket(1064, "syntax"))
			},
			want: Response{Err: &ServerError{Code: 1064, State: "HY000", Message: "syntax"}},
		},
		{
			name: "field list",
			cmd:  mysql.COM_FIELD_LIST,
			response: func(s *stream) {
				s.packet(columnDef("a")).packet(columnDef("b")).packet(eofPacket(autocommit))
			},
			want: Response{Status: autocommit, HasStatus: true, Rows: 2},
		},
		{
			name: "statistics is a bare string",
			cmd:  mysql.COM_STATISTICS,
			response: func(s *stream) {
				s.packet([]byte("Uptime: 5  Threads: 1"))
			},
		},
		{
			name: "ping",
			cmd:  mysql.COM_PING,
			response: func(s *stream) {
				s.packet(okPacket(autocommit))
			},
			want: Response{Status: autocommit, HasStatus: true},
		},
		{
			name: "set option answers with EOF",
			cmd:  mysql.COM_SET_OPTION,
			response: func(s *stream) {
				s.packet(eofPacket(autocommit))
			},
			want: Response{Status: autocommit, HasStatus: true},
		},
		{
			name:     "no response to COM_STMT_CLOSE",
			cmd:      mysql.COM_STMT_CLOSE,
			response: func(s *stream) {},
			trailing: []byte{1, 0, 0, 0, 0x0e},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &stream{seq: 1}
			tt.response(s)
			caps := uint32(baseCaps)
			if tt.deprecateEOF {
				caps |= mysql.CLIENT_DEPRECATE_EOF
			}
			in := append(bytes.Clone(s.b), tt.trailing...)
			x, client, backend := relayOver(in, nil, caps)
			var res Response
			if err := x.ForwardResponse(tt.cmd, &res); err != nil {
				t.Fatalf("ForwardResponse: %v", err)
			}
			if got := client.w.Bytes(); !bytes.Equal(got, s.b) {
				t.Errorf("client got %d bytes, want the %d the backend sent, unchanged", len(got), len(s.b))
			}
			if backend.w.Len() != 0 {
				t.Errorf("relay wrote %d bytes to the backend", backend.w.Len())
			}
			rest := bytes.Clone(x.Backend.rbuf[x.Backend.rpos:x.Backend.rend])
			if unread, _ := io.ReadAll(backend.r); len(unread) > 0 {
				rest = append(rest, unread...)
			}
			if !bytes.Equal(rest, tt.trailing) {
				t.Errorf("relay left %q unread, want %q", rest, tt.trailing)
			}
			res.ok, tt.want.ok = OK{}, OK{}
			res.Schema, tt.want.Schema = nil, nil
			if !equalResponse(res, tt.want) {
				t.Errorf("response = %+v (err %v), want %+v (err %v)", res, res.Err, tt.want, tt.want.Err)
			}
		})
	}
}

func equalResponse(a, b Response) bool {
	if (a.Err == nil) != (b.Err == nil) || (a.Err != nil && *a.Err != *b.Err) {
		return false
	}
	a.Err, b.Err = nil, nil
	return a.Status == b.Status && a.HasStatus == b.HasStatus && a.StmtID == b.StmtID &&
		a.Results == b.Results && a.Rows == b.Rows && a.Cursor == b.Cursor &&
		a.SchemaChanged == b.SchemaChanged
}

// captured appends packets given in hex, as a capture of a server's response shows them.
func (s *stream) captured(packets ...string) *stream {
	for _, h := range packets {
		p, err := hex.DecodeString(h)
		if err != nil {
			panic(err)
		}
		s.packet(p)
	}
	return s
}

func TestForwardLocalInfile(t *testing.T) {
	// Server: LOCAL INFILE request (seq 1), then, after the file, OK (seq 2+chunks+1).
	file := [][]byte{bytes.Repeat([]byte("a,1\n"), 100), bytes.Repeat([]byte("b,2\n"), 50), {}}
	srv := &stream{seq: 1}
	srv.packet(append([]byte{0xfb}, "/tmp/data.csv"...))
	cli := &stream{seq: 2}
	for _, chunk := range file {
		cli.packet(chunk)
	}
	srv.seq = cli.seq
	srv.packet(okPacket(autocommit))
	x, client, backend := relayOver(srv.b, cli.b, baseCaps)
	var res Response
	if err := x.ForwardResponse(mysql.COM_QUERY, &res); err != nil {
		t.Fatalf("ForwardResponse: %v", err)
	}
	if !bytes.Equal(backend.w.Bytes(), cli.b) {
		t.Errorf("backend got %q, want the client's file packets %q", backend.w.Bytes(), cli.b)
	}
	if !bytes.Equal(client.w.Bytes(), srv.b) {
		t.Errorf("client got %q, want %q", client.w.Bytes(), srv.b)
	}
	if !res.HasStatus || res.Status != autocommit || res.Err != nil {
		t.Errorf("response = %+v", res)
	}
}

func TestForwardResponseBackendGone(t *testing.T) {
	s := &stream{seq: 1}
	s.resultSet(false, autocommit, textRow("a"), textRow("b"))
	// starts[i] is where packet i begins: the column count, its definition, the EOF, the
	// two rows and the EOF that ends them.
	var starts []int
	for at := 0; at < len(s.b); at += 4 + int(s.b[at]) | int(s.b[at+1])<<8 | int(s.b[at+2])<<16 {
		starts = append(starts, at)
	}
	if len(starts) != 6 {
		t.Fatalf("%d packets, want 6", len(starts))
	}
	for cut := 1; cut < len(s.b); cut++ {
		x, client, _ := relayOver(s.b[:cut], nil, baseCaps)
		var res Response
		err := x.ForwardResponse(mysql.COM_QUERY, &res)
		if err == nil {
			t.Fatalf("response cut at %d of %d bytes: no error", cut, len(s.b))
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			t.Fatalf("response cut at %d: error %v, want an EOF", cut, err)
		}
		// Cut in a row, or before the first byte of the EOF after them: every packet before
		// it reached the client whole, nothing of it did, and an ERR may take its place.
		i := 0
		for i+1 < len(starts) && starts[i+1] <= cut {
			i++
		}
		resumable := i == 3 || i == 4 || i == 5 && cut-starts[i] <= 4
		if res.Resumable != resumable {
			t.Errorf("cut at %d, in packet %d: resumable %v, want %v", cut, i, res.Resumable, resumable)
		}
		if res.Resumable {
			if err := x.Client.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := client.w.Bytes(); !bytes.Equal(got, s.b[:starts[i]]) {
				t.Errorf("cut at %d: client got %q, want the %d packets before the cut", cut, got, i)
			}
		}
	}
}

func TestForwardAuth(t *testing.T) {
	tests := []struct {
		name    string
		backend [][]byte // the backend's packets in order
		client  [][]byte // the client's replies in order
		wantErr bool
	}{
		{name: "accepted at once", backend: [][]byte{okPacket(autocommit)}},
		{name: "refused", backend: [][]byte{errPacket(1045, "Access denied")}, wantErr: true},
		{
			name:    "switch to ed25519",
			backend: [][]byte{append([]byte("\xfeclient_ed25519\x00"), bytes.Repeat([]byte{1}, 32)...), okPacket(autocommit)},
			client:  [][]byte{bytes.Repeat([]byte{2}, 64)},
		},
		{
			name:    "caching_sha2 fast path: OK follows without a client reply",
			backend: [][]byte{{0x01, 0x03}, okPacket(autocommit)},
		},
		{
			name:    "caching_sha2 full authentication with the public key",
			backend: [][]byte{{0x01, 0x04}, append([]byte{0x01}, "-----BEGIN PUBLIC KEY-----"...), okPacket(autocommit)},
			client:  [][]byte{{0x02}, bytes.Repeat([]byte{9}, 256)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The handshake response went to the backend with sequence id 1; the client's
			// went with 1 too (no TLS).
			srv, cli := &stream{seq: 2}, &stream{seq: 3}
			for i, p := range tt.backend {
				srv.packet(p)
				if i < len(tt.client) {
					cli.seq = srv.seq
					cli.packet(tt.client[i])
					srv.seq = cli.seq
				}
			}
			x, client, backend := relayOver(srv.b, cli.b, baseCaps)
			x.Client.seq, x.Backend.seq = 2, 2
			var res Response
			if err := x.ForwardAuth(&res); err != nil {
				t.Fatalf("ForwardAuth: %v", err)
			}
			if (res.Err != nil) != tt.wantErr {
				t.Errorf("refused = %v, want %v", res.Err, tt.wantErr)
			}
			if !bytes.Equal(client.w.Bytes(), srv.b) {
				t.Errorf("client got %q, want %q", client.w.Bytes(), srv.b)
			}
			if !bytes.Equal(backend.w.Bytes(), cli.b) {
				t.Errorf("backend got %q, want %q", backend.w.Bytes(), cli.b)
			}
		})
	}
}

func TestForwardCommand(t *testing.T) {
	tests := []struct {
		name    string
		payload []byte
		limit   int
		wantErr error
	}{
		{name: "small query", payload: append([]byte{mysql.COM_QUERY}, "SELECT 1"...)},
		{name: "longer than what is held", payload: append([]byte{mysql.COM_QUERY}, bytes.Repeat([]byte("x"), 3<<20)...)},
		{name: "two frames", payload: append([]byte{mysql.COM_QUERY}, bytes.Repeat([]byte("y"), MaxFramePayload+100)...)},
		{name: "exactly one full frame and an empty one", payload: append([]byte{mysql.COM_QUERY}, bytes.Repeat([]byte("z"), MaxFramePayload-1)...)},
		{name: "over the limit in the first frame", payload: append([]byte{mysql.COM_QUERY}, bytes.Repeat([]byte("x"), 5000)...), limit: 4096, wantErr: ErrPacketTooLarge},
		{name: "over the limit in a later frame", payload: append([]byte{mysql.COM_QUERY}, bytes.Repeat([]byte("x"), MaxFramePayload+5000)...), limit: MaxFramePayload + 10, wantErr: ErrPacketTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &stream{}
			s.packet(tt.payload)
			next := []byte{1, 0, 0, 0, mysql.COM_PING}
			cm, bm := newMemConn(append(bytes.Clone(s.b), next...)), newMemConn(nil)
			c, b := NewConn(cm), NewConn(bm)
			c.SetLimit(tt.limit)
			var cmd Command
			err := c.ReadCommand(&cmd)
			if err == nil {
				err = c.ForwardCommand(&cmd, b)
			}
			if err == nil {
				err = b.Flush()
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(bm.w.Bytes(), s.b) {
				t.Errorf("backend got %d bytes, want %d unchanged", bm.w.Len(), len(s.b))
			}
			if err := c.ReadCommand(&cmd); err != nil || cmd.Byte() != mysql.COM_PING {
				t.Errorf("next command: %v %v", err, cmd.Payload)
			}
		})
	}
}

func TestWriteReadPacketRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 1000, MaxFramePayload - 1, MaxFramePayload, MaxFramePayload + 1, 2*MaxFramePayload + 3} {
		payload := bytes.Repeat([]byte{0xab}, n)
		m := newMemConn(nil)
		w := NewConn(m)
		if err := w.WritePacket(payload); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		r := NewConn(newMemConn(m.w.Bytes()))
		got, err := r.ReadPacket()
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if !bytes.Equal(got, payload) {
			t.Fatalf("%d bytes: got %d back", n, len(got))
		}
		if want := uint8((n / MaxFramePayload) + 1); r.seq != want {
			t.Errorf("%d bytes: sequence after read %d, want %d", n, r.seq, want)
		}
	}
}

func TestReadPacketLimit(t *testing.T) {
	s := &stream{}
	s.packet(make([]byte, 2000))
	c := NewConn(newMemConn(s.b))
	c.SetLimit(1000)
	if _, err := c.ReadPacket(); !errors.Is(err, ErrPacketTooLarge) {
		t.Fatalf("err = %v, want ErrPacketTooLarge", err)
	}
}

// failConn takes budget bytes of writes and then fails every write.
type failConn struct {
	memConn
	budget int
}

var errWriteFailed = errors.New("write failed")

func (f *failConn) Write(p []byte) (int, error) {
	if len(p) > f.budget {
		n, _ := f.w.Write(p[:f.budget])
		f.budget = 0
		return n, errWriteFailed
	}
	f.budget -= len(p)
	return f.w.Write(p)
}

func TestConnBuffering(t *testing.T) {
	sizes := []int{0, 1, 5000, readBufferSize - headerSize, readBufferSize, 3*readBufferSize + 7, 70000, 3}
	m := newMemConn(nil)
	w := NewConn(m)
	for i, n := range sizes {
		if err := w.WritePacket(bytes.Repeat([]byte{byte(i + 1)}, n)); err != nil {
			t.Fatal(err)
		}
	}
	if want := uint64(m.w.Len()); w.Written() <= want {
		t.Fatalf("Written() = %d with data still buffered, want more than the %d flushed", w.Written(), want)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	stream := bytes.Clone(m.w.Bytes())
	if w.Written() != uint64(len(stream)) || w.BytesWritten != uint64(len(stream)) {
		t.Fatalf("Written() = %d, BytesWritten = %d, want %d", w.Written(), w.BytesWritten, len(stream))
	}

	// Reads that bring one byte at a time, and reads that bring the end of the stream with
	// the last bytes, give the same packets back.
	for name, in := range map[string]io.Reader{
		"one byte a read": iotest.OneByteReader(bytes.NewReader(stream)),
		"EOF with data":   iotest.DataErrReader(bytes.NewReader(stream)),
	} {
		r := NewConn(&memConn{r: in})
		for i, n := range sizes {
			got, err := r.ReadPacket()
			if err != nil {
				t.Fatalf("%s: packet %d: %v", name, i, err)
			}
			if !bytes.Equal(got, bytes.Repeat([]byte{byte(i + 1)}, n)) {
				t.Fatalf("%s: packet %d: got %d bytes back, want %d", name, i, len(got), n)
			}
		}
		if _, err := r.ReadPacket(); err != io.EOF {
			t.Fatalf("%s: read past the end: %v, want io.EOF", name, err)
		}
		if r.BytesRead != uint64(len(stream)) || r.IOErr() != io.EOF {
			t.Fatalf("%s: BytesRead = %d (want %d), IOErr = %v", name, r.BytesRead, len(stream), r.IOErr())
		}
	}

	// A stream cut inside a packet: the whole packets before the cut still come through.
	r := NewConn(newMemConn(stream[:len(stream)-2]))
	for i := range sizes[:len(sizes)-1] {
		if _, err := r.ReadPacket(); err != nil {
			t.Fatalf("cut stream: packet %d: %v", i, err)
		}
	}
	if _, err := r.ReadPacket(); err != io.ErrUnexpectedEOF {
		t.Fatalf("cut stream: the cut packet: %v, want io.ErrUnexpectedEOF", err)
	}

	// A failed write fails every write and flush after it, and the count says what went out.
	f := &failConn{budget: 100}
	c := NewConn(f)
	if err := c.WritePacket(make([]byte, 2*writeBufferSize)); !errors.Is(err, errWriteFailed) {
		t.Fatalf("write over a failing connection: %v", err)
	}
	if err := c.WritePacket([]byte("x")); !errors.Is(err, errWriteFailed) {
		t.Fatalf("write after the failure: %v", err)
	}
	if err := c.Flush(); !errors.Is(err, errWriteFailed) {
		t.Fatalf("flush after the failure: %v", err)
	}
	if c.BytesWritten != 100 || !errors.Is(c.IOErr(), errWriteFailed) {
		t.Fatalf("BytesWritten = %d (want 100), IOErr = %v", c.BytesWritten, c.IOErr())
	}
}
