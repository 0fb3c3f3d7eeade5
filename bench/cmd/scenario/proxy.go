package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
)

// mode is one way of reaching the database.
type mode struct {
	Name string
	// Proxy: through gatekeeper; else straight to the primary.
	Proxy bool
	// Admission on, with Discipline, Aging and LastCall (0: off).
	Admission  bool
	Discipline string
	Aging      float64
	LastCall   time.Duration
	// Capacity overrides the common admission.capacity (0: keep it).
	Capacity time.Duration
	// Auto: the capacity adapts (admission.capacity: auto), as in sjf@auto, towards
	// Stretch when set (admission.capacity_stretch), as in sjf@auto-2.
	Auto    bool
	Stretch float64
	// Law is the adaptive capacity's law (admission.capacity_law) when not the default, as
	// in sjf@auto-rules.
	Law string
	// Calibrated: Capacity is what gatekeeper calibrate chose for the mode.
	Calibrated bool
	// Reserve: the mode takes the quick-request reserve of --reserve-floor.
	Reserve bool
	// Pooled: gatekeeper in pooled mode, routing autocommit reads and read-only
	// transactions to the first Replicas of --replicas (0: none, every read on the primary).
	Pooled   bool
	Replicas int
	// Cache: the pooled mode runs with the result cache on (cache.mode auto), as in
	// pooled+cache.
	Cache bool
	// Build names the gatekeeper binary of --builds the mode runs, as in sjf@auto:new
	// (empty: --gatekeeper's), so that two builds run in the same rounds.
	Build string
	// Proxies is the number of gatekeeper processes, each configured alike, that the
	// clients are split over, as in sjf@auto*3 (0: one).
	Proxies int
	// Fleet: the proxies coordinate their capacity through the etcd server of --etcd (the
	// fleet: section), as in sjf@auto*3+fleet.
	Fleet bool
}

// proxies is the number of gatekeeper processes m runs: 0 for direct.
func (m mode) proxies() int {
	if !m.Proxy {
		return 0
	}
	return max(m.Proxies, 1)
}

// admissionModes names the admission modes parseModes knows, for its errors.
const admissionModes = "fifo, sjf, sjf-aging-X, sjf-last-call-D"

