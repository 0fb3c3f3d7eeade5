package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/handover"
	"github.com/gatekeeperdb/gatekeeper/internal/proxy"
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
	"github.com/gatekeeperdb/gatekeeper/internal/sdnotify"
)

// A hand-over replaces the running process with a new one started from the binary on disk,
// with the same arguments, without a client noticing: the new process takes the listening
// sockets, then each client connection as it goes idle (package handover has the exchange,
// package proxy what moves of a session). SIGUSR2 and POST /-/handover start one.

// handoverTimeout bounds each step the old process waits for the new one: to read the
// hello, and to serve once it has the listeners.
const handoverTimeout = 30 * time.Second

// errHandedOver ends run once a new process serves: serve then hands the connections over
// instead of draining them.
var errHandedOver = errors.New("handed over to a new process")

// exitError is an error that ends the process with its own exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// handing is the old process's side of hand-overs: it starts the new process and brings it
// the listeners (begin), then the connections (finish).
type handing struct {
	cfg config.Config
	srv *proxy.Server
	est *estimates
	log *slog.Logger
	// ln and aln are the client and admin listeners (aln nil without admin.listen);
	// serveErr is where the client listener's Serve ends.
	ln       net.Listener
	aln      net.Listener
	serveErr chan error
	// requests carries POST /-/handover's requests to the loop that serves (run), and
	// usr2 the signal.
	requests chan handoverRequest
	usr2     <-chan os.Signal
	// ch and child are the exchange with the process that took over, once one did.
	ch    *handover.Channel
	child *exec.Cmd
	// takingOver is the pid of the process this one is taking connections over from,
	// until that one is done; zero otherwise.
	takingOver atomic.Int64
	// results counts hand-overs by result, and handed and drained the connections they
	// moved or drained (by reason), carried from process to process.
	mu      sync.Mutex
	results map[string]int
	handed  int
	drained map[string]int
}

type handoverRequest struct{ reply chan handoverReply }

type handoverReply struct {
	res admin.HandoverResponse
	err error
}

// request asks the serving loop for a hand-over and waits for its outcome, for POST
// /-/handover.
func (h *handing) request(ctx context.Context) (admin.HandoverResponse, error) {
	req := handoverRequest{reply: make(chan handoverReply, 1)}
	select {
	case h.requests <- req:
	case <-ctx.Done():
		return admin.HandoverResponse{}, ctx.Err()
	case <-time.After(5 * time.Second):
		return admin.HandoverResponse{}, errors.New("this process is handing over already, or stopping")
	}
	select {
	case r := <-req.reply:
		return r.res, r.err
	case <-ctx.Done():
		return admin.HandoverResponse{}, ctx.Err()
	}
}

func (h *handing) count(result string) { h.carry(map[string]int{result: 1}) }

// carry counts hand-overs by result: this process's, or those the process it took over
// from counted.
func (h *handing) carry(results map[string]int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for result, n := range results {
		h.results[result] += n
		h.srv.CountHandover(result, n)
	}
}

// carryConnections counts the connections the process this one took over from moved and
// drained, with those of the hand-overs before it.
func (h *handing) carryConnections(handed int, drained map[string]int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.handed += handed
	if h.drained == nil {
		h.drained = map[string]int{}
	}
	for reason, n := range drained {
		h.drained[reason] += n
	}
	h.srv.CountHandedOver(handed, drained)
}

// begin starts the new process and brings it the listeners. On success the new process
// serves new connections and this one stops accepting them; on failure this one goes on
// as before, and the error says why (admin.ErrHandoverRefused when the new one refused).
func (h *handing) begin() (admin.HandoverResponse, error) {
	if from := h.takingOver.Load(); from != 0 {
		// Its connections would reach this process after it began to hand its own over.
		err := fmt.Errorf("this process is still taking connections over from process %d; retry once that is done", from)
		h.log.Warn("hand-over not started", "err", err)
		return admin.HandoverResponse{}, err
	}
	res, err := h.start()
	if err != nil {
		if errors.Is(err, admin.ErrHandoverRefused) {
			h.count("refused")
		} else {
			h.count("failed")
		}
		h.log.Error("hand-over failed; this process goes on serving", "err", err)
		return res, err
	}
	h.count("completed")
	h.log.Info("hand-over: the new process serves; handing the connections over as each goes idle",
		"new_pid", res.NewPID, "new_version", res.Version, "connections", h.srv.Open())
	return res, nil
}

