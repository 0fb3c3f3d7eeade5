//go:build !linux

package proxy

import (
	"context"
	"net"
)

// clientWatch would notice clients that hang up while their unit waits for admission; it
// needs epoll. Elsewhere such a unit stays until it is admitted or times out, and its
// session ends when the response cannot be written.
type clientWatch struct{}

func newClientWatch() (*clientWatch, error) { return &clientWatch{}, nil }

func (w *clientWatch) start() {}

func (w *clientWatch) close() {}

func (w *clientWatch) watch(net.Conn, context.CancelFunc) uint64 { return 0 }

func (w *clientWatch) forget(uint64) {}
