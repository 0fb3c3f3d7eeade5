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
	"github.com/gatekeeperdb/gatekeeper/internal/replicas"
	"github.com/gatekeeperdb/gatekeeper/internal/sdnotify"
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
		load := func() (config.Config, error) {
			return config.Load(config.Sources{
				File:  file,
				Flags: flags,
				FlagKeys: map[string]string{
					"listen":       "listen",
					"admin-listen": "admin.listen",
					"primary":      "backends.primary",
					"replica":      "backends.replicas",
				},
			})
		}
		cfg, err := load()
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		return serve(ctx, cfg, load, newLogger(cfg.Log))
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
// metrics (proxy.New registers those), the monitor's (registerThreadsRunning) and the
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
// the configuration for a reload.
func serve(ctx context.Context, cfg config.Config, load func() (config.Config, error), log *slog.Logger) error {
	_ = mysql.SetLogger(driverLogger{log})
	costs, err := newCostTable(cfg.Estimator)
	if err != nil {
		return err
	}
	state := stateFile(cfg.Estimator)
	loadEstimates(costs, state, log)
	reg := prometheus.NewRegistry()
	registerMetrics(reg, costs, cfg.Estimator.MetricsTopTypes)

	srv, err := proxy.New(cfg, log, reg, costs)
	if err != nil {
		return err
	}
	if n, fixed := cfg.FixedThreads(); fixed {
		runtime.GOMAXPROCS(n)
	} else {
		procsCtx, stopProcs := context.WithCancel(context.Background())
		defer stopProcs()
		go procs.Run(procsCtx, procs.ProcessCPU, log) // ends with serve
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	var threads *monitor.Poller
	if cfg.Monitor.User != "" {
		threads, err = monitor.New(cfg.Backends.Primary, cfg.Monitor.User, cfg.Monitor.Password, cfg.Monitor.Interval, log)
		if err != nil {
			ln.Close()
			return err
		}
		monCtx, stopMonitor := context.WithCancel(context.Background())
		defer stopMonitor()
		go threads.Run(monCtx) // ends with serve
		registerThreadsRunning(reg, threads)
		srv.SetThreadsRunning(func() (float64, bool) {
			v, at, err := threads.ThreadsRunning()
			return v, err == nil && !at.IsZero()
		})
	}
	if router := srv.Router(); router != nil {
		routeCtx, stopRouting := context.WithCancel(context.Background())
		defer stopRouting()
		go func() { // ends with serve
			if err := router.Run(routeCtx); err != nil {
				log.Error("replica monitors failed: reads stay on the primary", "err", err)
			}
		}()
		log.Info("reads go to replicas", "replicas", cfg.Backends.Replicas, "consistency", cfg.Routing.Consistency,
			"balance", cfg.Routing.Balance)
	} else if len(cfg.Backends.Replicas) > 0 {
		log.Warn("backends.replicas are not used: reads go to replicas in pooled mode with routing.enabled",
			"mode", cfg.Mode, "routing_enabled", cfg.Routing.Enabled)
	}
	rl := &reloader{load: load, cur: cfg, srv: srv, costs: costs, log: log, enabled: cfg.Admission.Enabled}
	if cfg.Mode == config.ModePooled || cfg.Auth.FromBackend {
		accCtx, stopAccounts := context.WithCancel(context.Background())
		defer stopAccounts()
		acc, err := newAccounts(accCtx, cfg, srv.Accounts(nil), log)
		if err != nil {
			ln.Close()
			return err
		}
		defer acc.close()
		srv.Accounts(acc.refresh())
		rl.accounts = acc
	}

	primary := replicas.NewProbe(cfg.Backends.Primary, cfg.Backends.ConnectTimeout, 2*time.Second)
	draining := make(chan struct{}) // closed when the drain begins: no longer ready
	var adminSrv *http.Server
	if cfg.Admin.Listen != "" {
		aln, err := net.Listen("tcp", cfg.Admin.Listen)
		if err != nil {
			ln.Close()
			return fmt.Errorf("admin listen: %w", err)
		}
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
			Reload:   rl.reload,
			Pprof:    cfg.Admin.Pprof,
		})
		adminSrv = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		go func() { // ends when adminSrv is shut down
			if err := adminSrv.Serve(aln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("admin listener failed", "err", err)
			}
		}()
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }() // ends when Shutdown closes ln
	log.Info("gatekeeper started", "version", buildVersion(), "listen", ln.Addr().String(),
		"admin", cfg.Admin.Listen, "primary", cfg.Backends.Primary, "mode", cfg.Mode,
		"admission", cfg.Admission.Enabled)
	if _, err := sdnotify.Send(sdnotify.Ready); err != nil {
		log.Warn("cannot notify systemd", "err", err)
	}

	var saveTick <-chan time.Time
	if state != "" && cfg.Estimator.SaveInterval > 0 {
		t := time.NewTicker(cfg.Estimator.SaveInterval)
		defer t.Stop()
		saveTick = t.C
	}
	save := func() {
		if state == "" {
			return
		}
		if err := saveEstimates(costs, state); err != nil {
			log.Warn("cannot save estimates", "file", state, "err", err)
		}
	}

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	var runErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-hup:
			_ = rl.reload() // logged

		case <-saveTick:
			save()
		case err := <-serveErr:
			runErr = fmt.Errorf("accept: %w", err)
			break loop
		}
	}

	close(draining)
	_, _ = sdnotify.Send(sdnotify.Stopping)
	log.Info("draining", "connections", srv.Open(), "timeout", cfg.Shutdown.DrainTimeout)
	drainCtx, cancel := context.WithTimeout(context.Background(), cfg.Shutdown.DrainTimeout)
	defer cancel()
	if err := srv.Shutdown(drainCtx); err != nil {
		log.Warn("drain incomplete", "err", err)
	}
	if adminSrv != nil {
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer scancel()
		_ = adminSrv.Shutdown(sctx)
	}
	save()
	log.Info("stopped")
	return runErr
}