func (h *handing) start() (admin.HandoverResponse, error) {
	res := admin.HandoverResponse{Status: "handed_over", OldPID: os.Getpid()}
	estimatesFile, cleanup, err := h.saveState()
	if err != nil {
		return res, err
	}
	defer cleanup()
	exe, err := os.Executable()
	if err != nil {
		return res, fmt.Errorf("the binary to start: %w", err)
	}
	ch, theirs, err := handover.Pair()
	if err != nil {
		return res, err
	}
	child := exec.Command(exe, os.Args[1:]...)
	child.Env = append(os.Environ(), handover.EnvFD+"=3")
	child.ExtraFiles = []*os.File{theirs}
	child.Stdin, child.Stdout, child.Stderr = nil, os.Stdout, os.Stderr
	err = child.Start()
	_ = theirs.Close()
	if err != nil {
		_ = ch.Close()
		return res, fmt.Errorf("start %s: %w", exe, err)
	}
	exited := make(chan struct{})
	go func() { // ends when the new process does
		_ = child.Wait()
		close(exited)
	}()
	fail := func(err error) (admin.HandoverResponse, error) {
		_ = ch.Close() // the new process ends when its channel does
		select {
		case <-exited:
		case <-time.After(handoverTimeout):
			_ = child.Process.Kill()
			<-exited
		}
		if code := child.ProcessState.ExitCode(); code == handover.ExitRefused {
			return res, fmt.Errorf("%w (exit status %d): %w", admin.ErrHandoverRefused, code, err)
		}
		return res, fmt.Errorf("%w (the new process exited: %s)", err, child.ProcessState)
	}
	hello := handover.Hello{Format: handover.Format, Version: buildVersion(), PID: os.Getpid(), Mode: h.cfg.Mode,
		EstimatesFile: estimatesFile}
	if err := ch.Send(handover.KindHello, hello); err != nil {
		return fail(err)
	}
	m, err := receive(ch, exited)
	if err != nil {
		return fail(fmt.Errorf("the new process did not answer: %w", err))
	}
	var accepted handover.Accept
	switch m.Kind {
	case handover.KindAccept:
		_ = m.Decode(&accepted)
	case handover.KindRefuse:
		var r handover.Refuse
		_ = m.Decode(&r)
		return fail(errors.New(r.Reason))
	default:
		return fail(fmt.Errorf("unexpected %s message", m.Kind))
	}
	var ready handover.Ready
	files, err := h.passListeners(ch)
	if err == nil {
		ready, err = awaitReady(ch, exited)
	}
	if err != nil {
		h.reattach(files)
		return fail(err)
	}
	handover.CloseFiles(files)
	h.ch, h.child = ch, child
	_, _ = sdnotify.Send("MAINPID=" + strconv.Itoa(ready.PID))
	res.NewPID, res.Version = ready.PID, accepted.Version
	return res, nil
}

// saveState saves the estimates and the adaptive capacity for the new process: to their
// state file, or without one to a temporary file named in the hello.
func (h *handing) saveState() (file string, cleanup func(), err error) {
	if h.est.file != "" {
		h.est.save()
		return "", func() {}, nil
	}
	dir, err := os.MkdirTemp("", "gatekeeper-handover-")
	if err != nil {
		return "", nil, fmt.Errorf("a directory for the learned state: %w", err)
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	file = filepath.Join(dir, "estimates.json")
	if err := saveEstimates(h.est.costs, file); err != nil {
		cleanup()
		return "", nil, err
	}
	if err := saveCapacity(h.srv, capacityFile(file)); err != nil {
		cleanup()
		return "", nil, err
	}
	return file, cleanup, nil
}

// passListeners stops accepting and sends the listening sockets, returning this process's
// duplicates of them.
func (h *handing) passListeners(ch *handover.Channel) ([]*os.File, error) {
	files, next, err := h.srv.Detach()
	if err != nil {
		return nil, err
	}
	<-h.serveErr // Serve has returned ErrDetached
	msg := handover.Listeners{NextID: next}
	if h.aln != nil {
		f, err := handover.Dup(h.aln)
		if err != nil {
			return files, err
		}
		files = append(files, f)
		msg.Admin = true
	}
	if p := h.srv.Routing(); p != nil {
		msg.Versions, msg.VersionMap = encodeVersions(p.Versions())
	}
	return files, ch.Send(handover.KindListeners, msg, files...)
}

// reattach serves the client listener again after a hand-over failed past Detach.
func (h *handing) reattach(files []*os.File) {
	defer handover.CloseFiles(files)
	if len(files) == 0 {
		return
	}
	ln, err := net.FileListener(files[0])
	if err != nil {
		h.log.Error("cannot accept again after the failed hand-over", "err", err)
		return
	}
	h.srv.Attach()
	h.ln = ln
	go func() { h.serveErr <- h.srv.Serve(ln) }() // ends at the drain or the next hand-over
}

// finish hands every connection over as it goes idle, those that cannot move drained,
// for up to shutdown.drain_timeout, then tells the new process it is done.
func (h *handing) finish() {
	defer h.ch.Close()
	ho := &proxy.Handoff{Send: func(rec *proxy.SessionRecord, files []*os.File) error {
		return h.ch.Send(handover.KindSession, rec, files...)
	}}
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.Shutdown.DrainTimeout)
	defer cancel()
	if err := h.srv.HandOver(ctx, ho); err != nil {
		h.log.Warn("hand-over incomplete", "err", err)
	}
	handed, drained := ho.Counts()
	h.mu.Lock()
	done := handover.Done{HandedOver: h.handed + handed, Drained: drained, Handovers: h.results}
	for reason, n := range h.drained {
		done.Drained[reason] += n
	}
	h.mu.Unlock()
	if p := h.srv.Routing(); p != nil {
		done.Versions, done.VersionMap = encodeVersions(p.Versions())
	}
	if err := h.ch.Send(handover.KindDone, done); err != nil {
		h.log.Warn("cannot tell the new process the hand-over is done", "err", err)
	}
	h.log.Info("hand-over done", "handed_over", handed, "drained", drained, "new_pid", h.child.Process.Pid)
}