// parseModes reads a comma-separated list: direct, passthrough, pooled, routed-N, fifo, sjf,
// sjf-aging-X, sjf-last-call-D; an admission mode runs in pooled mode with +pooled, and any
// proxy mode with the result cache (in pooled mode) with +cache, as in sjf@80ms+pooled+cache;
// an admission mode may name its own capacity after @, as in fifo@360ms, or adapt it, as in
// sjf@auto, towards a stretch target of its own, as in sjf@auto-2, under the rules of
// earlier releases, as in sjf@auto-rules or sjf@auto-rules-2, and take the reserve
// with +reserve; any proxy mode may run N proxies with *N before the suffixes, as in
// sjf@auto*3, coordinated through etcd with +fleet, the last suffix, as in
// sjf@auto*3+fleet; any proxy mode may end in :NAME to run the build of --builds called
// NAME, as in sjf@auto:new.
func parseModes(s string) ([]mode, error) {
	var out []mode
	seen := map[string]bool{}
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if seen[name] {
			return nil, fmt.Errorf("--modes: %s is listed twice", name)
		}
		seen[name] = true
		m := mode{Name: name}
		name, m.Build, _ = strings.Cut(name, ":")
		name, m.Fleet = strings.CutSuffix(name, "+fleet")
		name, m.Cache = strings.CutSuffix(name, "+cache")
		name, pooled := strings.CutSuffix(name, "+pooled")
		name, m.Reserve = strings.CutSuffix(name, "+reserve")
		if strings.Contains(name, "+") {
			return nil, fmt.Errorf("--modes: %s: the suffixes are +reserve, +pooled, +cache and +fleet, once each and in that order, at the end, as in sjf@80ms+reserve or sjf@80ms*2+pooled+cache", m.Name)
		}
		name, count, many := strings.Cut(name, "*")
		if many {
			n, err := strconv.Atoi(count)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("--modes: %s: the number of proxies after * must be a positive whole number, before any + suffix, as in sjf@auto*3", m.Name)
			}
			m.Proxies = n
		}
		base, capacity, withCapacity := strings.Cut(name, "@")
		if target, ok := strings.CutPrefix(capacity, "auto"); withCapacity && ok {
			m.Auto, name, withCapacity = true, base, false
			if law, ok := strings.CutPrefix(target, "-rules"); ok {
				m.Law, target = "rules", law
			}
			if target != "" {
				v, dash := strings.CutPrefix(target, "-")
				x, err := strconv.ParseFloat(v, 64)
				if !dash || err != nil || x <= 1 {
					return nil, fmt.Errorf("--modes: %s: the stretch target after @auto- must be a number over 1, as in sjf@auto-2", m.Name)
				}
				m.Stretch = x
			}
		}
		if withCapacity {
			d, err := time.ParseDuration(capacity)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("--modes: %s: the capacity after @ must be a positive duration, as in fifo@360ms", name)
			}
			m.Capacity, name = d, base
		}
		switch {
		case name == "direct":
		case name == "passthrough":
			m.Proxy = true
		case name == "pooled":
			m.Proxy, m.Pooled = true, true
		case strings.HasPrefix(name, "routed-"):
			n, err := strconv.Atoi(strings.TrimPrefix(name, "routed-"))
			if err != nil || n < 1 {
				return nil, fmt.Errorf("--modes: %s: the number of replicas after routed- must be a positive whole number, as in routed-2", name)
			}
			m.Proxy, m.Pooled, m.Replicas = true, true, n
		case name == "fifo" || name == "sjf":
			m.Proxy, m.Admission, m.Discipline = true, true, name
		case strings.HasPrefix(name, "sjf-aging-"):
			x, err := strconv.ParseFloat(strings.TrimPrefix(name, "sjf-aging-"), 64)
			if err != nil || x <= 0 {
				return nil, fmt.Errorf("--modes: %s: the aging factor after sjf-aging- must be a positive number, as in sjf-aging-5", name)
			}
			m.Proxy, m.Admission, m.Discipline, m.Aging = true, true, "sjf", x
		case strings.HasPrefix(name, "sjf-last-call-"):
			d, err := time.ParseDuration(strings.TrimPrefix(name, "sjf-last-call-"))
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("--modes: %s: the last call after sjf-last-call- must be a positive duration, shorter than --queue-timeout, as in sjf-last-call-3s", name)
			}
			m.Proxy, m.Admission, m.Discipline, m.LastCall = true, true, "sjf", d
		default:
			return nil, fmt.Errorf("--modes: unknown mode %q; use direct, passthrough, pooled, routed-N or an admission mode (%s), an admission mode with its own capacity (or auto, or auto-X for a stretch target of X) after @ and then +reserve if it takes the reserve, as in sjf@80ms+reserve or sjf@auto", m.Name, admissionModes)
		}
		if (m.Capacity > 0 || m.Auto) && !m.Admission {
			return nil, fmt.Errorf("--modes: %s: only an admission mode (%s) has a capacity", m.Name, admissionModes)
		}
		if m.Reserve && !m.Admission {
			return nil, fmt.Errorf("--modes: %s: only an admission mode (%s) takes the reserve", m.Name, admissionModes)
		}
		if (pooled || m.Cache) && !m.Proxy {
			return nil, fmt.Errorf("--modes: %s: direct runs no proxy: +pooled and +cache go with a proxy mode, as in sjf@80ms+pooled+cache", m.Name)
		}
		// The result cache needs pooled mode; +pooled runs an admission mode in it.
		m.Pooled = m.Pooled || pooled || m.Cache
		if m.Build != "" && !m.Proxy {
			return nil, fmt.Errorf("--modes: %s: direct runs no gatekeeper build", m.Name)
		}
		if (m.Proxies > 0 || m.Fleet) && !m.Proxy {
			return nil, fmt.Errorf("--modes: %s: direct runs no proxy: *N and +fleet go with a proxy mode, as in sjf@auto*3+fleet", m.Name)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--modes: no mode given")
	}
	return out, nil
}

