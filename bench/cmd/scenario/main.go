// Command scenario runs the bookstore workload against MariaDB directly and through
// gatekeeper in each mode (passthrough, fifo, sjf, sjf with aging), sweeping closed-loop
// client counts and then an open loop at a share of the peak throughput, and writes CSV, a
// markdown report and PNG plots.
//
//	go run ./bench/cmd/scenario --primary 127.0.0.1:13306 --gatekeeper bin/gatekeeper --capacity 40ms
//
// bench/bookstore.sh starts the backends and builds the binaries first.
package main

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/gatekeeperdb/gatekeeper/internal/bookstore"
)

type options struct {
	primary, user, password, database string
	gatekeeper                        string
	builds                            map[string]string // by name, for the modes that end in :NAME
	modes                             []mode
	clients                           []int
	think, duration, warmup, timeout  time.Duration
	capacity, queueTimeout            time.Duration
	reserve                           reserveSettings
	weight                            float64
	typeKey                           string
	// keepState: the adaptive modes keep their estimates and capacity across cells.
	keepState bool
	// cacheConfig is YAML that replaces the cache section of the +cache modes' configuration
	// (cache: and rules:), read from --cache-config.
	cacheConfig          string
	backendCPUs          int
	openFactor, openRate float64
	openMax              int
	mix                  string
	out                  string
	load, reload         bool
	scale                bookstore.Scale
	seed                 int64
	command              string
	replot               bool
	repeat               int
	calibrate            calibration
	// dbPID is the database server's process, when it runs on this machine (0: not).
	dbPID int
	// replicas are where the routed-N modes send reads, the first N of them.
	replicas []string
	// etcd is the client endpoint (host:port) of the etcd server of the +fleet modes.
	etcd string
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "scenario:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "scenario:", err)
		os.Exit(1)
	}
}

