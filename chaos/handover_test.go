package chaos

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"golang.org/x/sys/unix"

	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/procstat"
)

// The load and the hand-overs of TestHandover.
const (
	// handoverClients each hold one connection to the proxy for the whole check, so that a
	// disconnect cannot hide behind database/sql's retries; the first handoverStateClients
	// of them also keep session state.
	handoverClients      = 500
	handoverStateClients = 30
	// connectWorkers log the clients in a few at a time, well inside client.max_handshakes
	// and max_handshakes_per_client.
	connectWorkers = 8
	// thinkTime is a client's mean pause before each statement: 500 clients send about
	// 6,000 statements a second, which two cores serve at a median under 1 ms, so that the
	// latencies measured are the hand-overs' and not a saturated machine's.
	thinkTime = 100 * time.Millisecond
	// transactionThink is the mean pause between the statements of a transaction: short,
	// since in pooled mode an open transaction holds a backend connection and the
	// transactions open at once must stay well inside pools.max_open (64), yet long enough
	// that with 500 clients some are always open when a hand-over begins.
	transactionThink = 10 * time.Millisecond
	// handoverStatementBound fails a statement that takes longer: a hang shows as an error.
	handoverStatementBound = 15 * time.Second
	// handoverDrain is shutdown.drain_timeout: the old process exits at the latest this
	// long after the hand-over, closing whatever it still holds.
	handoverDrain = 10 * time.Second
	// handoverAnswerBound bounds the trigger's answer: the new process serving.
	handoverAnswerBound = 30 * time.Second
	// admissionCapacity is a fixed admission.capacity the load never fills.
	admissionCapacity = "10s"
	// settleBound, settleQuiet and settleWithin: the first hand-over waits, at most
	// settleWithin, until no statement of the load took more than settleBound for
	// settleQuiet, so that the start of the load (500 clients' first statements at once,
	// the proxy and the server warming up) is not counted as the hand-over's doing.
	settleBound  = 500 * time.Millisecond
	settleQuiet  = 2 * time.Second
	settleWithin = 30 * time.Second
	// handoverGap is how long the load runs between two hand-overs and after the last:
	// the latencies outside the hand-overs come from there.
	handoverGap = 3 * time.Second
	// handoverMargin widens each hand-over's window (from the trigger to the old process's
	// exit) on both sides.
	handoverMargin = 500 * time.Millisecond
	// olderVersion is the version string of the build of an older commit that reads the
	// same state: olderCommit, the first with the suite's hand-over check.
	olderVersion = "chaos-older"
	olderCommit  = "101515b"
	// refusedExitStatus is how a new process that refuses the hand-over exits.
	refusedExitStatus = 3
)

// The metrics of the hand-over.
const (
	handoversMetric     = "gatekeeper_handovers_total"
	handoverConnsMetric = "gatekeeper_handover_connections_total"
)

// TestHandover replaces the proxy by a new process five times under the load of 500
// clients, and once tries a build that refuses, and checks that no client notices: no
// disconnect, no error, no acknowledged write lost or applied twice, the same connection
// id and session state before and after. Connections that cannot move (TLS, and in pooled
// mode sessions pinned to their backend connection) are drained and counted.
func TestHandover(t *testing.T) {
	bins := buildHandoverBinaries(t)
	cert := newSelfSigned(t)
	mon := openMonitor(t)
	other := env.Database + "_handover"
	for _, q := range []string{
		// The prepared statements of the stateful clients read chaos_where: in the other
		// schema, where they are prepared, it says so; a statement prepared again in the
		// wrong schema would read 'home'.
		"CREATE DATABASE IF NOT EXISTS " + other,
		"DROP TABLE IF EXISTS " + other + ".chaos_where",
		"CREATE TABLE " + other + ".chaos_where (name VARCHAR(16))",
		"INSERT INTO " + other + ".chaos_where VALUES ('other')",
		"DROP TABLE IF EXISTS chaos_where",
		"CREATE TABLE chaos_where (name VARCHAR(16))",
		"INSERT INTO chaos_where VALUES ('home')",
	} {
		if _, err := mon.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	adoptOrphans(t)
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) { handoverUnderLoad(t, mode, bins, cert, other) })
	}
}

