package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
	"github.com/gatekeeperdb/gatekeeper/internal/monitor"
	"github.com/gatekeeperdb/gatekeeper/internal/procs"
	"github.com/gatekeeperdb/gatekeeper/internal/proxy"
	"github.com/gatekeeperdb/gatekeeper/internal/sdnotify"
	"github.com/gatekeeperdb/gatekeeper/internal/wiring"
)

func newServeCommand() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the proxy",
		Long: "Runs the proxy until SIGTERM or SIGINT, then drains: stops accepting, lets\n" +
			"in-flight statements and open transactions finish (shutdown.drain_timeout), closes.\n" +
			"Every configuration key can also be set as GATEKEEPER_<KEY>, dots as underscores.",
		Args: cobra.NoArgs,
	}
	flags := cmd.Flags()
	flags.StringVar(&file, "config", "", "YAML configuration file")
	flags.String("listen", "", "address clients connect to (listen; default 127.0.0.1:6033)")
	flags.String("admin-listen", "", "admin HTTP address (admin.listen; default 127.0.0.1:6080)")
	flags.String("primary", "", "primary backend host:port (backends.primary; default 127.0.0.1:3306)")
	flags.StringArray("replica", nil, "replica backend host:port, repeatable (backends.replicas)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		shared := &sharedSettings{}
		load := func() (config.Config, error) {
			return config.Load(shared.sources(config.Sources{
				File:  file,
				Flags: flags,
				FlagKeys: map[string]string{
					"listen":       "listen",
					"admin-listen": "admin.listen",
					"primary":      "backends.primary",
					"replica":      "backends.replicas",
				},
			}))
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		cfg, err := loadWithFleet(ctx, load, shared)
		if err != nil {
			return err
		}
		return serve(ctx, cfg, load, shared, newLogger(cfg.Log))
	}
	return cmd
}

// driverLogger sends go-sql-driver's own messages (about the monitor's and the accounts'
// connections) to the structured log, where they would otherwise bypass it.
type driverLogger struct{ log *slog.Logger }

func (l driverLogger) Print(v ...any) { l.log.Debug("go-sql-driver", "message", fmt.Sprint(v...)) }

func newLogger(c config.Log) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level)) // validated already
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

// registerMetrics registers what /metrics exports in every mode besides the proxy's own
// metrics (wiring.Proxy registers those), the monitor's (registerThreadsRunning) and the
// health of the admin listener (newHealthCollector): the Go runtime and the process, the
// build, and the estimator's table. docs/metrics.md lists them all.
func registerMetrics(reg prometheus.Registerer, costs *estimator.Table, topTypes int) {
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "gatekeeper_build_info",
			Help:        "Build information; always 1.",
			ConstLabels: prometheus.Labels{"version": buildVersion(), "goversion": runtime.Version()},
		}, func() float64 { return 1 }),
		estimator.NewCollector(costs, topTypes),
	)
}

// registerThreadsRunning exports the primary's Threads_running as the monitor last read it.
func registerThreadsRunning(reg prometheus.Registerer, threads *monitor.Poller) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gatekeeper_backend_threads_running",
		Help: "Threads_running of the primary, as last read with the monitor account.",
	}, func() float64 { v, _, _ := threads.ThreadsRunning(); return v }))
}