func parseInts(s string) ([]int, error) {
	var out []int
	if strings.TrimSpace(s) == "" {
		return nil, nil // only the open loop, at --open-rate
	}
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--clients: %q is not a positive whole number; give a list such as 10,20,40", f)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// parseBuilds reads --builds: NAME=PATH pairs separated by commas.
func parseBuilds(s string) (map[string]string, error) {
	out := map[string]string{}
	for pair := range strings.SplitSeq(s, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		name, path, ok := strings.Cut(pair, "=")
		if !ok || name == "" || path == "" || strings.ContainsAny(name, ":/") {
			return nil, fmt.Errorf("--builds: %q: give NAME=PATH, as in new=/tmp/gatekeeper", pair)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--builds: %s is named twice", name)
		}
		out[name] = path
	}
	return out, nil
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("scenario", flag.ContinueOnError)
	var modes, clients, replicas, builds string
	fs.StringVar(&o.primary, "primary", os.Getenv("GK_PRIMARY"), "the MariaDB primary, host:port (default $GK_PRIMARY)")
	fs.StringVar(&replicas, "replicas", os.Getenv("GK_REPLICAS"), "replicas of the primary, host:port separated by commas, for the routed-N modes (default $GK_REPLICAS)")
	fs.StringVar(&o.etcd, "etcd", "", "the client endpoint, host:port, of the etcd server that the proxies of the +fleet modes coordinate through (fleet.etcd), each run under a key prefix of its own (fleet.prefix); required with a +fleet mode")
	fs.StringVar(&o.user, "user", envOr("GK_USER", "gk"), "database user (default $GK_USER)")
	fs.StringVar(&o.password, "password", envOr("GK_PASSWORD", "gk"), "its password (default $GK_PASSWORD)")
	fs.StringVar(&o.database, "database", "bookstore", "database to load the bookstore into")
	fs.StringVar(&o.gatekeeper, "gatekeeper", "bin/gatekeeper", "the gatekeeper binary (make build)")
	fs.StringVar(&builds, "builds", "", "other gatekeeper binaries, as NAME=PATH separated by commas, for the modes that end in :NAME (as in sjf@auto:new), so that two builds run in the same rounds")
	fs.StringVar(&modes, "modes", "direct,passthrough,fifo,sjf,sjf-aging-5,sjf-aging-1", "modes to compare; an admission mode may take its own capacity, as in fifo@360ms, or adapt it, as in sjf@auto; a proxy mode may run N gatekeeper processes alike, each with its own ports and directory, with *N before any + suffix, client i connecting to proxy i mod N (open loop: the arrivals in turn), as in 'sjf@auto*3' (quoted for the shell), and have them share their capacity through the etcd of --etcd with +fleet, the last suffix, as in 'sjf@auto*3+fleet'")
	fs.StringVar(&clients, "clients", "10,20,40,80", "closed-loop client counts")
	fs.DurationVar(&o.think, "think", 100*time.Millisecond, "mean think time of a closed-loop client")
	fs.DurationVar(&o.duration, "duration", 45*time.Second, "measured period of a run")
	fs.DurationVar(&o.warmup, "warmup", 15*time.Second, "run before each measurement, in the same run and not counted (the proxy learns costs; the clients carry on into the measured period)")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "client-side timeout of an interaction")
	fs.DurationVar(&o.capacity, "capacity", 0, "admission.capacity of the admission modes without one of their own (default: what gatekeeper calibrate chooses for each mode)")
	fs.IntVar(&o.calibrate.Clients, "calibrate-clients", 200, "gatekeeper calibrate's --clients, when it chooses the capacities")
	fs.DurationVar(&o.calibrate.Step, "calibrate-step", 10*time.Second, "gatekeeper calibrate's --step-duration")
	fs.DurationVar(&o.calibrate.Warmup, "calibrate-warmup", 10*time.Second, "gatekeeper calibrate's --warmup")
	fs.IntVar(&o.calibrate.MaxFactor, "calibrate-max-factor", 64, "gatekeeper calibrate's --max-factor")
	fs.DurationVar(&o.queueTimeout, "queue-timeout", 30*time.Second, "admission.queue_timeout")
	fs.DurationVar(&o.reserve.Floor, "reserve-floor", 0, "admission.reserve.floor of the modes marked +reserve, or of every admission mode when none is (0: no reserve)")
	fs.DurationVar(&o.reserve.QuickCutoff, "quick-cutoff", 20*time.Millisecond, "admission.reserve.quick_cutoff, with --reserve-floor")
	fs.IntVar(&o.reserve.LengthyLane, "lengthy-lane", 2, "admission.reserve.lengthy_lane, with --reserve-floor")
	fs.Float64Var(&o.reserve.LaneRate, "lane-rate", 0, "admission.reserve.lane_rate, with --reserve-floor (0: no bound)")
	fs.DurationVar(&o.reserve.QuickWaitTarget, "quick-wait-target", 0, "admission.reserve.quick_wait_target, with --reserve-floor (0: the lane is not paced)")
	fs.Float64Var(&o.weight, "estimator-weight", 0.1, "estimator.weight of the proxy")
	fs.Func("cache-config", "a YAML file with the cache: and rules: sections of the +cache modes (default: cache.mode auto, no rules)", func(path string) error {
		b, err := os.ReadFile(path)
		o.cacheConfig = string(b)
		return err
	})
	fs.BoolVar(&o.keepState, "keep-state", false, "give each mode with capacity auto a state file (estimator.state_file) that its proxy of each cell saves on stopping and the next cell's resumes from, as after a restart: the first cell of a mode starts cold")
	fs.StringVar(&o.typeKey, "type-key", "tag", "classify.type_key of the proxy: tag (an interaction's statements share its cost) or tag_digest (each autocommit statement of an interaction has its own)")
	fs.IntVar(&o.backendCPUs, "backend-cpus", -1, "estimator.backend_cpus of the proxy; 0 charges busy time (default: the processors the database may run on, when it runs on this machine, else this machine's)")
	fs.Float64Var(&o.openFactor, "open", 0.9, "open loop: Poisson arrivals at this share of fifo's highest closed-loop throughput (direct's without fifo); 0 skips it")
	fs.Float64Var(&o.openRate, "open-rate", 0, "open loop: Poisson arrivals at this rate per second instead of --open's")
	fs.IntVar(&o.openMax, "open-max", 1000, "open loop: most interactions outstanding at once")
	fs.StringVar(&o.mix, "mix", "shopping", "browsing, shopping or ordering")
	fs.StringVar(&o.out, "out", "bench/results/bookstore", "directory for the CSV, the report and the plots")
	fs.BoolVar(&o.load, "load", true, "load the bookstore first (false: it is loaded already)")
	fs.BoolVar(&o.reload, "reload", true, "load the bookstore afresh before every run, so that no run sees the orders of the runs before it")
	fs.IntVar(&o.scale.Items, "items", 0, "items to load (0: the default scale)")
	fs.IntVar(&o.scale.Customers, "customers", 0, "customers to load (0: the default scale)")
	fs.Int64Var(&o.seed, "seed", 1, "random seed of the data and of the clients")
	fs.StringVar(&o.command, "command", "", "the command to name in the report (default: this one)")
	fs.BoolVar(&o.replot, "replot", false, "only draw the plots again from --out's results.csv")
	fs.IntVar(&o.repeat, "repeat", 1, "runs of every cell, the modes in alternating order and run k's clients seeded with --seed+k-1; the report takes the medians")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	if o.replot {
		return o, nil
	}
	if o.modes, err = parseModes(modes); err != nil {
		return o, err
	}
	for r := range strings.SplitSeq(replicas, ",") {
		if r = strings.TrimSpace(r); r != "" {
			o.replicas = append(o.replicas, r)
		}
	}
	if o.builds, err = parseBuilds(builds); err != nil {
		return o, err
	}
	for _, m := range o.modes {
		if _, ok := o.builds[m.Build]; m.Build != "" && !ok {
			return o, fmt.Errorf("--modes: %s runs the build %q, which --builds does not name (as in --builds %s=/tmp/gatekeeper)", m.Name, m.Build, m.Build)
		}
		if m.Replicas > len(o.replicas) {
			return o, fmt.Errorf("--modes: %s routes reads to %d replicas, and --replicas (or GK_REPLICAS) names %d", m.Name, m.Replicas, len(o.replicas))
		}
		if m.Fleet && o.etcd == "" {
			return o, fmt.Errorf("--modes: %s coordinates its proxies through etcd: --etcd is required with a +fleet mode; give an etcd server's client endpoint, as in --etcd 127.0.0.1:22379 (bench/fleet.sh starts one)", m.Name)
		}
	}
	if o.etcd != "" {
		if _, _, err := net.SplitHostPort(o.etcd); err != nil {
			return o, fmt.Errorf("--etcd: %q: give host:port, as in 127.0.0.1:22379", o.etcd)
		}
	}
	if err := o.assignReserve(); err != nil {
		return o, err
	}
	if o.clients, err = parseInts(clients); err != nil {
		return o, err
	}
	if o.repeat < 1 {
		return o, fmt.Errorf("--repeat: %d runs per cell; give 1 or more", o.repeat)
	}
	if len(o.clients) == 0 && o.openRate <= 0 {
		return o, errors.New("--clients: give closed-loop client counts such as 10,20,40, or an --open-rate to run only the open loop")
	}
	if o.primary == "" {
		return o, errors.New("--primary is required (or GK_PRIMARY): the MariaDB primary as host:port")
	}
	if o.capacity < 0 {
		return o, errors.New("--capacity must be positive, such as 40ms, or left out to calibrate each mode")
	}
	if o.calibrate.Clients < 1 || o.calibrate.Step <= 0 || o.calibrate.Warmup < 0 || o.calibrate.MaxFactor < 1 {
		return o, errors.New("--calibrate-clients and --calibrate-max-factor must be at least 1, --calibrate-step positive, --calibrate-warmup not negative")
	}
	if o.typeKey != "tag" && o.typeKey != "tag_digest" {
		return o, fmt.Errorf("--type-key: %q; give tag or tag_digest (the report reads each interaction's cost by its tag)", o.typeKey)
	}
	if o.duration <= 0 || o.warmup < 0 || o.timeout <= 0 {
		return o, errors.New("--duration and --timeout must be positive, --warmup not negative")
	}
	def := bookstore.DefaultScale()
	if o.scale.Items == 0 {
		o.scale.Items = def.Items
	}
	if o.scale.Customers == 0 {
		o.scale.Customers = def.Customers
	}
	o.scale.Seed = o.seed
	if o.command == "" {
		o.command = "go run ./bench/cmd/scenario " + strings.Join(args, " ")
	}
	return o, nil
}