func handoverUnderLoad(t *testing.T, mode string, bins handoverBinaries, cert selfSigned, other string) {
	check := fmt.Sprintf("hand-over under load (%s)", mode)
	dir := t.TempDir()
	// path is the file the proxy runs and a hand-over runs again: a deployment renames a
	// new build over it.
	path := filepath.Join(dir, "gatekeeper")
	install(t, bins.base, path)
	refusing, refusedStatus := refusingWrapper(t, dir, bins.refusing)

	mon := openMonitor(t)
	table := env.Database + ".chaos_handover_" + mode
	for _, q := range []string{
		"DROP TABLE IF EXISTS " + table,
		// id is not unique: a write applied twice shows as two rows.
		"CREATE TABLE " + table + " (seq BIGINT AUTO_INCREMENT PRIMARY KEY, id BIGINT NOT NULL, client INT NOT NULL, KEY (id))",
	} {
		if _, err := mon.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	wantState := directStateAnswers(t, other)

	g := startGatekeeperFrom(t, path, mode, map[string]string{
		"shutdown.drain_timeout": handoverDrain.String(),
		"tls.cert_file":          cert.certFile,
		"tls.key_file":           cert.keyFile,
		// Admission measures every unit (and hands its estimates over) but holds none
		// back, so that the pauses measured are the hand-over's own: with the adaptive
		// capacity they include what admission queues (bench/results/handover has both).
		"admission.capacity": admissionCapacity,
	})
	run := followProxy(t, g)
	baseVersion, err := run.version()
	if err != nil {
		t.Fatalf("the proxy's version (gatekeeper_build_info): %v", err)
	}

	load := connectLoad(t, g.Addr, table, other)
	stateAsPrimary := 0
	for _, c := range load.clients {
		if c.state == nil {
			continue
		}
		if want := wantState[c.state.variant]; slices.Equal(c.state.want, want) {
			stateAsPrimary++
		} else {
			t.Errorf("client %d, before any hand-over: the session state answers %q through the proxy, %q on the primary",
				c.n, c.state.want, want)
		}
	}

	// Connections a hand-over cannot move: a TLS client, and in pooled mode sessions
	// pinned to their backend connection (a temporary table, a lock). In passthrough the
	// pinned sessions keep their backend connection and move with it.
	lock := "chaos_handover_" + mode
	tlsClient := holdConn(t, g.Addr, "tls="+cert.tlsName, "the TLS client")
	tempClient := holdConn(t, g.Addr, "", "the session with a temporary table",
		"CREATE TEMPORARY TABLE chaos_handover_tmp (id INT)", "INSERT INTO chaos_handover_tmp VALUES (1)")
	lockClient := holdConn(t, g.Addr, "", "the session holding a lock", "SELECT GET_LOCK('"+lock+"', 5)")
	drainable := []*heldConn{tlsClient}
	wantDrained := map[string]int{"tls": 1}
	wantHandedOver := handoverClients
	if mode == config.ModePooled {
		drainable = append(drainable, tempClient, lockClient)
		wantDrained["temporary_table"], wantDrained["get_lock"] = 1, 1
	} else {
		wantHandedOver += 2
	}

	load.start()
	defer load.halt()
	settleTook, settled := waitUntil(settleWithin, func() bool {
		return time.Since(load.epoch) > settleQuiet && time.Since(time.Unix(0, load.lastSlow.Load())) > settleQuiet
	})
	settledText := "after " + secs(settleTook)
	if !settled {
		settledText = fmt.Sprintf("NOT within %s (statements over %s went on)", secs(settleWithin), ms(settleBound))
	}

	type step struct {
		how, bin, version string
		refused           bool
	}
	// Four hand-overs to the binary the process runs, one to a build with another version
	// (an older commit that reads the same state), and between them one to a build that
	// refuses; SIGUSR2 triggers one of them, the API the others.
	steps := []step{
		{how: "POST", bin: bins.base, version: baseVersion},
		{how: "SIGUSR2", bin: bins.base, version: baseVersion},
		{how: "POST", bin: refusing, refused: true},
		{how: "POST", bin: bins.base, version: baseVersion},
		{how: "POST", bin: bins.older, version: olderVersion},
		{how: "POST", bin: bins.older, version: olderVersion},
	}
	var (
		done               []handoverResult
		windows            []window
		refusal            refusalResult
		firstHandedOver    int
		firstDrained       map[string]int
		drainedErrs        []string
		newTLSErr          error
		installed          = bins.base
		completed, refused int
	)
	for _, s := range steps {
		if s.bin != installed {
			install(t, s.bin, path)
			installed = s.bin
		}
		if s.refused {
			refusal = run.refuse(refusedStatus)
			refused++
			windows = append(windows, window{name: "refused", from: refusal.start.Sub(load.epoch) - handoverMargin,
				to: refusal.answered.Sub(load.epoch) + handoverMargin})
			install(t, bins.base, path) // what the next hand-over runs
			installed = bins.base
		} else {
			h := run.handOver(s.how, s.version)
			completed++
			done = append(done, h)
			windows = append(windows, window{name: fmt.Sprint(completed), from: h.start.Sub(load.epoch) - handoverMargin,
				to: h.exited.Sub(load.epoch) + handoverMargin})
			if completed == 1 {
				firstHandedOver, firstDrained = run.connectionCounts()
				for _, c := range drainable {
					if _, err := c.query("SELECT 1"); !brokenConn(err) {
						drainedErrs = append(drainedErrs, fmt.Sprintf("%s: %s", c.name, errText(err)))
						t.Errorf("%s: the statement after the hand-over answered %v, want a broken connection (drained)", c.name, err)
					}
				}
				newTLSErr = selectOneWith(g.Addr, "tls="+cert.tlsName)
				if newTLSErr != nil {
					t.Errorf("a new TLS client after the hand-over: %v", newTLSErr)
				}
			}
		}
		run.checkHandovers(completed, refused)
		time.Sleep(handoverGap) // the load runs undisturbed until the next one
	}
	load.halt()
	sum := load.summary()

	led := compareLedger(t, mon, table, sum)

	pinnedText := checkPinned(t, mode, mon, lock, tempClient, lockClient)

	inWindow, outside := latencies(sum.samples, windows, settleTook)
	var windowText []string
	for i, w := range windows {
		windowText = append(windowText, w.name+": "+ms(inWindow[i]))
	}
	var took, exited durations
	var versions, statuses []string
	for _, h := range done {
		took = append(took, h.serving.Sub(h.start))
		exited = append(exited, h.exited.Sub(h.start))
		versions = append(versions, h.version)
		statuses = append(statuses, strconv.Itoa(h.status))
	}
	report(check, "%d clients, %d statements over %d hand-overs and 1 refused, the first once the load settled %s; %d disconnects, %d errors (%s), %d wrong answers (%s); "+
		"%d writes acknowledged, %d lost, %d duplicated, %d not written by the load, %d of unknown outcome (%d applied); "+
		"longest statement around each hand-over %s, median outside %s (longest %s); "+
		"trigger to the new process serving: median %s, max %s; to the old one's exit: max %s, exit statuses %s",
		len(load.clients), len(sum.samples), len(done), settledText, sum.disconnects, sum.errors, countsText(sum.errs), sum.wrong, orNone(sum.firstWrong),
		len(sum.acked), led.lost, led.dup, led.phantom, len(sum.unknown), led.unknownApplied,
		strings.Join(windowText, ", "), ms(outside.median()), ms(outside.max()),
		ms(took.median()), ms(took.max()), ms(exited.max()), strings.Join(statuses, " "))
	drainedNext := "a broken connection"
	if len(drainedErrs) > 0 {
		drainedNext = strings.Join(drainedErrs, "; ")
	}
	report(fmt.Sprintf("hand-over: session state, drain, refusal (%s)", mode), "session state (sql_mode, time_zone, schema, 2 prepared statements) of %d clients: "+
		"as on the primary %d, the same after the hand-overs %d; versions %s (%s built from %s); at the first hand-over %d connections handed over, "+
		"drained %s (next statement: %s; a new TLS client: %s); pinned sessions %s; "+
		"refused: HTTP %d (%s), the refusing build exited with status %s, pid %d kept serving: %v",
		sum.stateClients, stateAsPrimary, sum.stateKept, strings.Join(versions, ", "), olderVersion, bins.olderFrom, firstHandedOver,
		mapText(firstDrained), drainedNext, errText(newTLSErr), pinnedText,
		refusal.code, refusal.message, refusal.status, refusal.pid, refusal.kept)

	if sum.disconnects > 0 {
		t.Errorf("%d clients lost their connection or got another one (first: %s)", sum.disconnects, sum.firstDisconnect)
	}
	if sum.errors > 0 {
		t.Errorf("%d statements failed: %s", sum.errors, countsText(sum.errs))
	}
	if sum.wrong > 0 {
		t.Errorf("%d wrong answers, the first: %s", sum.wrong, sum.firstWrong)
	}
	if len(sum.acked) == 0 {
		t.Error("no write was acknowledged")
	}
	if led.lost > 0 || led.dup > 0 || led.phantom > 0 {
		t.Errorf("the table against the ledger: %d acknowledged ids missing, %d ids twice, %d ids no client wrote",
			led.lost, led.dup, led.phantom)
	}
	if sum.stateKept != sum.stateClients {
		t.Errorf("%d of %d clients kept their session state through the hand-overs (first difference: %s)",
			sum.stateKept, sum.stateClients, sum.firstStateLoss)
	}
	if firstHandedOver != wantHandedOver || !maps.Equal(firstDrained, wantDrained) {
		t.Errorf("the first hand-over counted %d connections handed over and drained %v; want %d and %v",
			firstHandedOver, firstDrained, wantHandedOver, wantDrained)
	}
}

// ledgerDiff is the ledger against the table: acknowledged ids missing (lost), ids in the
// table more than once (dup), ids no write of the load explains (phantom), and ids whose
// write failed, its outcome unknown, that are there.
type ledgerDiff struct {
	lost, dup, phantom, unknownApplied int
}

// compareLedger reads the table on the primary and compares it with the load's ledger.
func compareLedger(t *testing.T, mon *primaryMonitor, table string, sum loadSummary) ledgerDiff {
	t.Helper()
	counts := mon.idCounts(t, table)
	var d ledgerDiff
	for id := range sum.acked {
		if counts[id] == 0 {
			d.lost++
		}
	}
	for id, n := range counts {
		switch {
		case n > 1:
			d.dup++
		case sum.unknown[id]:
			d.unknownApplied++
		case !sum.acked[id]:
			d.phantom++
		}
	}
	return d
}

// checkPinned checks the pinned sessions after the hand-overs and says what became of
// them. In passthrough they moved with their backend connection: their temporary table
// and lock are still there, on the same connection. In pooled mode they were drained: the
// proxy closed their backend connections, and the lock went with them.
func checkPinned(t *testing.T, mode string, mon *primaryMonitor, lock string, tempClient, lockClient *heldConn) string {
	t.Helper()
	if mode == config.ModePooled {
		var free string
		if _, ok := waitUntil(5*time.Second, func() bool {
			return mon.db.QueryRow("SELECT IS_FREE_LOCK('"+lock+"')").Scan(&free) == nil && free == "1"
		}); !ok {
			t.Errorf("the drained session's lock %s is still held (IS_FREE_LOCK %q)", lock, free)
			return "drained, their lock still held"
		}
		return "drained"
	}
	what := "kept (temporary table, lock, connection id)"
	for _, c := range []struct {
		h         *heldConn
		q, answer string
	}{
		{tempClient, "SELECT COUNT(*) FROM chaos_handover_tmp", "1"},
		{lockClient, "SELECT IS_USED_LOCK('" + lock + "') = CONNECTION_ID()", "1"},
		{tempClient, "SELECT CONNECTION_ID()", strconv.FormatInt(tempClient.connID, 10)},
		{lockClient, "SELECT CONNECTION_ID()", strconv.FormatInt(lockClient.connID, 10)},
	} {
		if got, err := c.h.query(c.q); err != nil || got != c.answer {
			what = "LOST"
			t.Errorf("%s after the hand-overs: %s answered %q, %v; want %q", c.h.name, c.q, got, err, c.answer)
		}
	}
	return what
}

// handoverBinaries are the builds a check hands over to: the binary under test, the same
// code with another version string, and a build whose hand-over format differs.
type handoverBinaries struct {
	base, older, refusing string
	// olderFrom says what the older build was built from.
	olderFrom string
}

// buildHandoverBinaries builds the other two from this checkout.
func buildHandoverBinaries(t *testing.T) handoverBinaries {
	t.Helper()
	dir := t.TempDir()
	b := handoverBinaries{
		base:     env.Gatekeeper,
		older:    filepath.Join(dir, "gatekeeper-older"),
		refusing: filepath.Join(dir, "gatekeeper-refusing"),
	}
	// The older build is of an older commit when the checkout has its history; otherwise
	// of this one, with another version string.
	olderSrc := repoRoot()
	if src, ok := checkoutOf(t, olderCommit, filepath.Join(dir, "older-src")); ok {
		olderSrc, b.olderFrom = src, "commit "+olderCommit
	} else {
		b.olderFrom = "this checkout (commit " + olderCommit + " is not in its history)"
	}
	for _, build := range []struct{ src, out, ldflags string }{
		{olderSrc, b.older, "-s -w -X main.version=" + olderVersion},
		{repoRoot(), b.refusing, "-s -w -X main.version=chaos-refusing -X github.com/gatekeeperdb/gatekeeper/internal/handover.Format=999"},
	} {
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", build.ldflags, "-o", build.out, "./cmd/gatekeeper")
		cmd.Dir = build.src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build -ldflags %q in %s: %v\n%s", build.ldflags, build.src, err, out)
		}
	}
	return b
}