// reserveSettings are the admission modes' quick-request reserve (off while Floor is 0).
type reserveSettings struct {
	Floor, QuickCutoff time.Duration
	LengthyLane        int
	LaneRate           float64       // 0: no bound
	QuickWaitTarget    time.Duration // 0: the lane is not paced
}

// yaml is the reserve's block under admission:, empty when it is off.
func (r reserveSettings) yaml() string {
	if r.Floor <= 0 {
		return ""
	}
	y := fmt.Sprintf("  reserve:\n    floor: %s\n    quick_cutoff: %s\n    lengthy_lane: %d\n", r.Floor, r.QuickCutoff, r.LengthyLane)
	if r.LaneRate > 0 {
		y += fmt.Sprintf("    lane_rate: %g\n", r.LaneRate)
	}
	if r.QuickWaitTarget > 0 {
		y += fmt.Sprintf("    quick_wait_target: %s\n", r.QuickWaitTarget)
	}
	return y
}

// proxySettings are the proxy's settings common to every mode.
type proxySettings struct {
	Binary, Primary string
	// Builds are other gatekeeper binaries by name, for the modes that name one.
	Builds map[string]string
	// Replicas, User and Password serve the pooled modes: the replicas they may route
	// to, and the account the proxy reads positions with.
	Replicas       []string
	User, Password string
	Capacity       time.Duration
	QueueTimeout   time.Duration
	Reserve        reserveSettings
	Weight         float64
	TypeKey        string // classify.type_key: tag or tag_digest; empty is tag
	// CacheConfig replaces the +cache modes' cache section (cache: and rules:); empty is
	// cache.mode auto.
	CacheConfig string
	BackendCPUs int
	Dir         string
	// KeepState gives the modes with capacity auto a state file in Dir, kept across cells.
	KeepState bool
	// Etcd is the client endpoint (host:port) of the etcd server the +fleet modes'
	// proxies coordinate through, under FleetPrefix: a key prefix of the run's own, so
	// that no run sees the members of the runs before it.
	Etcd, FleetPrefix string
}

// typeKey is the proxy's classify.type_key.
func (s proxySettings) typeKey() string {
	if s.TypeKey == "" {
		return "tag"
	}
	return s.TypeKey
}

// proxyProcess is a running gatekeeper.
type proxyProcess struct {
	cmd           *exec.Cmd
	Listen, Admin string
	logPath       string
}

// freePorts returns n distinct loopback addresses free now: each is held until all are
// chosen, so that none is handed out twice.
func freePorts(n int) ([]string, error) {
	held := make([]net.Listener, 0, n)
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	out := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		held = append(held, ln)
		out = append(out, ln.Addr().String())
	}
	return out, nil
}

// fleetPrefix is a key prefix for one run's fleet, unique to this process and moment.
func fleetPrefix(now time.Time) string {
	return fmt.Sprintf("/bench-%d-%s/", os.Getpid(), strconv.FormatInt(now.UnixNano(), 36))
}