// assignReserve gives --reserve-floor's reserve to the modes marked +reserve, or to every
// admission mode when none is marked.
func (o *options) assignReserve() error {
	marked := slices.ContainsFunc(o.modes, func(m mode) bool { return m.Reserve })
	if marked && o.reserve.Floor <= 0 {
		return errors.New("--modes: a mode marked +reserve takes the reserve of --reserve-floor; give --reserve-floor, such as 40ms")
	}
	if !marked && o.reserve.Floor > 0 {
		for i := range o.modes {
			o.modes[i].Reserve = o.modes[i].Admission
		}
	}
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// dsn is the DSN of the bookstore at addr.
func (o options) dsn(addr string) string {
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.DBName = o.user, o.password, "tcp", addr, o.database
	c.InterpolateParams = true
	return c.FormatDSN()
}

func run(ctx context.Context, o options) error {
	if o.replot {
		runs, modes, err := readCSV(filepath.Join(o.out, "results.csv"))
		if err != nil {
			return err
		}
		o.modes = modes
		if err := writePlots(o, medians(runs)); err != nil {
			return err
		}
		err = readCapacityCSV(filepath.Join(o.out, "capacity.csv"), runs)
		if errors.Is(err, os.ErrNotExist) {
			return nil // no mode adapted its capacity
		}
		if err != nil {
			return err
		}
		_, err = writeCapacityPlots(o, runs)
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "scenario-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	started := time.Now()

	if o.load {
		if err := loadBookstore(ctx, o, os.Stderr); err != nil {
			return err
		}
	}
	env, err := machine(ctx, o)
	if err != nil {
		return err
	}
	o.dbPID = env.DBPID
	if o.backendCPUs < 0 {
		o.backendCPUs = env.CPUs
		if n := countCPUs(env.DBCPUs); n > 0 {
			o.backendCPUs = n
		}
	}
	settings := proxySettings{Binary: o.gatekeeper, Builds: o.builds, Primary: o.primary, Replicas: o.replicas,
		User: o.user, Password: o.password, Capacity: o.capacity,
		QueueTimeout: o.queueTimeout, Reserve: o.reserve, Weight: o.weight, TypeKey: o.typeKey,
		BackendCPUs: o.backendCPUs, CacheConfig: o.cacheConfig, Dir: dir, KeepState: o.keepState, Etcd: o.etcd}
	if o.capacity == 0 {
		if err := calibrateModes(ctx, o, settings, o.modes); err != nil {
			return err
		}
	}

	var runs []runResult
	// Client counts outer, then the repeats, modes inner in reverse order every other time,
	// so that drift in the machine falls on every mode alike and the repeats of a cell are
	// measured close together with the other modes'.
	turn := 0
	orderOf := func() []mode {
		order := slices.Clone(o.modes)
		if turn%2 == 1 {
			slices.Reverse(order)
		}
		turn++
		return order
	}
	// one measures mode m in round round of a cell and keeps the run.
	one := func(m mode, cfg bookstore.Config, loop string, round int, cell string) error {
		cfg.Seed = o.seed + int64(round-1)
		r, err := measure(ctx, o, settings, m, cfg)
		if err != nil {
			return err
		}
		r.Loop, r.Round = loop, round
		runs = append(runs, r)
		fmt.Fprintf(os.Stderr, "%-14s %s, run %d: %s\n", m.Name, cell, round, r.summary())
		return nil
	}
	for _, n := range o.clients {
		for round := 1; round <= o.repeat; round++ {
			for _, m := range orderOf() {
				cfg := o.workload()
				cfg.Clients = n
				if err := one(m, cfg, "closed", round, fmt.Sprintf("closed %4d clients", n)); err != nil {
					return err
				}
			}
		}
	}
	if o.openFactor > 0 || o.openRate > 0 {
		rate := o.openRate
		if rate <= 0 {
			rate = o.openFactor * capacity(medians(runs))
		}
		for round := 1; round <= o.repeat; round++ {
			for _, m := range orderOf() {
				if m.Name == "passthrough" {
					continue
				}
				cfg := o.workload()
				cfg.Rate, cfg.Clients = rate, o.openMax
				if err := one(m, cfg, "open", round, fmt.Sprintf("open %6.1f/s", rate)); err != nil {
					return err
				}
			}
		}
	}
	env.Elapsed = time.Since(started).Round(time.Second)
	return writeResults(o, env, runs)
}

// capacity is the database's capacity for the mix: the highest closed-loop throughput fifo
// admission reached. Fifo serves in arrival order and refuses nothing below its queue timeout,
// so what it completes keeps the workload's mix, and admission keeps the database from the
// thrashing that holds direct lower; sjf reaches more only by leaving heavy interactions in
// its queue, which changes the mix. Without a fifo run, direct's highest; without either,
// any mode's.
func capacity(runs []runResult) float64 {
	peak := func(mode string) float64 {
		if p := peakOf(runs, mode); p.Result != nil {
			return p.Result.Total.Throughput
		}
		return 0
	}
	var any float64
	for _, r := range runs {
		if r.Loop == "closed" {
			any = max(any, r.Result.Total.Throughput)
		}
	}
	return cmp.Or(peak("fifo"), peak("direct"), any)
}

// loadBookstore creates the database if need be and loads the bookstore into it afresh.
func loadBookstore(ctx context.Context, o options, progress io.Writer) error {
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr = o.user, o.password, "tcp", o.primary
	root, err := sql.Open("mysql", c.FormatDSN())
	if err != nil {
		return err
	}
	_, err = root.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+o.database)
	root.Close()
	if err != nil {
		return err
	}
	db, err := sql.Open("mysql", o.dsn(o.primary))
	if err != nil {
		return err
	}
	defer db.Close()
	t0 := time.Now()
	for try := 1; ; try++ {
		err := bookstore.Load(ctx, db, o.scale, progress)
		var me *mysql.MySQLError
		if err == nil {
			break
		}
		if try == 3 || !errors.As(err, &me) || me.Number != 1213 {
			return fmt.Errorf("load: %w", err)
		}
		// A run's last transactions may still be ending on the server (their clients were
		// cut at the end of the run): a deadlock with them is retried, not the sweep's end.
		fmt.Fprintf(progress, "load: %v; loading again\n", err)
		time.Sleep(2 * time.Second)
	}
	if o.routes() {
		if err := waitReplicas(ctx, o, db); err != nil {
			return err
		}
	}
	fmt.Fprintf(progress, "loaded %d items, %d customers in %s\n", o.scale.Items, o.scale.Customers, time.Since(t0).Round(time.Second))
	return nil
}

// routes tells whether a mode routes reads to replicas.
func (o options) routes() bool {
	return slices.ContainsFunc(o.modes, func(m mode) bool { return m.Replicas > 0 })
}

// waitReplicas waits until every replica has applied what the primary (db) has, so that a
// run routing reads starts on a bookstore the replicas have whole.
func waitReplicas(ctx context.Context, o options, db *sql.DB) error {
	var pos string
	if err := db.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		return fmt.Errorf("the primary's position: %w", err)
	}
	for _, r := range o.replicas {
		c := mysql.NewConfig()
		c.User, c.Passwd, c.Net, c.Addr = o.user, o.password, "tcp", r
		rdb, err := sql.Open("mysql", c.FormatDSN())
		if err != nil {
			return err
		}
		var got int
		err = rdb.QueryRowContext(ctx, "SELECT MASTER_GTID_WAIT(?, 600)", pos).Scan(&got)
		rdb.Close()
		if err != nil || got != 0 {
			return fmt.Errorf("replica %s did not apply the loaded bookstore (%s) within 10 minutes: %v; is it replicating?", r, pos, err)
		}
	}
	return nil
}