// checkoutOf writes the tree of commit into dir, when the checkout has it.
func checkoutOf(t *testing.T, commit, dir string) (string, bool) {
	t.Helper()
	root := repoRoot()
	if exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").Run() != nil {
		return "", false
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("sh", "-c", "git -C \"$0\" archive \"$1\" | tar -x -C \"$2\"", root, commit, dir)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, out)
	}
	return dir, true
}

// install puts a copy of src at dst in one rename, as a deployment replaces a binary: a
// process running the file there keeps its own, and the next one started from dst runs the
// copy.
func install(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	tmp := dst + ".new"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

// refusingWrapper writes a script that runs the refusing build in its place and writes
// down its exit status, which the old process, its parent, would otherwise keep to itself.
// The script passes on its arguments, environment and descriptors (the hand-over's socket
// among them).
func refusingWrapper(t *testing.T, dir, bin string) (script, status string) {
	t.Helper()
	script, status = filepath.Join(dir, "gatekeeper-refusing.sh"), filepath.Join(dir, "refused.status")
	body := fmt.Sprintf("#!/bin/sh\n'%s' \"$@\"\ncode=$?\necho $code > '%s'\nexit $code\n", bin, status)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, status
}

// adoptOrphans makes this process the subreaper of its descendants while the test runs: a
// proxy process whose parent (the process it took over from) has exited becomes this
// process's child, so that its exit status can be read, not only its disappearance.
func adoptOrphans(t *testing.T) {
	t.Helper()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", err)
	}
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
}