// receive waits for the next message from the new process, for handoverTimeout at most.
func receive(ch *handover.Channel, exited <-chan struct{}) (*handover.Message, error) {
	type result struct {
		m   *handover.Message
		err error
	}
	got := make(chan result, 1)
	go func() { // ends when a message comes or the channel closes
		m, err := ch.Receive()
		got <- result{m, err}
	}()
	select {
	case r := <-got:
		return r.m, r.err
	case <-exited:
		// What it sent before it exited is still to be read: its end is closed, so the
		// read ends at once.
		select {
		case r := <-got:
			return r.m, r.err
		case <-time.After(time.Second):
			return nil, errors.New("the new process exited")
		}
	case <-time.After(handoverTimeout):
		return nil, fmt.Errorf("no answer within %s", handoverTimeout)
	}
}

// awaitReady waits for the new process to say it serves.
func awaitReady(ch *handover.Channel, exited <-chan struct{}) (handover.Ready, error) {
	var r handover.Ready
	m, err := receive(ch, exited)
	if err != nil {
		return r, err
	}
	defer m.Close()
	if m.Kind != handover.KindReady {
		return r, fmt.Errorf("unexpected %s message", m.Kind)
	}
	return r, m.Decode(&r)
}

// takeover is the new process's side: the channel it was started with and what the old
// process said first.
type takeover struct {
	ch    *handover.Channel
	hello handover.Hello
	log   *slog.Logger
}

// inherit returns the hand-over this process was started for, nil when it was started
// otherwise. A hand-over from a process whose state this one cannot read is refused: the
// error ends the process with handover.ExitRefused.
func inherit(mode string, log *slog.Logger) (*takeover, error) {
	ch, err := handover.Inherited()
	if ch == nil || err != nil {
		return nil, err
	}
	m, err := ch.Receive()
	if err != nil {
		_ = ch.Close()
		return nil, fmt.Errorf("hand-over: %w", err)
	}
	t := &takeover{ch: ch, log: log}
	if m.Kind != handover.KindHello || m.Decode(&t.hello) != nil {
		_ = ch.Close()
		return nil, fmt.Errorf("hand-over: expected a hello, got %s", m.Kind)
	}
	reason := ""
	switch {
	case !handover.Compatible(t.hello.Format):
		reason = fmt.Sprintf("the running process (version %s) hands over state of format %s; this binary (version %s) reads format %s: stop it and start this one instead",
			t.hello.Version, t.hello.Format, buildVersion(), handover.Format)
	case t.hello.Mode != mode:
		reason = fmt.Sprintf("the running process serves mode %s and the configuration now says mode %s: its sessions cannot move; restart to change the mode",
			t.hello.Mode, mode)
	}
	if reason != "" {
		_ = ch.Send(handover.KindRefuse, handover.Refuse{Reason: reason})
		_ = ch.Close()
		log.Error("hand-over refused; the running process goes on serving", "reason", reason)
		return nil, &exitError{code: handover.ExitRefused, err: errors.New("hand-over refused: " + reason)}
	}
	log.Info("taking over from the running process", "pid", t.hello.PID, "version", t.hello.Version)
	return t, nil
}

// estimatesFile is where the old process saved the estimates for this one, when it has no
// state file of its own.
func (t *takeover) estimatesFile() string {
	if t == nil {
		return ""
	}
	return t.hello.EstimatesFile
}