// serve runs the proxy and its admin listener until ctx ends, then drains. load re-reads
// the configuration for a reload. It reads as the daemon's parts, started in order and
// stopped in reverse: the estimates, the proxy, the listener, the monitor of the primary,
// the replicas' monitors, the accounts, the admin listener; then the loop that serves,
// reloads and saves, and the drain.
func serve(ctx context.Context, cfg config.Config, load func() (config.Config, error), shared *sharedSettings,
	log *slog.Logger) error {
	_ = mysql.SetLogger(driverLogger{log})
	loaded := cfg // what a reload compares with
	cfg = findPrimary(ctx, cfg, log)
	var bg background // what ends with serve
	defer bg.stop()
	// SIGUSR2 is taken from the start: its default would end the process before run asks
	// for a hand-over.
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)
	defer signal.Stop(usr2)
	take, err := inherit(cfg.Mode, log) // a hand-over from the process this one replaces
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	est, err := openEstimates(cfg.Estimator, log, reg, take.estimatesFile())
	if err != nil {
		return err
	}
	srv, err := wiring.Proxy(cfg, est.costs, log, reg)
	if err != nil {
		return err
	}
	est.srv = srv
	resumeCapacity(srv, capacityFile(est.loaded), log)
	runThreads(&bg, cfg, log)
	ln, aln, err := listen(cfg, take, srv)
	if err != nil {
		return err
	}
	defer ln.Close() // closed by the drain first, unless a part failed to start
	if err := startMonitor(&bg, cfg, srv, reg, log); err != nil {
		return err
	}
	startRouting(&bg, cfg, srv, log)
	startTopology(&bg, cfg, srv, log)
	rl := &reloader{load: load, cur: loaded, srv: srv, costs: est.costs, log: log, enabled: cfg.Admission.Enabled}
	if err := startAccounts(&bg, cfg, srv, rl, log); err != nil {
		return err
	}
	h := &handing{cfg: cfg, srv: srv, est: est, log: log, ln: ln, aln: aln, serveErr: make(chan error, 1),
		requests: make(chan handoverRequest), usr2: usr2, results: map[string]int{}}
	member, err := startFleet(&bg, cfg, srv, rl, shared, reg, log)
	if err != nil {
		return err
	}
	draining := make(chan struct{}) // closed when the drain begins: no longer ready
	adminSrv, err := startAdmin(cfg, aln, srv, est.costs, rl, h, fleetSource{member}, reg, draining, log)
	if err != nil {
		return err
	}
	runErr := run(ctx, h, rl, est, take, log)
	if errors.Is(runErr, errHandedOver) {
		// The new process serves; this one's connections follow it as each goes idle. The
		// learned state is the new process's to save now.
		h.finish()
		stopAdmin(adminSrv)
		log.Info("stopped")
		return nil
	}
	close(draining)
	drain(srv, adminSrv, cfg, log)
	est.save()
	log.Info("stopped")
	return runErr
}

// background holds what serve started that ends with it.
type background struct{ stops []func() }

// add runs f in a goroutine of its own until ctx, which stop cancels, ends.
func (b *background) add(f func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	b.stops = append(b.stops, cancel)
	go f(ctx) // ends at stop
}

// onStop runs f at stop.
func (b *background) onStop(f func()) { b.stops = append(b.stops, f) }

// stop ends what was started, the last first.
func (b *background) stop() {
	for i := len(b.stops) - 1; i >= 0; i-- {
		b.stops[i]()
	}
}

// estimates are the learnt costs of the request types, kept in a state file across
// restarts when estimator.state_file names one, and with them the adaptive capacity of
// srv's backends (see capacityFile).
type estimates struct {
	costs *estimator.Table
	file  string
	// loaded is where they were loaded from: file, or a hand-over's.
	loaded string
	log    *slog.Logger
	srv    capacityKeeper
}

// openEstimates returns the table of costs, loaded from its state file (or, without one,
// from handedOver, where the process this one takes over from saved them), and registers
// the metrics /metrics exports besides the proxy's.
func openEstimates(c config.Estimator, log *slog.Logger, reg prometheus.Registerer, handedOver string) (*estimates, error) {
	costs, err := newCostTable(c)
	if err != nil {
		return nil, err
	}
	e := &estimates{costs: costs, file: stateFile(c), log: log}
	e.loaded = e.file
	if e.loaded == "" {
		e.loaded = handedOver
	}
	loadEstimates(costs, e.loaded, log)
	registerMetrics(reg, costs, c.MetricsTopTypes)
	return e, nil
}

// save writes the estimates to their state file, if there is one.
func (e *estimates) save() {
	if e.file == "" {
		return
	}
	if err := saveEstimates(e.costs, e.file); err != nil {
		e.log.Warn("cannot save estimates", "file", e.file, "err", err)
	}
	if e.srv == nil {
		return
	}
	if err := saveCapacity(e.srv, capacityFile(e.file)); err != nil {
		e.log.Warn("cannot save the adaptive capacity", "file", capacityFile(e.file), "err", err)
	}
}

// runThreads fixes the proxy's threads (GOMAXPROCS), or follows the processor time the
// process may use.
func runThreads(bg *background, cfg config.Config, log *slog.Logger) {
	if n, fixed := cfg.FixedThreads(); fixed {
		runtime.GOMAXPROCS(n)
		return
	}
	bg.add(func(ctx context.Context) { procs.Run(ctx, procs.ProcessCPU, log) })
}