// selfSigned is a certificate for 127.0.0.1 the proxy serves TLS with, and the name of the
// go-sql-driver TLS configuration that trusts it.
type selfSigned struct {
	certFile, keyFile, tlsName string
}

func newSelfSigned(t *testing.T) selfSigned {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "gatekeeper chaos"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := selfSigned{certFile: filepath.Join(dir, "cert.pem"), keyFile: filepath.Join(dir, "key.pem"), tlsName: "chaos-handover"}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(s.certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	if err := mysql.RegisterTLSConfig(s.tlsName, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mysql.DeregisterTLSConfig(s.tlsName) })
	return s
}

// proxyRun follows the proxy's processes through hand-overs: the one serving now and the
// notices (sd_notify) they send.
type proxyRun struct {
	t       *testing.T
	g       *gatekeeper
	notices *notices
	// live is the process serving now.
	live int
}

// followProxy starts following g's processes; whichever of them still run when the test
// ends are killed.
func followProxy(t *testing.T, g *gatekeeper) *proxyRun {
	t.Helper()
	r := &proxyRun{t: t, g: g, live: g.PID(), notices: listenNotices(t, g.notify)}
	mark := []byte("NOTIFY_SOCKET=" + g.notify.LocalAddr().String() + "\x00")
	t.Cleanup(func() { killProxies(mark, g.PID()) })
	return r
}

// handoverResult is what one hand-over took.
type handoverResult struct {
	how            string
	oldPID, newPID int
	// version is what the new process reports.
	version string
	// start is the trigger; serving the new process's answer; exited the old one's exit.
	start, serving, exited time.Time
	// status is the old process's exit status.
	status int
}

// handoverPath is the admin API's trigger of a hand-over, beside /-/reload.
const handoverPath = "/-/handover"

// handoverAnswer is the body of the trigger's answer.
type handoverAnswer struct {
	OldPID  int    `json:"old_pid"`
	NewPID  int    `json:"new_pid"`
	Version string `json:"version"`
	Error   string `json:"error"`
}

// handoverClient bounds the trigger's wait for the new process.
var handoverClient = &http.Client{Timeout: handoverAnswerBound}

// postHandover asks the serving process to hand over, and returns the HTTP status and
// the answer.
func (g *gatekeeper) postHandover() (int, handoverAnswer, error) {
	var a handoverAnswer
	resp, err := handoverClient.Post("http://"+g.AdminAddr+handoverPath, "application/json", nil)
	if err != nil {
		return 0, a, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, a, err
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return resp.StatusCode, a, fmt.Errorf("the answer %q: %w", body, err)
	}
	return resp.StatusCode, a, nil
}

// handOver triggers a hand-over by how (POST or SIGUSR2), and waits until the new process
// serves, has said so, and the old one has exited with status 0. The new process must
// report version.
func (r *proxyRun) handOver(how, version string) handoverResult {
	t := r.t
	t.Helper()
	h := handoverResult{how: how, oldPID: r.live, start: time.Now()}
	switch how {
	case "POST":
		code, a, err := r.g.postHandover()
		if err != nil || code != http.StatusOK {
			t.Fatalf("POST %s to pid %d: HTTP %d %+v, %v", handoverPath, h.oldPID, code, a, err)
		}
		h.serving, h.newPID, h.version = time.Now(), a.NewPID, a.Version
		if a.OldPID != h.oldPID {
			t.Errorf("POST %s answered old_pid %d; the serving process is %d", handoverPath, a.OldPID, h.oldPID)
		}
	case "SIGUSR2":
		if err := syscall.Kill(h.oldPID, syscall.SIGUSR2); err != nil {
			t.Fatalf("SIGUSR2 to %d: %v", h.oldPID, err)
		}
		// Without an answer to read, the new process is the one the old names to systemd.
		var n notice
		waitFor(t, handoverAnswerBound, fmt.Sprintf("MAINPID= from pid %d after SIGUSR2", h.oldPID), func() bool {
			var ok bool
			n, ok = r.notices.find(h.start, h.oldPID, "MAINPID=")
			return ok
		})
		h.serving = n.at
		h.newPID, _ = strconv.Atoi(strings.TrimPrefix(n.line, "MAINPID="))
	}
	if h.newPID <= 0 || h.newPID == h.oldPID {
		t.Fatalf("hand-over by %s from pid %d: the new process is pid %d", how, h.oldPID, h.newPID)
	}
	mainPID := fmt.Sprintf("MAINPID=%d", h.newPID)
	waitFor(t, 5*time.Second, mainPID+" from the old process", func() bool {
		n, ok := r.notices.find(h.start, h.oldPID, "MAINPID=")
		return ok && n.line == mainPID
	})
	waitFor(t, 5*time.Second, "READY=1 from the new process", func() bool {
		_, ok := r.notices.find(h.start, h.newPID, "READY=1")
		return ok
	})
	status, err := r.waitExit(h.oldPID, handoverDrain+10*time.Second)
	if err != nil {
		t.Fatalf("after the hand-over to %d: %v", h.newPID, err)
	}
	h.exited, h.status = time.Now(), status
	r.live = h.newPID
	if status != 0 {
		t.Errorf("the old process %d exited with status %d, want 0", h.oldPID, status)
	}
	if !procstat.Running(h.newPID) {
		t.Fatalf("the new process %d does not run", h.newPID)
	}
	got, err := r.version()
	if h.version == "" {
		h.version = got
	}
	if err != nil || got != version || h.version != version {
		t.Errorf("the new process reports version %q (gatekeeper_build_info %q, %v), want %q", h.version, got, err, version)
	}
	return h
}