// workload is the bookstore configuration common to every run.
func (o options) workload() bookstore.Config {
	return bookstore.Config{Mix: o.mix, Think: o.think, Duration: o.duration, Timeout: o.timeout, Seed: o.seed}
}

// connect points cfg's clients at addrs: one server, or a fleet of proxies that the
// clients are dealt to in turn, client i to addrs[i%len(addrs)].
func (o options) connect(cfg *bookstore.Config, addrs []string) {
	if len(addrs) == 1 {
		cfg.DSN, cfg.DSNs = o.dsn(addrs[0]), nil
		return
	}
	cfg.DSN, cfg.DSNs = "", make([]string, len(addrs))
	for i, a := range addrs {
		cfg.DSNs[i] = o.dsn(a)
	}
}

// measure runs one mode: the proxies (if any) are started fresh, warmed up, and measured.
func measure(ctx context.Context, o options, s proxySettings, m mode, cfg bookstore.Config) (runResult, error) {
	r := runResult{Mode: m.Name, Clients: cfg.Clients, Rate: cfg.Rate}
	if o.reload {
		// The runs add orders, and Best Sellers ranks the items of the latest ones: without
		// a fresh load, what a run costs would depend on the runs before it.
		if err := loadBookstore(ctx, o, io.Discard); err != nil {
			return r, err
		}
	}
	addrs := []string{o.primary}
	var proxies proxyGroup
	if m.Proxy {
		if m.Fleet {
			s.FleetPrefix = fleetPrefix(time.Now())
		}
		var err error
		if proxies, err = startProxies(ctx, m, s); err != nil {
			return r, err
		}
		defer proxies.stop()
		addrs = proxies.listens()
	}
	o.connect(&cfg, addrs)
	// One run: the warm-up and then the measured period, metered from its start. The
	// clients carry on into it, so it does not start with every client at once.
	cfg.Warmup = o.warmup
	meter := cpuMeter{dbPID: o.dbPID, proxyPIDs: proxies.pids()}
	var before busy
	var beforeErr error
	var cpu <-chan cpuUse
	stop := make(chan struct{})
	var measuring atomic.Int64 // when the measured period began, in Unix nanoseconds
	var trace <-chan []capacitySample
	if m.Auto {
		trace = traceCapacity(proxies.admins(), &measuring, cfg.Duration, stop)
	}
	cfg.OnMeasure = func() {
		if proxies != nil {
			before, beforeErr = proxies.types()
		}
		measuring.Store(time.Now().UnixNano())
		cpu = meterPeriod(meter, cfg.Duration, stop)
	}
	var err error
	r.Result, err = bookstore.Run(ctx, cfg)
	close(stop)
	if err != nil {
		return r, fmt.Errorf("%s: %w", m.Name, err)
	}
	r.CPU = <-cpu
	if trace != nil {
		r.Capacity = <-trace
		if f, ok := figuresOf(r.Capacity); ok && len(proxies) > 1 {
			fmt.Fprintf(os.Stderr, "%-14s %s\n", m.Name, f.summary())
		}
	}
	if beforeErr != nil {
		return r, beforeErr
	}
	var after busy
	if proxies != nil {
		if after, err = proxies.types(); err != nil {
			return r, err
		}
	}
	r.ExecMS = map[string]float64{}
	for _, c := range r.Result.Classes {
		r.ExecMS[c.Name] = execMS(before, after, c.Name, c.Completed+c.Failed+c.TimedOut)
	}
	for i, p := range proxies {
		name := m.Name
		if len(proxies) > 1 {
			name = fmt.Sprintf("%s %d", m.Name, i+1)
		}
		if m.Cache {
			if line, err := p.cacheSummary(); err == nil {
				fmt.Fprintf(os.Stderr, "%-14s %s (warm-up included)\n", name, line)
			}
		}
		if m.Replicas > 0 {
			if share, n, err := p.replicaShare(o.primary); err == nil {
				fmt.Fprintf(os.Stderr, "%-14s %.1f%% of %d reads on replicas (warm-up included)\n", name, 100*share, n)
			}
		}
	}
	return r, ctx.Err()
}