// startMonitor polls the primary's Threads_running with monitor.user, for the policers
// and /metrics, when a monitor account is set.
func startMonitor(bg *background, cfg config.Config, srv *proxy.Server, reg prometheus.Registerer, log *slog.Logger) error {
	if cfg.Monitor.User == "" {
		return nil
	}
	threads, err := monitor.New(cfg.Backends.Primary, cfg.Monitor.User, cfg.Monitor.Password, cfg.Monitor.Interval, log)
	if err != nil {
		return err
	}
	if t := srv.Topology(); t != nil {
		threads.Follow(t.Primary)
	}
	bg.add(threads.Run)
	registerThreadsRunning(reg, threads)
	srv.SetThreadsRunning(func() (float64, bool) {
		v, at, err := threads.ThreadsRunning()
		return v, err == nil && !at.IsZero()
	})
	return nil
}

// startRouting runs the replicas' monitors, and the binlog follower, when reads are routed.
// startTopology reads the servers' roles in the background, to find the primary and
// follow a failover, unless backends.role_interval is 0 or monitor.user is not set.
func startTopology(bg *background, cfg config.Config, srv *proxy.Server, log *slog.Logger) {
	t := srv.Topology()
	if t == nil {
		if cfg.Backends.RoleInterval > 0 && cfg.Monitor.User == "" {
			log.Warn("the servers' roles are not read, so a failover is not followed: set monitor.user (docs/failover.md)")
		}
		return
	}
	bg.add(t.Run)
	log.Info("reading the servers' roles", "servers", t.Servers(), "interval", cfg.Backends.RoleInterval,
		"buffer_timeout", cfg.Failover.BufferTimeout, "durable_acks", cfg.Failover.DurableAcks)
}

func startRouting(bg *background, cfg config.Config, srv *proxy.Server, log *slog.Logger) {
	policy := srv.Routing()
	if !cfg.Routes() {
		if len(cfg.Backends.Replicas) > 0 {
			log.Warn("backends.replicas are not used: reads go to replicas in pooled mode with routing.enabled",
				"mode", cfg.Mode, "routing_enabled", cfg.Routing.Enabled)
		}
	}
	if policy == nil {
		return
	}
	bg.add(func(ctx context.Context) {
		if err := policy.Run(ctx); err != nil {
			log.Error("replica monitors failed: reads stay on the primary", "err", err)
		}
	})
	if !cfg.Routes() {
		return // the policy keeps the version map for the result cache
	}
	log.Info("reads go to replicas", "replicas", cfg.Backends.Replicas, "consistency", cfg.Routing.Consistency,
		"strong_rule", cfg.Routing.StrongRule, "balance", cfg.Routing.Balance)
}

// startAccounts reads the accounts pooled mode and auth.from_backend log clients in with.
func startAccounts(bg *background, cfg config.Config, srv *proxy.Server, rl *reloader, log *slog.Logger) error {
	if cfg.Mode != config.ModePooled && !cfg.Auth.FromBackend {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	bg.onStop(cancel)
	var primary func() string // the primary of the moment, when roles are read
	if t := srv.Topology(); t != nil {
		primary = t.Primary
	}
	acc, err := newAccounts(ctx, cfg, srv.Accounts(nil), primary, log)
	if err != nil {
		return err
	}
	bg.onStop(acc.close)
	srv.Accounts(acc.refresh())
	rl.accounts = acc
	return nil
}

// startAdmin runs the admin listener (/metrics, health, the JSON API, reloads) unless
// admin.listen is empty, behind admin.auth and on HTTPS with admin.tls; it is no longer
// ready once draining is closed.
func startAdmin(cfg config.Config, aln net.Listener, srv *proxy.Server, costs *estimator.Table, rl *reloader, h *handing,
	fl fleetSource, reg *prometheus.Registry, draining <-chan struct{}, log *slog.Logger) (*http.Server, error) {
	if aln == nil {
		return nil, nil
	}
	guard, err := adminGuard(cfg.Admin.Auth, log)
	if err != nil {
		return nil, err
	}
	tlsConfig, err := adminTLS(cfg.Admin.TLS)
	if err != nil {
		return nil, err
	}
	for _, w := range adminWarnings(cfg.Admin) {
		log.Warn(w)
	}
	primary := newPrimaryProbe(srv.Topology(), cfg.Backends.Primary, cfg.Backends.ConnectTimeout)
	ready := admin.CheckFunc(func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-draining:
			return errors.New("shutting down")
		default:
		}
		return primary.Check(ctx)
	})
	reg.MustRegister(newHealthCollector(primary, ready))
	handler := admin.Handler(admin.Sources{
		Gatherer: reg,
		Ready:    ready,
		Types:    typesSource{table: costs, cfg: cfg.Estimator, typeKey: cfg.Classify.TypeKey},
		Queue:    queueSource{srv: srv, costs: costs, enabled: rl.admissionEnabled},
		Sessions: sessionsSource{srv: srv, primary: cfg.Backends.Primary},
		Backends: sessionsSource{srv: srv, primary: cfg.Backends.Primary},
		Cache:    cacheSource{srv: srv},
		Rules:    rulesSource{srv: srv},
		Fleet:    fl,
		Reload:   rl.reload,
		Handover: h.request,
		Writes:   writesSource{srv: srv},
		Pprof:    cfg.Admin.Pprof,
		Guard:    guard,
	})
	adminSrv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, TLSConfig: tlsConfig,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() { // ends when adminSrv is shut down
		var err error
		if tlsConfig != nil {
			err = adminSrv.ServeTLS(aln, "", "") // TLS here, not on aln, which a hand-over passes on
		} else {
			err = adminSrv.Serve(aln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin listener failed", "err", err)
		}
	}()
	return adminSrv, nil
}