// refusalResult is what a hand-over to a build that refuses did.
type refusalResult struct {
	// code and message are the HTTP status and the error of the answer.
	code    int
	message string
	// status is the refusing build's exit status, as its wrapper wrote it down.
	status string
	// pid is the serving process; kept says that it still serves.
	pid  int
	kept bool
	// start is the trigger, answered the answer.
	start, answered time.Time
}

// refuse triggers a hand-over to the build at the binary's path, which refuses, and
// checks that the process keeps serving.
func (r *proxyRun) refuse(statusFile string) refusalResult {
	t := r.t
	t.Helper()
	rf := refusalResult{pid: r.live, start: time.Now()}
	code, a, err := r.g.postHandover()
	rf.answered, rf.code, rf.message = time.Now(), code, a.Error
	if err != nil || code != http.StatusConflict || a.Error == "" {
		t.Errorf("POST %s to a build that refuses: HTTP %d %+v, %v; want 409 with an error", handoverPath, code, a, err)
	}
	_, ok := waitUntil(10*time.Second, func() bool {
		b, err := os.ReadFile(statusFile)
		rf.status = strings.TrimSpace(string(b))
		return err == nil && rf.status != ""
	})
	if !ok {
		rf.status = "unknown"
		t.Errorf("the refusing build never ended (no exit status in %s)", statusFile)
	} else if rf.status != strconv.Itoa(refusedExitStatus) {
		t.Errorf("the refusing build exited with status %s, want %d", rf.status, refusedExitStatus)
	}
	if n, ok := r.notices.find(rf.start, 0, "MAINPID="); ok {
		t.Errorf("pid %d sent %s although the hand-over was refused", n.pid, n.line)
	}
	err = selectOneVia("tcp", r.g.Addr)
	rf.kept = procstat.Running(rf.pid) && err == nil
	if !rf.kept {
		t.Errorf("after the refusal: pid %d running %v, a new client: %v", rf.pid, procstat.Running(rf.pid), err)
	}
	return rf
}

// checkHandovers checks the serving process's count of hand-overs, its own and those it
// carried over: completed and refused as given, none failed.
func (r *proxyRun) checkHandovers(completed, refused int) {
	r.t.Helper()
	want := map[string]int{"completed": completed, "refused": refused, "failed": 0}
	got := map[string]int{}
	_, ok := waitUntil(5*time.Second, func() bool {
		m, err := r.g.metrics()
		if err != nil {
			return false
		}
		for result := range want {
			got[result] = int(sumSeries(m, handoversMetric, map[string]string{"result": result}))
		}
		return maps.Equal(got, want)
	})
	if !ok {
		r.t.Errorf("pid %d counts %s %v, want %v", r.live, handoversMetric, got, want)
	}
}

// connectionCounts reads the serving process's counts of the connections it took over,
// once the old process has reported them: those handed over and those drained, by reason.
func (r *proxyRun) connectionCounts() (handedOver int, drained map[string]int) {
	r.t.Helper()
	var m map[string]float64
	waitFor(r.t, 10*time.Second, handoverConnsMetric+" in the new process", func() bool {
		var err error
		m, err = r.g.metrics()
		return err == nil && sumSeries(m, handoverConnsMetric, nil) > 0
	})
	drained = map[string]int{}
	for series, v := range m {
		name, labels := seriesLabels(series)
		if name != handoverConnsMetric {
			continue
		}
		switch labels["result"] {
		case "handed_over":
			handedOver += int(v)
		case "drained":
			drained[labels["reason"]] += int(v)
		}
	}
	return handedOver, drained
}

// version returns the serving process's version, from gatekeeper_build_info.
func (r *proxyRun) version() (string, error) {
	m, err := r.g.metrics()
	if err != nil {
		return "", err
	}
	for series := range m {
		if name, labels := seriesLabels(series); name == "gatekeeper_build_info" {
			return labels["version"], nil
		}
	}
	return "", errors.New("no gatekeeper_build_info")
}

// waitExit waits until the process pid has ended, at most within, and returns its exit
// status; -1 when a signal ended it or when it is not this process's child (adoptOrphans
// makes it one once its parent has exited).
func (r *proxyRun) waitExit(pid int, within time.Duration) (int, error) {
	if pid == r.g.PID() {
		select {
		case <-r.g.exited:
			return r.g.cmd.ProcessState.ExitCode(), nil
		case <-time.After(within):
			return 0, fmt.Errorf("the old process %d still runs %v later", pid, within)
		}
	}
	status := -1
	if _, ok := waitUntil(within, func() bool {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if got == pid {
			if ws.Exited() {
				status = ws.ExitStatus()
			}
			return true
		}
		return errors.Is(err, syscall.ECHILD) && !procstat.Running(pid)
	}); !ok {
		return 0, fmt.Errorf("the old process %d still runs %v later", pid, within)
	}
	return status, nil
}

// killProxies kills every process whose environment holds mark (the proxy's notify socket,
// which every generation of hand-overs inherits) but skip, the harness's own child, and
// reaps those that are this process's children.
func killProxies(mark []byte, skip int) {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == skip {
			continue
		}
		if environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ")); err == nil && bytes.Contains(environ, mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			pids = append(pids, pid)
		}
	}
	waitUntil(10*time.Second, func() bool {
		for _, pid := range pids {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
		return !slices.ContainsFunc(pids, procstat.Running)
	})
}

// notice is one line an sd_notify message carried, with its sender.
type notice struct {
	pid  int
	line string
	at   time.Time
}

// notices are the lines the proxy's processes sent on its notify socket.
type notices struct {
	mu   sync.Mutex
	list []notice
}