// configYAML is the configuration of m.
func configYAML(m mode, s proxySettings, listen, adminAddr string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "listen: %s\nadmin:\n  listen: %s\nbackends:\n  primary: %s\n", listen, adminAddr, s.Primary)
	if m.Replicas > 0 {
		b.WriteString("  replicas:\n")
		for _, r := range s.Replicas[:m.Replicas] {
			fmt.Fprintf(&b, "    - %s\n", r)
		}
	}
	fmt.Fprintf(&b, "classify:\n  type_key: %s\nestimator:\n  weight: %g\n  backend_cpus: %d\n",
		s.typeKey(), s.Weight, s.BackendCPUs)
	if s.KeepState && m.Auto {
		fmt.Fprintf(&b, "  state_file: %s\n", filepath.Join(s.Dir, m.Name+".state.json"))
	}
	b.WriteString("log:\n  level: warn\n")
	if m.Pooled {
		fmt.Fprintf(&b, "mode: pooled\nauth:\n  from_backend: true\npools:\n  max_open: 1000\n  max_idle: 1000\n")
		fmt.Fprintf(&b, "monitor:\n  user: %q\n  password: %q\n", s.User, s.Password)
		if m.Replicas > 0 {
			b.WriteString("routing:\n  enabled: true\n")
		}
		switch {
		case m.Cache && s.CacheConfig != "":
			b.WriteString(strings.TrimRight(s.CacheConfig, "\n") + "\n")
		case m.Cache:
			b.WriteString("cache:\n  mode: auto\n")
		}
	}
	fmt.Fprintf(&b, "admission:\n  enabled: %t\n", m.Admission)
	if m.Admission {
		capacity := s.Capacity.String()
		if m.Capacity > 0 {
			capacity = m.Capacity.String()
		}
		if m.Auto {
			capacity = "auto"
			if m.Stretch > 0 {
				fmt.Fprintf(&b, "  capacity_stretch: %g\n", m.Stretch)
			}
			if m.Law != "" {
				fmt.Fprintf(&b, "  capacity_law: %s\n", m.Law)
			}
		}
		fmt.Fprintf(&b, "  capacity: %s\n  discipline: %s\n  aging: %g\n  last_call: %s\n  queue_timeout: %s\n  max_queue: 100000\n",
			capacity, m.Discipline, m.Aging, m.LastCall, s.QueueTimeout)
		if m.Reserve {
			b.WriteString(s.Reserve.yaml())
		}
	}
	if m.Fleet {
		fmt.Fprintf(&b, "fleet:\n  etcd: [%q]\n  prefix: %q\n", s.Etcd, s.FleetPrefix)
	}
	return b.String()
}

// proxyGroup is the gatekeeper processes of a run: one, or a fleet of them, in the order
// the clients are dealt to them.
type proxyGroup []*proxyProcess

// startProxies starts m's gatekeeper processes, configured alike but for their ports and
// directories, and waits until every one is ready; on a failure it stops those it started.
func startProxies(ctx context.Context, m mode, s proxySettings) (proxyGroup, error) {
	addrs, err := freePorts(2 * m.proxies())
	if err != nil {
		return nil, err
	}
	var g proxyGroup
	for i := range m.proxies() {
		p, err := startProxy(ctx, m, s, i+1, addrs[2*i], addrs[2*i+1])
		if err != nil {
			g.stop()
			return nil, err
		}
		g = append(g, p)
	}
	return g, nil
}

// stop ends every proxy of the group, at once.
func (g proxyGroup) stop() {
	var wg sync.WaitGroup
	for _, p := range g {
		wg.Go(p.stop) // ends when the process does
	}
	wg.Wait()
}

// listens are the proxies' client addresses, in order.
func (g proxyGroup) listens() []string {
	out := make([]string, len(g))
	for i, p := range g {
		out[i] = p.Listen
	}
	return out
}

// admins are the proxies' admin addresses, in order.
func (g proxyGroup) admins() []string {
	out := make([]string, len(g))
	for i, p := range g {
		out[i] = p.Admin
	}
	return out
}

// pids are the proxies' process ids.
func (g proxyGroup) pids() []int {
	out := make([]int, len(g))
	for i, p := range g {
		out[i] = p.cmd.Process.Pid
	}
	return out
}

// types sums the proxies' per-type totals, by tag.
func (g proxyGroup) types() (busy, error) {
	out := busy{}
	for _, p := range g {
		b, err := p.types()
		if err != nil {
			return nil, err
		}
		for tag, t := range b {
			sum := out[tag]
			out[tag] = typeTotal{sum.Count + t.Count, sum.TotalMS + t.TotalMS}
		}
	}
	return out, nil
}