// listeners accepts the hand-over and returns the listening sockets the old process
// passes: the client's, and the admin's (nil when it has none).
func (t *takeover) listeners(srv *proxy.Server) (ln, aln net.Listener, err error) {
	if err := t.ch.Send(handover.KindAccept, handover.Accept{Version: buildVersion()}); err != nil {
		return nil, nil, err
	}
	m, err := t.ch.Receive()
	if err != nil {
		return nil, nil, fmt.Errorf("hand-over: %w", err)
	}
	defer m.Close()
	var msg handover.Listeners
	if m.Kind != handover.KindListeners || m.Decode(&msg) != nil || len(m.Files) < 1 || msg.Admin && len(m.Files) < 2 {
		return nil, nil, fmt.Errorf("hand-over: expected the listeners, got %s with %d sockets", m.Kind, len(m.Files))
	}
	if ln, err = net.FileListener(m.Files[0]); err != nil {
		return nil, nil, fmt.Errorf("hand-over: %w", err)
	}
	if msg.Admin {
		if aln, err = net.FileListener(m.Files[1]); err != nil {
			_ = ln.Close()
			return nil, nil, fmt.Errorf("hand-over: %w", err)
		}
	}
	srv.SetNextID(msg.NextID)
	if p := srv.Routing(); p != nil {
		p.HoldStrong()
		if v, ok := decodeVersions(msg.Versions, msg.VersionMap); ok {
			_ = p.MergeVersions(*v) // Done's map covers it
		}
	}
	return ln, aln, nil
}

// serve tells the old process this one serves, then adopts the connections it hands over
// until it is done.
func (t *takeover) serve(srv *proxy.Server, h *handing) {
	_, _ = sdnotify.Send("MAINPID=" + strconv.Itoa(os.Getpid()))
	if err := t.ch.Send(handover.KindReady, handover.Ready{PID: os.Getpid()}); err != nil {
		t.log.Error("cannot tell the old process this one serves", "err", err)
	}
	h.takingOver.Store(int64(t.hello.PID))
	go t.adopt(srv, h) // ends when the old process is done
}

func (t *takeover) adopt(srv *proxy.Server, h *handing) {
	defer h.takingOver.Store(0)
	defer t.ch.Close()
	policy := srv.Routing()
	// Each connection is taken over in a goroutine of its own: a client whose command
	// waits for its connection to move waits for that one alone.
	var adopting sync.WaitGroup
	defer adopting.Wait()
	for {
		m, err := t.ch.Receive()
		if err != nil {
			t.log.Warn("the old process ended the hand-over without finishing it", "err", err)
			adopting.Wait()
			if policy != nil {
				policy.ReleaseStrong(nil)
			}
			return
		}
		switch m.Kind {
		case handover.KindSession:
			adopting.Go(func() {
				var rec proxy.SessionRecord
				if err := m.Decode(&rec); err != nil {
					t.log.Warn("cannot take a connection over", "err", err)
					m.Close()
					return
				}
				if err := srv.Adopt(&rec, m.Files); err != nil {
					t.log.Warn("cannot take a connection over", "conn", rec.ID, "err", err)
				}
			})
		case handover.KindDone:
			adopting.Wait()
			var d handover.Done
			_ = m.Decode(&d)
			h.carryConnections(d.HandedOver, d.Drained)
			h.carry(d.Handovers)
			if policy != nil {
				v, _ := decodeVersions(d.Versions, d.VersionMap)
				policy.ReleaseStrong(v)
			}
			t.log.Info("took over from the old process", "pid", t.hello.PID, "handed_over", d.HandedOver, "drained", d.Drained)
			return
		default:
			m.Close()
		}
	}
}

// encodeVersions returns the version map as a hand-over message carries it: every
// position recorded, which any process of the format reads, and the map table by table.
func encodeVersions(v replicas.VersionsRecord) (all, byTable json.RawMessage) {
	all, _ = json.Marshal(v.All)
	byTable, _ = json.Marshal(v)
	return all, byTable
}

// decodeVersions reads the version map a hand-over message carries: table by table, or
// from a process that sends only every position recorded, that as the floor of every read.
func decodeVersions(all, byTable json.RawMessage) (*replicas.VersionsRecord, bool) {
	var v replicas.VersionsRecord
	if len(byTable) > 0 && json.Unmarshal(byTable, &v) == nil {
		return &v, true
	}
	if len(all) == 0 || json.Unmarshal(all, &v.All) != nil {
		return nil, false
	}
	v.Floor = v.All
	return &v, true
}