// listenNotices reads the notify socket from now on, with each sender's pid
// (SO_PASSCRED), until the socket is closed at the end of the test.
func listenNotices(t *testing.T, c *net.UnixConn) *notices {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_PASSCRED, 1)
	}); err != nil || serr != nil {
		t.Fatalf("SO_PASSCRED on the notify socket: %v, %v", err, serr)
	}
	_ = c.SetReadDeadline(time.Time{}) // the harness bounded its wait for READY=1
	n := &notices{}
	go func() { // ends when the socket is closed
		buf := make([]byte, 4096)
		oob := make([]byte, syscall.CmsgSpace(syscall.SizeofUcred))
		for {
			k, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
			if err != nil {
				return
			}
			pid := 0
			if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for i := range msgs {
					if cred, err := syscall.ParseUnixCredentials(&msgs[i]); err == nil {
						pid = int(cred.Pid)
					}
				}
			}
			at := time.Now()
			n.mu.Lock()
			for line := range strings.Lines(string(buf[:k])) {
				n.list = append(n.list, notice{pid: pid, line: strings.TrimSpace(line), at: at})
			}
			n.mu.Unlock()
		}
	}()
	return n
}

// find returns the first line sent by pid (any, for 0) since since that starts with
// prefix.
func (n *notices) find(since time.Time, pid int, prefix string) (notice, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, x := range n.list {
		if !x.at.Before(since) && (pid == 0 || x.pid == pid) && strings.HasPrefix(x.line, prefix) {
			return x, true
		}
	}
	return notice{}, false
}

// sumSeries sums the series of the metric name whose labels include want.
func sumSeries(m map[string]float64, name string, want map[string]string) float64 {
	sum := 0.0
	for series, v := range m {
		n, labels := seriesLabels(series)
		if n == name && hasLabels(labels, want) {
			sum += v
		}
	}
	return sum
}

// hasLabels tells whether labels include every label of want.
func hasLabels(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// seriesLabels splits a series as the exposition writes it, name{k="v",...}, into its
// name and labels (whose values here hold no quote).
func seriesLabels(series string) (string, map[string]string) {
	name, rest, ok := strings.Cut(series, "{")
	labels := map[string]string{}
	if !ok {
		return series, labels
	}
	rest = strings.TrimSuffix(rest, "}")
	for rest != "" {
		k, after, ok := strings.Cut(rest, `="`)
		if !ok {
			break
		}
		v, next, _ := strings.Cut(after, `"`)
		labels[k] = v
		rest = strings.TrimPrefix(next, ",")
	}
	return name, labels
}

// mapText writes counts by name, sorted.
func mapText(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return orNone(strings.Join(parts, ", "))
}

// heldConn is a connection outside the load, held to see what a hand-over does to it.
type heldConn struct {
	name   string
	conn   *sql.Conn
	connID int64
}

// holdConn logs in to addr with params and runs setup.
func holdConn(t *testing.T, addr, params, name string, setup ...string) *heldConn {
	t.Helper()
	db := openDB(t, "tcp", addr, params)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() { conn.Close() })
	h := &heldConn{name: name, conn: conn}
	id, err := h.query("SELECT CONNECTION_ID()")
	if err == nil {
		h.connID, err = strconv.ParseInt(id, 10, 64)
	}
	if err != nil {
		t.Fatalf("%s: CONNECTION_ID(): %v", name, err)
	}
	for _, q := range setup {
		if _, err := h.query(q); err != nil {
			t.Fatalf("%s: %s: %v", name, q, err)
		}
	}
	return h
}

// query runs a statement and returns its first column of its first row ("" for none).
func (h *heldConn) query(q string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), handoverStatementBound)
	defer cancel()
	rows, err := h.conn.QueryContext(ctx, q)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var v sql.NullString
	if rows.Next() {
		if err := rows.Scan(&v); err != nil {
			return "", err
		}
	}
	return v.String, rows.Err()
}

// selectOneWith logs in to addr with DSN params, runs SELECT 1 and disconnects.
func selectOneWith(addr, params string) error {
	db, err := sql.Open("mysql", dsn("tcp", addr, params))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), handoverStatementBound)
	defer cancel()
	var one int
	return db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

// brokenConn reports whether err says the connection is gone: closed by the other end, or
// given up by the driver.
func brokenConn(err error) bool {
	return errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, context.DeadlineExceeded)
}

// sessionState is state a client keeps in its session: an SQL mode, a time zone, a schema,
// and statements prepared under them.
type sessionState struct {
	variant int
	stmts   []*sql.Stmt
	// want is what the state answered before any hand-over.
	want []string
}

// stateVariants are the states the clients keep, the nth client the n%3th.
var stateVariants = []struct{ sqlMode, timeZone string }{
	{"ANSI", "+05:30"},
	{"ANSI_QUOTES,STRICT_ALL_TABLES", "-04:00"},
	{"TRADITIONAL", "+09:00"},
}

// stateQuery reads the session's state; stateStatements are prepared in it. What they
// answer depends on the schema they were prepared in (chaos_where says which), the SQL mode
// they were prepared under ("name" is a column under ANSI_QUOTES, a string otherwise) and
// the session's time zone (FROM_UNIXTIME); stateArgs are their arguments.
const stateQuery = "SELECT @@SESSION.sql_mode, @@SESSION.time_zone, DATABASE()"

var (
	stateStatements = []string{
		"SELECT ? * 2, FROM_UNIXTIME(?), @@SESSION.time_zone, DATABASE(), name FROM chaos_where",
		`SELECT "name", ? FROM chaos_where`,
	}
	stateArgs = [][]any{{21, 86400}, {7}}
)

