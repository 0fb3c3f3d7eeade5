package admission

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestScripts runs the scenarios in testdata/*.txt against a controller on a manual clock.
//
// Each line is a command; after "=>" comes what it must report: the units whose state it
// changed, in the order they arrived, as "NAME STATE" ("a admitted, b queued"), or the
// state for "state". Commands:
//
//	config KEY=VALUE...        a new controller (defaults: capacity=100ms discipline=fifo
//	                           queue_timeout=10s max_queue=100)
//	reconfigure KEY=VALUE...   change the running controller's settings
//	arrive NAME cost=D [service=D] [txn] [new] [unmeasured]
//	                           a unit of an accepted session (new: of a new one); service is
//	                           its expected service time (default: its cost); unmeasured: its
//	                           cost is a default, its type has no sample yet
//	flood PREFIX N cost=D ...  N units named PREFIX1..PREFIXN arrive as with arrive; it
//	                           reports how many of them went where ("1 admitted, 9 queued")
//	complete NAME [busy=D]     the unit ends
//	cancel NAME                its client goes away
//	advance D                  the clock moves, then the controller ticks
//	state                      load, running, queued and, when on, the gate and reserve
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScript(t, f) })
	}
}

type script struct {
	clock   *ManualClock
	ctl     *Controller
	cfg     Config
	names   []string
	tickets map[string]*Ticket
}

func runScript(t *testing.T, path string) {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	s := &script{clock: NewManualClock(time.Unix(1_700_000_000, 0))}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		cmd, want, _ := strings.Cut(text, "=>")
		got, err := s.run(strings.Fields(cmd))
		require.NoError(t, err, "%s:%d: %s", path, line, text)
		require.Equal(t, strings.TrimSpace(want), got, "%s:%d: %s", path, line, text)
	}
	require.NoError(t, sc.Err())
}

func (s *script) run(args []string) (string, error) {
	if len(args) == 0 {
		return "", fmt.Errorf("empty command")
	}
	before := map[string]State{}
	for n, tk := range s.tickets {
		before[n] = tk.State()
	}
	switch args[0] {
	case "config":
		s.cfg = Config{Capacity: 100 * time.Millisecond, QueueTimeout: 10 * time.Second, MaxQueue: 100}
		if err := s.set(args[1:]); err != nil {
			return "", err
		}
		s.ctl = New(s.cfg, s.clock)
		s.names, s.tickets = nil, map[string]*Ticket{}
		return "", nil
	case "reconfigure":
		if err := s.set(args[1:]); err != nil {
			return "", err
		}
		s.ctl.Configure(s.cfg)
	case "arrive":
		if len(args) < 3 {
			return "", fmt.Errorf("arrive NAME cost=D [service=D] [txn] [new] [unmeasured]")
		}
		req, err := parseRequest(args[2:])
		if err != nil {
			return "", err
		}
		before[args[1]] = 255 // always reported
		s.arrive(args[1], req)
	case "flood":
		if len(args) < 4 {
			return "", fmt.Errorf("flood PREFIX N cost=D [service=D] [txn] [new] [unmeasured]")
		}
		n, err := strconv.Atoi(args[2])
		if err != nil {
			return "", fmt.Errorf("flood: %w", err)
		}
		req, err := parseRequest(args[3:])
		if err != nil {
			return "", err
		}
		units := make([]*Ticket, n)
		for i := range units {
			units[i] = s.arrive(fmt.Sprintf("%s%d", args[1], i+1), req)
		}
		// Where the flood left them, counted in the order first seen.
		count := map[string]int{}
		var out []string
		for _, tk := range units {
			d := describe(tk)
			if count[d] == 0 {
				out = append(out, d)
			}
			count[d]++
		}
		for i, d := range out {
			out[i] = fmt.Sprintf("%d %s", count[d], d)
		}
		return strings.Join(out, ", "), nil
	case "complete":
		busy := time.Duration(0)
		if len(args) > 2 && strings.HasPrefix(args[2], "busy=") {
			d, err := time.ParseDuration(args[2][5:])
			if err != nil {
				return "", err
			}
			busy = d
		}
		tk, err := s.ticket(args)
		if err != nil {
			return "", err
		}
		s.ctl.Release(tk, busy)
	case "cancel":
		tk, err := s.ticket(args)
		if err != nil {
			return "", err
		}
		s.ctl.Cancel(tk)
	case "advance":
		d, err := time.ParseDuration(args[1])
		if err != nil {
			return "", err
		}
		s.clock.Advance(d)
		s.ctl.Tick(s.clock.Now())
	case "state":
		return s.state(), nil
	default:
		return "", fmt.Errorf("unknown command %q", args[0])
	}
	var out []string
	for _, n := range s.names {
		tk := s.tickets[n]
		if st := tk.State(); st != before[n] {
			out = append(out, n+" "+describe(tk))
		}
	}
	return strings.Join(out, ", "), nil
}

// arrive makes the unit name arrive with req.
func (s *script) arrive(name string, req Request) *Ticket {
	tk := s.tickets[name]
	if tk == nil {
		tk = &Ticket{}
		s.tickets[name] = tk
		s.names = append(s.names, name)
	}
	_, _ = s.ctl.Arrive(tk, req)
	return tk
}

// parseRequest reads the arguments of arrive after the name.
func parseRequest(args []string) (Request, error) {
	req := Request{Accepted: true}
	for _, a := range args {
		switch {
		case a == "txn":
			req.Txn = true
		case a == "new":
			req.Accepted = false
		case a == "unmeasured":
			req.Unmeasured = true
		case strings.HasPrefix(a, "type="):
			n, err := strconv.ParseUint(a[5:], 10, 64)
			if err != nil {
				return req, err
			}
			req.Type = n
		case strings.HasPrefix(a, "cost="):
			d, err := time.ParseDuration(a[5:])
			if err != nil {
				return req, err
			}
			req.Cost = d
		case strings.HasPrefix(a, "service="):
			d, err := time.ParseDuration(a[8:])
			if err != nil {
				return req, err
			}
			req.Service = d
		default:
			return req, fmt.Errorf("arrive: unknown argument %q", a)
		}
	}
	return req, nil
}

func (s *script) ticket(args []string) (*Ticket, error) {
	if len(args) < 2 || s.tickets[args[1]] == nil {
		return nil, fmt.Errorf("%s: no unit named %v", args[0], args[1:])
	}
	return s.tickets[args[1]], nil
}

func describe(tk *Ticket) string {
	switch tk.State() {
	case Idle:
		switch tk.Err() {
		case nil:
			return "done"
		case ErrQueueFull:
			return "refused: queue full"
		case ErrTimeout:
			return "refused: timeout"
		case ErrCanceled:
			return "refused: canceled"
		case ErrNewSession:
			return "refused: new session"
		case ErrBlockingQueueFull:
			return "refused: blocking queue full"
		}
		return "refused: " + tk.Err().Error()
	case Admitted:
		if tk.lane {
			return "admitted in lane"
		}
	}
	return tk.State().String()
}

func (s *script) state() string {
	sn := s.ctl.Snapshot()
	out := fmt.Sprintf("load=%s running=%d queued=%d", sn.Load, sn.Running, sn.Queued)
	if sn.ActiveLimit > 0 {
		out += fmt.Sprintf(" active=%d blocked=%d b=%d admit_new=%t overload=%t",
			sn.Active, sn.Blocked, sn.BlockingQueue, sn.AdmitNew, sn.Overload)
	}
	if s.cfg.Reserve.Floor > 0 {
		out += fmt.Sprintf(" reserve=%s lane=%d parked=%d", sn.Reserve, sn.Lane, sn.Parked)
		if s.cfg.Reserve.QuickWaitTarget > 0 || s.cfg.Reserve.LaneRate > 0 {
			out += fmt.Sprintf(" lane_rate=%g", sn.LaneRate)
		}
	}
	return out
}

func (s *script) set(kvs []string) error {
	c := &s.cfg
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("want KEY=VALUE, got %q", kv)
		}
		var err error
		dur := func(p *time.Duration) { *p, err = time.ParseDuration(v) }
		num := func(p *int) { *p, err = strconv.Atoi(v) }
		switch k {
		case "capacity":
			dur(&c.Capacity)
		case "max_concurrency":
			num(&c.MaxConcurrency)
		case "discipline":
			c.Discipline, err = ParseDiscipline(v)
		case "aging":
			c.Aging, err = strconv.ParseFloat(v, 64)
		case "queue_timeout":
			dur(&c.QueueTimeout)
		case "last_call":
			dur(&c.LastCall)
		case "max_queue":
			num(&c.MaxQueue)
		case "max_open_transactions":
			num(&c.MaxOpenTransactions)
		case "active_limit":
			num(&c.Sessions.ActiveLimit)
		case "blocking_queue":
			num(&c.Sessions.BlockingQueue)
		case "aggressive":
			c.Sessions.Aggressive, err = strconv.ParseBool(v)
		case "slo":
			dur(&c.Sessions.SLO)
		case "adapt_every":
			num(&c.Sessions.AdaptEvery)
		case "reserve_floor":
			dur(&c.Reserve.Floor)
		case "quick_cutoff":
			dur(&c.Reserve.QuickCutoff)
		case "lengthy_lane":
			num(&c.Reserve.LengthyLane)
		case "lane_rate":
			c.Reserve.LaneRate, err = strconv.ParseFloat(v, 64)
		case "quick_wait_target":
			dur(&c.Reserve.QuickWaitTarget)
		default:
			return fmt.Errorf("unknown setting %q", k)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return c.Validate()
}
