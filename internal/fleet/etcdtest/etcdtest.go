// Package etcdtest starts a real etcd server for tests, as a plain process on loopback
// ports below the kernel's ephemeral range, with its data in the test's temporary
// directory, and stops it (by its PID) when the test ends.
package etcdtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Server is an etcd server a test started.
type Server struct {
	Endpoint string
	dir      string
	peer     string
	cmd      *exec.Cmd
	t        testing.TB
}

// Start starts etcd (the etcd binary on PATH, Debian's etcd-server) and waits until it
// answers. It fails the test when etcd is not installed, saying how to install it.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("etcd"); err != nil {
		t.Fatal("etcd is not installed: apt-get install etcd-server (the fleet's tests run a real etcd)")
	}
	s := &Server{dir: t.TempDir(), t: t}
	client, peer := freePort(t), freePort(t)
	for peer == client {
		peer = freePort(t)
	}
	s.Endpoint, s.peer = "127.0.0.1:"+strconv.Itoa(client), "127.0.0.1:"+strconv.Itoa(peer)
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// Restart starts the server again on the same ports and data after Stop.
func (s *Server) Restart() {
	s.t.Helper()
	url, peerURL := "http://"+s.Endpoint, "http://"+s.peer
	s.cmd = exec.Command("etcd", "--name", "default", "--data-dir", filepath.Join(s.dir, "data"),
		"--listen-client-urls", url, "--advertise-client-urls", url,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default="+peerURL, "--log-level", "error")
	log, err := os.Create(filepath.Join(s.dir, "etcd.log"))
	if err != nil {
		s.t.Fatal(err)
	}
	s.cmd.Stdout, s.cmd.Stderr = log, log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("starting etcd: %v", err)
	}
	cli := s.Client()
	defer cli.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cli.Get(ctx, "health")
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(filepath.Join(s.dir, "etcd.log"))
			s.t.Fatalf("etcd at %s did not answer within 20s: %v\n%s", s.Endpoint, err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the server (SIGKILL, as a crash), if it runs.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Client returns a client of the server; the caller closes it.
func (s *Server) Client() *clientv3.Client {
	s.t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint}, DialTimeout: 2 * time.Second,
		Logger: zap.NewNop()})
	if err != nil {
		s.t.Fatal(err)
	}
	return cli
}

// Put sets key to value.
func (s *Server) Put(key, value string) {
	s.t.Helper()
	cli := s.Client()
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, key, value); err != nil {
		s.t.Fatalf("etcd put %s: %v", key, err)
	}
}

// freePort returns a loopback port below the ephemeral range that nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		p := 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err == nil {
			ln.Close()
			return p
		}
	}
	t.Fatal("no free port between 20000 and 32000")
	return 0
}