// listen returns the client and admin listeners (the admin's nil without admin.listen):
// opened, or taken over from the process this one replaces.
func listen(cfg config.Config, take *takeover, srv *proxy.Server) (ln, aln net.Listener, err error) {
	if take != nil {
		return take.listeners(srv)
	}
	if ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, nil, fmt.Errorf("listen: %w", err)
	}
	if cfg.Admin.Listen == "" {
		return ln, nil, nil
	}
	if aln, err = net.Listen("tcp", cfg.Admin.Listen); err != nil {
		_ = ln.Close()
		return nil, nil, fmt.Errorf("admin listen: %w", err)
	}
	return ln, aln, nil
}

// run serves until ctx ends or accepting fails, reloading on SIGHUP, saving the estimates
// every estimator.save_interval, and handing over to a new process on SIGUSR2 or POST
// /-/handover (errHandedOver once one serves). take, when not nil, is the hand-over this
// process was started for.
func run(ctx context.Context, h *handing, rl *reloader, est *estimates, take *takeover, log *slog.Logger) error {
	srv, cfg := h.srv, h.cfg
	go func() { h.serveErr <- srv.Serve(h.ln) }() // ends when Shutdown or Detach closes ln
	log.Info("gatekeeper started", "version", buildVersion(), "listen", h.ln.Addr().String(),
		"admin", cfg.Admin.Listen, "primary", cfg.Backends.Primary, "mode", cfg.Mode,
		"admission", cfg.Admission.Enabled)
	if take != nil {
		take.serve(srv, h)
	}
	if _, err := sdnotify.Send(sdnotify.Ready); err != nil {
		log.Warn("cannot notify systemd", "err", err)
	}
	var saveTick <-chan time.Time
	if est.file != "" && cfg.Estimator.SaveInterval > 0 {
		t := time.NewTicker(cfg.Estimator.SaveInterval)
		defer t.Stop()
		saveTick = t.C
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			_ = rl.reload() // logged
		case <-h.usr2:
			if _, err := h.begin(); err == nil { // logged
				return errHandedOver
			}
		case req := <-h.requests:
			res, err := h.begin()
			req.reply <- handoverReply{res, err}
			if err == nil {
				return errHandedOver
			}
		case <-saveTick:
			est.save()
		case err := <-h.serveErr:
			return fmt.Errorf("accept: %w", err)
		}
	}
}

// drain stops accepting and lets the sessions finish for up to shutdown.drain_timeout,
// then stops the admin listener.
func drain(srv *proxy.Server, adminSrv *http.Server, cfg config.Config, log *slog.Logger) {
	_, _ = sdnotify.Send(sdnotify.Stopping)
	log.Info("draining", "connections", srv.Open(), "timeout", cfg.Shutdown.DrainTimeout)
	drainCtx, cancel := context.WithTimeout(context.Background(), cfg.Shutdown.DrainTimeout)
	defer cancel()
	if err := srv.Shutdown(drainCtx); err != nil {
		log.Warn("drain incomplete", "err", err)
	}
	stopAdmin(adminSrv)
}

// stopAdmin stops the admin listener, letting requests in progress finish for 2 s.
func stopAdmin(adminSrv *http.Server) {
	if adminSrv != nil {
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer scancel()
		_ = adminSrv.Shutdown(sctx)
	}
}