// startProxy starts proxy n (from 1) of m, listening on listen and adminAddr, in a
// directory of its own under s.Dir (its configuration, log and state file), and waits until
// it is ready.
func startProxy(ctx context.Context, m mode, s proxySettings, n int, listen, adminAddr string) (*proxyProcess, error) {
	s.Dir = filepath.Join(s.Dir, m.Name, fmt.Sprintf("proxy-%d", n))
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(s.Dir, "gatekeeper.yaml")
	if err := os.WriteFile(cfgPath, []byte(configYAML(m, s, listen, adminAddr)), 0o644); err != nil {
		return nil, err
	}
	p := &proxyProcess{Listen: listen, Admin: adminAddr, logPath: filepath.Join(s.Dir, "gatekeeper.log")}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	binary := s.Binary
	if m.Build != "" {
		binary = s.Builds[m.Build]
	}
	p.cmd = exec.Command(binary, "serve", "--config", cfgPath)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + adminAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.stop()
			log, _ := os.ReadFile(p.logPath)
			return nil, fmt.Errorf("gatekeeper %d of %s not ready within 30s; its log:\n%s", n, m.Name, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the proxy: SIGTERM, then a kill after 20 s.
func (p *proxyProcess) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }() // ends when the process does
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// replicaShare reads from the proxy's metrics the share of the reads it counted
// (gatekeeper_reads_total, writes left out) that went to a backend other than primary, and
// their number.
func (p *proxyProcess) replicaShare(primary string) (share float64, reads int, err error) {
	resp, err := http.Get("http://" + p.Admin + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	return readsShare(string(b), primary)
}

// cacheSummary reads the result cache's figures from the proxy: the hit ratio, the
// database time the hits saved, and the types that saved the most.
func (p *proxyProcess) cacheSummary() (string, error) {
	resp, err := http.Get("http://" + p.Admin + "/api/v1/cache")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var c struct {
		Hits, Misses uint64
		HitRatio     float64 `json:"hit_ratio"`
		Saved        float64 `json:"saved_seconds"`
		Types        []struct {
			Sample   string
			HitRatio float64 `json:"hit_ratio"`
			Saved    float64 `json:"saved_seconds"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		return "", err
	}
	line := fmt.Sprintf("cache: hit ratio %.1f%% (%d hits, %d misses), %.1f s of database time saved; by type:",
		100*c.HitRatio, c.Hits, c.Misses, c.Saved)
	for i, t := range c.Types {
		if i == 4 {
			break
		}
		line += fmt.Sprintf(" [%.45s… %.0f%%, %.1f s]", t.Sample, 100*t.HitRatio, t.Saved)
	}
	return line, nil
}

// readsShare reads gatekeeper_reads_total out of metrics in the text format.
func readsShare(metrics, primary string) (share float64, reads int, err error) {
	var all, replicas float64
	for line := range strings.SplitSeq(metrics, "\n") {
		if !strings.HasPrefix(line, "gatekeeper_reads_total{") || strings.Contains(line, `reason="write"`) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return 0, 0, fmt.Errorf("metrics: %q: %w", line, err)
		}
		all += v
		if !strings.Contains(line, `backend="`+primary+`"`) {
			replicas += v
		}
	}
	if all == 0 {
		return 0, 0, errors.New("metrics: no reads counted")
	}
	return replicas / all, int(all), nil
}

// typeTotal is a type's unit count and summed backend busy time.
type typeTotal struct {
	Count   uint64
	TotalMS float64
}

// busy holds the totals of each tag: of its type, or under tag_digest of its types
// (named "TAG DIGEST") together.
type busy map[string]typeTotal

// types reads the proxy's per-type totals, by tag.
func (p *proxyProcess) types() (busy, error) {
	resp, err := http.Get("http://" + p.Admin + "/api/v1/types")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var tr admin.TypesResponse
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil {
		return nil, err
	}
	return byTag(tr.Types), nil
}

// byTag sums the totals of types by tag: a type's sample is its tag, or under tag_digest
// "TAG DIGEST".
func byTag(types []admin.TypeStats) busy {
	out := busy{}
	for _, t := range types {
		tag, _, _ := strings.Cut(t.Sample, " ")
		sum := out[tag]
		out[tag] = typeTotal{sum.Count + t.Count, sum.TotalMS + t.TotalMS}
	}
	return out
}

// execMS returns the backend busy time per interaction of tag between two readings, for n
// interactions that ran; -1 when unknown.
func execMS(before, after busy, tag string, n int) float64 {
	if before == nil || after == nil || n == 0 {
		return -1
	}
	return (after[tag].TotalMS - before[tag].TotalMS) / float64(n)
}
