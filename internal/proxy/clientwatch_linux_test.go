package proxy

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// socketPair returns both ends of a loopback TCP connection.
func socketPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	server, err = ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = client.Close()
		_ = server.Close()
	})
	return client, server
}

func startedWatch(t *testing.T) *clientWatch {
	t.Helper()
	w, err := newClientWatch()
	require.NoError(t, err)
	w.start()
	t.Cleanup(w.close)
	return w
}

func canceled(ctx context.Context, within time.Duration) bool {
	select {
	case <-ctx.Done():
		return true
	case <-time.After(within):
		return false
	}
}

func TestClientWatchCancelsWhenTheClientHangsUp(t *testing.T) {
	w := startedWatch(t)
	client, server := socketPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	token := w.watch(server, cancel)
	require.NotZero(t, token)
	assert.False(t, canceled(ctx, 50*time.Millisecond), "canceled while the client is there")
	require.NoError(t, client.Close())
	assert.True(t, canceled(ctx, 2*time.Second), "not canceled after the client hung up")
	w.mu.Lock()
	assert.Empty(t, w.cancels, "a watch that fired is dropped")
	w.mu.Unlock()
	w.forget(token)
}

func TestClientWatchIgnoresDataAndEndsAtForget(t *testing.T) {
	w := startedWatch(t)
	client, server := socketPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	token := w.watch(server, cancel)
	_, err := client.Write([]byte{1, 0, 0, 0, 14}) // a pipelined COM_PING
	require.NoError(t, err)
	assert.False(t, canceled(ctx, 100*time.Millisecond), "data from the client canceled the wait")
	w.forget(token)
	require.NoError(t, client.Close())
	assert.False(t, canceled(ctx, 100*time.Millisecond), "canceled after forget")
	// What the client sent is still there for the session to read.
	buf := make([]byte, 5)
	_, err = server.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, []byte{1, 0, 0, 0, 14}, buf)
}

func TestClientWatchNoticesAClientGoneBeforeTheWatch(t *testing.T) {
	w := startedWatch(t)
	client, server := socketPair(t)
	require.NoError(t, client.Close())
	_, err := server.Read(make([]byte, 1)) // the FIN has arrived
	require.ErrorIs(t, err, io.EOF)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer w.forget(w.watch(server, cancel))
	assert.True(t, canceled(ctx, 2*time.Second))
}

func TestClientWatchUnderTLSAndWithoutASocket(t *testing.T) {
	w := startedWatch(t)
	client, server := socketPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	token := w.watch(tls.Server(server, &tls.Config{}), cancel)
	require.NotZero(t, token, "the socket under TLS is watched")
	require.NoError(t, client.Close())
	assert.True(t, canceled(ctx, 2*time.Second))
	w.forget(token)

	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	token = w.watch(a, func() { t.Error("canceled a pipe") })
	assert.Zero(t, token)
	w.forget(token)
}

// Of many waiting clients, exactly those that hang up are canceled, and a socket closed by
// the proxy itself while watched (a session killed at the drain timeout) leaves cleanly.
func TestClientWatchManyClients(t *testing.T) {
	w := startedWatch(t)
	const n = 64
	type waiter struct {
		client, server net.Conn
		ctx            context.Context
		token          uint64
	}
	ws := make([]waiter, n)
	for i := range ws {
		c, s := socketPair(t)
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		ws[i] = waiter{client: c, server: s, ctx: ctx, token: w.watch(s, cancel)}
	}
	for i := 0; i < n; i += 2 {
		require.NoError(t, ws[i].client.Close())
	}
	require.NoError(t, ws[1].server.Close())
	for i := 0; i < n; i += 2 {
		assert.True(t, canceled(ws[i].ctx, 2*time.Second), "client %d hung up", i)
	}
	for i := 1; i < n; i += 2 {
		assert.False(t, canceled(ws[i].ctx, 0), "client %d is there", i)
	}
	for i := range ws {
		w.forget(ws[i].token)
	}
	w.mu.Lock()
	assert.Empty(t, w.cancels)
	w.mu.Unlock()
}