// keepState sets the nth variant's state on conn, with schema as the default schema, and
// prepares the statements.
func keepState(ctx context.Context, conn *sql.Conn, variant int, schema string) (*sessionState, error) {
	v := stateVariants[variant]
	for _, q := range []string{
		"SET SESSION sql_mode = '" + v.sqlMode + "'",
		"SET SESSION time_zone = '" + v.timeZone + "'",
		"USE " + schema,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	s := &sessionState{variant: variant}
	for _, q := range stateStatements {
		st, err := conn.PrepareContext(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("prepare %s: %w", q, err)
		}
		s.stmts = append(s.stmts, st)
	}
	return s, nil
}

// answers runs the state query and the prepared statements, reports each statement's
// start and error to record, and returns what they answered.
func (s *sessionState) answers(ctx context.Context, conn *sql.Conn, record func(time.Time, error)) []string {
	var out []string
	add := func(start time.Time, rows *sql.Rows, err error) {
		text, err := rowsText(rows, err)
		record(start, err)
		if err != nil {
			text = "error: " + errText(err)
		}
		out = append(out, text)
	}
	start := time.Now()
	rows, err := conn.QueryContext(ctx, stateQuery)
	add(start, rows, err)
	for i, st := range s.stmts {
		start := time.Now()
		rows, err := st.QueryContext(ctx, stateArgs[i]...)
		add(start, rows, err)
	}
	return out
}

func (s *sessionState) close() {
	for _, st := range s.stmts {
		st.Close()
	}
}

// directStateAnswers returns what each state variant answers on the primary directly.
func directStateAnswers(t *testing.T, schema string) [][]string {
	t.Helper()
	db := openDB(t, "tcp", env.Primary, "interpolateParams=true")
	var out [][]string
	for variant := range stateVariants {
		ctx := context.Background()
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s, err := keepState(ctx, conn, variant, schema)
		if err != nil {
			t.Fatalf("on the primary: %v", err)
		}
		out = append(out, s.answers(ctx, conn, func(time.Time, error) {}))
		s.close()
		conn.Close()
	}
	return out
}

// rowsText reads a result set as text, [v v ...] a row, and closes it.
func rowsText(rows *sql.Rows, err error) (string, error) {
	if err != nil {
		return "", err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var b strings.Builder
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		b.WriteString("[")
		for i, v := range vals {
			if i > 0 {
				b.WriteString(" ")
			}
			if v.Valid {
				b.WriteString(strconv.Quote(v.String))
			} else {
				b.WriteString("NULL")
			}
		}
		b.WriteString("]")
	}
	return b.String(), rows.Err()
}

// sample is one statement of the load: when it started, since the load's epoch, and how
// long it took.
type sample struct {
	at, took time.Duration
}

// window is a stretch of the load around a disruption, since the load's epoch.
type window struct {
	name     string
	from, to time.Duration
}

// latencies returns the longest statement that overlaps each window, and the statements
// outside every window that started after from (the load's warm-up is neither).
func latencies(samples []sample, windows []window, from time.Duration) (longest []time.Duration, outside durations) {
	longest = make([]time.Duration, len(windows))
	for _, s := range samples {
		in := s.at < from
		for i, w := range windows {
			if s.at <= w.to && s.at+s.took >= w.from {
				in = true
				longest[i] = max(longest[i], s.took)
			}
		}
		if !in {
			outside = append(outside, s.took)
		}
	}
	return longest, outside
}

// handoverLoad is the clients of the load.
type handoverLoad struct {
	clients []*loadClient
	// epoch is when the load started.
	epoch time.Time
	// lastSlow is when a statement that took more than settleBound ended, in Unix
	// nanoseconds.
	lastSlow atomic.Int64
	stop     context.CancelFunc
	ctx      context.Context
	wg       sync.WaitGroup
	once     sync.Once
}

// connectLoad logs the clients in to addr; they write to table, and the stateful ones keep
// other as their schema. Their connections close when the test ends.
func connectLoad(t *testing.T, addr, table, other string) *handoverLoad {
	t.Helper()
	db := openDB(t, "tcp", addr, "interpolateParams=true")
	db.SetMaxIdleConns(0) // a client's connection ends with it
	l := &handoverLoad{clients: make([]*loadClient, handoverClients)}
	l.ctx, l.stop = context.WithCancel(context.Background())
	t.Cleanup(func() {
		l.halt()
		for _, c := range l.clients {
			if c != nil {
				c.close()
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	work := make(chan int)
	errs := make(chan error, handoverClients)
	var wg sync.WaitGroup
	for range connectWorkers {
		wg.Go(func() { // ends when work is closed
			for n := range work {
				c, err := connectClient(ctx, db, n, table, other)
				if err != nil {
					errs <- fmt.Errorf("client %d: %w", n, err)
					continue
				}
				l.clients[n] = c
			}
		})
	}
	for n := range handoverClients {
		work <- n
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatalf("logging in the load's clients (%d more failed): %v", len(errs), err)
	}
	return l
}

// start sets the clients going.
func (l *handoverLoad) start() {
	l.epoch = time.Now()
	for _, c := range l.clients {
		c.epoch, c.lastSlow = l.epoch, &l.lastSlow
		l.wg.Go(func() { c.run(l.ctx) }) // ends when ctx does, after the unit in progress
	}
}

// halt stops the clients and waits until each has finished its unit in progress.
func (l *handoverLoad) halt() {
	l.once.Do(func() {
		l.stop()
		l.wg.Wait()
	})
}

// loadSummary is what the clients saw, together.
type loadSummary struct {
	samples         []sample
	acked, unknown  map[int64]bool
	errs            map[string]int
	errors, wrong   int
	firstWrong      string
	disconnects     int
	firstDisconnect string
	// stateClients keep session state; stateKept of them answered the same at the end.
	stateClients, stateKept int
	firstStateLoss          string
}

// summary checks each client's connection id and session state now that it stopped, and
// adds up what the clients saw.
func (l *handoverLoad) summary() loadSummary {
	s := loadSummary{acked: map[int64]bool{}, unknown: map[int64]bool{}, errs: map[string]int{}}
	for _, c := range l.clients {
		c.finish()
		s.samples = append(s.samples, c.samples...)
		for _, id := range c.acked {
			s.acked[id] = true
		}
		for _, id := range c.unknown {
			s.unknown[id] = true
		}
		for k, n := range c.errs {
			s.errs[k] += n
			s.errors += n
		}
		s.wrong += c.wrong
		if s.firstWrong == "" {
			s.firstWrong = c.firstWrong
		}
		if c.broken != nil || c.idAfter != c.connID {
			s.disconnects++
			if s.firstDisconnect == "" {
				s.firstDisconnect = fmt.Sprintf("client %d: connection id %d, then %d (%s)", c.n, c.connID, c.idAfter, errText(c.broken))
			}
		}
		if c.state != nil {
			s.stateClients++
			if c.stateLoss == "" {
				s.stateKept++
			} else if s.firstStateLoss == "" {
				s.firstStateLoss = c.stateLoss
			}
		}
	}
	return s
}

// loadClient is one client of the load: one connection for the whole check, its own ids in
// the ledger table, and what it saw. Only its own goroutine touches it while it runs.
type loadClient struct {
	n     int
	conn  *sql.Conn
	table string
	epoch time.Time
	// lastSlow is the load's, set when a statement took more than settleBound.
	lastSlow *atomic.Int64
	// connID is CONNECTION_ID() at the start, idAfter at the end.
	connID, idAfter int64
	// state is the session state the client keeps; nil for most.
	state  *sessionState
	nextID int64

	samples []sample
	// acked ids were answered OK; unknown ids failed, and may or may not have landed.
	acked, unknown []int64
	errs           map[string]int
	// broken is the error that ended the connection.
	broken     error
	wrong      int
	firstWrong string
	// stateLoss describes the first time the session state answered otherwise.
	stateLoss string
}

func connectClient(ctx context.Context, db *sql.DB, n int, table, other string) (*loadClient, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	c := &loadClient{n: n, conn: conn, table: table, errs: map[string]int{}}
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&c.connID); err != nil {
		conn.Close()
		return nil, err
	}
	if n < handoverStateClients {
		if c.state, err = keepState(ctx, conn, n%len(stateVariants), other); err != nil {
			conn.Close()
			return nil, err
		}
		c.state.want = c.state.answers(ctx, conn, func(time.Time, error) {})
	}
	return c, nil
}

// run works until ctx ends or the connection breaks: units of autocommit INSERTs,
// transactions, reads of its own writes, plain SELECTs and, for a stateful client, reads
// of its session state, each statement after a pause.
func (c *loadClient) run(ctx context.Context) {
	rnd := mrand.New(mrand.NewPCG(uint64(c.n), uint64(c.epoch.UnixNano())))
	for unit := 0; c.broken == nil && c.think(ctx, rnd, thinkTime); unit++ {
		switch unit % 5 {
		case 0, 1:
			c.insert()
		case 2:
			c.transaction(rnd)
		case 3:
			c.readBack(unit)
		default:
			if c.state != nil {
				c.checkState()
			} else {
				c.plainSelect(unit)
			}
		}
	}
}

// think pauses for about mean, and reports false when ctx ended first.
func (c *loadClient) think(ctx context.Context, rnd *mrand.Rand, mean time.Duration) bool {
	timer := time.NewTimer(time.Duration(float64(mean) * (0.5 + rnd.Float64())))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

func (c *loadClient) newID() int64 {
	c.nextID++
	return int64(c.n+1)<<32 | c.nextID
}

func (c *loadClient) insertQuery() string {
	return "INSERT INTO " + c.table + " (id, client) VALUES (?, ?)"
}

func (c *loadClient) insert() {
	id := c.newID()
	if err := c.exec(c.insertQuery(), id, c.n); err != nil {
		c.unknown = append(c.unknown, id)
		return
	}
	c.acked = append(c.acked, id)
}

// transaction writes an id in a transaction, reads it back in it, and commits, with a
// pause between statements as an application's transaction has.
func (c *loadClient) transaction(rnd *mrand.Rand) {
	id := c.newID()
	steps := []func() error{
		func() error { return c.exec("BEGIN") },
		func() error { return c.exec(c.insertQuery(), id, c.n) },
		func() error { return c.expect("1", "SELECT COUNT(*) FROM "+c.table+" WHERE id = ?", id) },
		func() error { return c.exec("COMMIT") },
	}
	for i, step := range steps {
		if i > 0 {
			c.think(context.Background(), rnd, transactionThink)
		}
		if err := step(); err != nil {
			c.unknown = append(c.unknown, id)
			if c.broken == nil {
				_ = c.exec("ROLLBACK")
			}
			return
		}
	}
	c.acked = append(c.acked, id)
}

// readBack reads the client's last acknowledged write.
func (c *loadClient) readBack(unit int) {
	if len(c.acked) == 0 {
		c.plainSelect(unit)
		return
	}
	_ = c.expect("1", "SELECT COUNT(*) FROM "+c.table+" WHERE id = ?", c.acked[len(c.acked)-1])
}

func (c *loadClient) plainSelect(unit int) {
	_ = c.expect(strconv.Itoa(unit+1), "SELECT ? + 1", unit)
}

// checkState compares the session state's answers with those before the hand-overs.
func (c *loadClient) checkState() {
	ctx, cancel := context.WithTimeout(context.Background(), handoverStatementBound)
	defer cancel()
	got := c.state.answers(ctx, c.conn, c.record)
	if !slices.Equal(got, c.state.want) {
		c.wrongAnswer(fmt.Sprintf("client %d's session state answered %q, before the hand-overs %q", c.n, got, c.state.want))
	}
}

func (c *loadClient) exec(q string, args ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), handoverStatementBound)
	defer cancel()
	start := time.Now()
	_, err := c.conn.ExecContext(ctx, q, args...)
	c.record(start, err)
	return err
}

// expect runs a query whose one value must be want; it returns the query's error, and
// counts a wrong answer.
func (c *loadClient) expect(want, q string, args ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), handoverStatementBound)
	defer cancel()
	start := time.Now()
	var got string
	err := c.conn.QueryRowContext(ctx, q, args...).Scan(&got)
	c.record(start, err)
	if err == nil && got != want {
		c.wrongAnswer(fmt.Sprintf("client %d: %s %v answered %s, want %s", c.n, q, args, got, want))
	}
	return err
}

func (c *loadClient) wrongAnswer(what string) {
	c.wrong++
	if c.firstWrong == "" {
		c.firstWrong = what
	}
}

// record notes a statement that started at start and ended now with err.
func (c *loadClient) record(start time.Time, err error) {
	took := time.Since(start)
	c.samples = append(c.samples, sample{at: start.Sub(c.epoch), took: took})
	if took > settleBound {
		c.lastSlow.Store(time.Now().UnixNano())
	}
	if err == nil {
		return
	}
	c.errs[errKey(err)]++
	if c.broken == nil && brokenConn(err) {
		c.broken = err
	}
}

// finish reads the connection id and the session state once more, after the load.
func (c *loadClient) finish() {
	if c.broken != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), handoverStatementBound)
	defer cancel()
	if err := c.conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&c.idAfter); err != nil {
		c.broken = err
		return
	}
	if c.state != nil {
		got := c.state.answers(ctx, c.conn, func(time.Time, error) {})
		if !slices.Equal(got, c.state.want) {
			c.stateLoss = fmt.Sprintf("client %d answered %q, before the hand-overs %q", c.n, got, c.state.want)
		}
	}
}

func (c *loadClient) close() {
	if c.state != nil {
		c.state.close()
	}
	c.conn.Close()
}
