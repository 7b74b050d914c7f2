package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"go.uber.org/zap"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/collect"
	"github.com/gpuprobe/gpuprobe/daemonapi"
	"github.com/gpuprobe/gpuprobe/exporter"
	"github.com/gpuprobe/gpuprobe/jobrecord"
	"github.com/gpuprobe/gpuprobe/nvml"
	"github.com/gpuprobe/gpuprobe/report"
	"github.com/gpuprobe/gpuprobe/state"
)

// DefaultPort is the daemon's port (daemonapi says why 10495).
const DefaultPort = daemonapi.DefaultPort

func init() { registrars = append(registrars, registerServe) }

type serveFlags struct {
	collect     collectFlags
	interval    time.Duration
	perLink     bool
	configFile  string
	listen      []string
	systemd     bool
	webConfig   string
	metricsPath string
	http        httpFlags // httpserver.go
	// jobs is the record of jobs seen on the GPUs (served by daemonapi.JobHandler).
	jobs *jobrecord.Book
	// nvml holds the real library's initialisation for the daemon's life.
	nvml *nvml.Session
}

func registerServe(c *cli) {
	f := &serveFlags{}
	cmd := c.app.Command("serve", "Run as a daemon: collect and judge on an interval, serve Prometheus metrics and the latest report.")
	f.collect.register(cmd, "10s")
	cmd.Flag("collect.interval", "Time between collections.").Default("15s").DurationVar(&f.interval)
	cmd.Flag("collector.nvlink.per-link", "Export per-NVLink series (18 links × 5 series per H100).").BoolVar(&f.perLink)
	cmd.Flag("config", "YAML thresholds and expectations, as for 'check'.").PlaceHolder("FILE").StringVar(&f.configFile)
	cmd.Flag("web.listen-address", "Addresses to listen on (repeatable).").Default(":" + DefaultPort).StringsVar(&f.listen)
	cmd.Flag("web.systemd-socket", "Use systemd socket activation listeners instead of port listeners.").BoolVar(&f.systemd)
	cmd.Flag("web.config.file", "Path to a web configuration file for TLS and basic auth (exporter-toolkit format).").PlaceHolder("FILE").StringVar(&f.webConfig)
	cmd.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&f.metricsPath)
	f.http.register(cmd)
	cmd.Action(func(*kingpin.ParseContext) error { return c.runServe(f) })
}

// daemons numbers the daemons of this process (tests build many), so that
// each keys its simulated library apart.
var daemons atomic.Int64

// newDaemon wires collection, judging and the exporter; tests use it without HTTP.
func (c *cli) newDaemon(f *serveFlags) (*exporter.Daemon, *check.Config, error) {
	// --timeout bounds the config read too (a FIFO as --config took the
	// config's own 10 s cap whatever --timeout said, issue 32).
	ctx := context.Background()
	if f.collect.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.collect.timeout)
		defer cancel()
	}
	cfg, err := c.loadConfig(ctx, f.configFile, false)
	if err != nil {
		return nil, nil, err
	}
	if f.interval <= 0 {
		return nil, nil, fmt.Errorf("--collect.interval must be positive")
	}
	if _, err := f.collect.options(); err != nil {
		return nil, nil, err
	}
	checks, err := check.Select(cfg.Checks, cfg.Skip)
	if err != nil {
		return nil, nil, err
	}
	var nodeChecks []check.Check
	for _, ch := range checks {
		if ch.Scope == check.NodeScope {
			nodeChecks = append(nodeChecks, ch)
		}
	}
	// One hung NVML call must not expire the whole cycle: with a call
	// deadline as long as the cycle's (the defaults: 10 s and 10 s) the
	// first hang lost every check to "error" and served stale data. Each
	// call gets at most half the cycle; the hung GPU is then an error of
	// its own and the next cycles refuse it at once (deadline.Do).
	if cycle := min(f.collect.timeout, f.interval); f.collect.callTimeout > cycle/2 {
		f.collect.callTimeout = cycle / 2
	}
	f.jobs = jobrecord.New(0, 0, 0)
	f.nvml = nvml.NewSession(nvml.Open, f.collect.callTimeout)
	simKey := fmt.Sprintf("simulated-nvml#%d", daemons.Add(1))
	exp := exporter.New(f.perLink)
	exp.XIDs.Config = cfg.XID
	d := &exporter.Daemon{
		Exporter: exp,
		Config:   cfg,
		Interval: f.interval,
		Timeout:  min(f.collect.timeout, f.interval),
		Collect: func(ctx context.Context) *state.Node {
			// Re-read every cycle: --simulate-file may have changed.
			o, err := f.collect.options()
			if err != nil {
				c.log.Warn("collection options", zap.Error(err))
				o = collect.Options{CallTimeout: f.collect.callTimeout, Version: version.Version}
			}
			o.ProcessCommandLines = f.http.exposeProcessDetails
			o.NVMLSession = f.nvml // unused under simulation
			if o.Sources.Simulated != "" {
				// The simulated GPUs are the same devices every cycle, though
				// each cycle opens a fresh mock: a call hung in one cycle
				// must be refused in the next (deadline.Do), not made again
				// (one more stuck goroutine per cycle). Keyed by this daemon
				// and the spec, which --simulate-file may change.
				o.NVMLName = simKey + ":" + o.Sources.Simulated
			}
			return collect.Node(ctx, o)
		},
		Judge: func(ctx context.Context, n *state.Node) []check.Result {
			return check.Run(ctx, n, cfg, nodeChecks)
		},
		OnCycle: func(s *exporter.Snapshot) {
			feedXIDs(exp.XIDs, s.Node)
			if s.Success {
				f.jobs.Observe(s.Node)
			}
			if !s.Success {
				c.log.Warn("collection overran its deadline; serving the previous data as stale",
					zap.String("source", s.Failing), zap.Duration("duration", s.Duration))
			}
		},
	}
	return d, cfg, nil
}

// watchXIDEvents counts XIDs from NVML's event set for the daemon's life.
// Where events are unsupported the daemon falls back to the kernel log,
// which every cycle re-reads and the counter de-duplicates by record number.
func (c *cli) watchXIDEvents(ctx context.Context, e *exporter.Exporter) {
	lib, err := nvml.Open()
	if err != nil {
		c.log.Info("no NVML event watcher; counting XIDs from the kernel log", zap.Error(err))
		return
	}
	e.XIDs.NVMLEvents.Store(true)
	defer e.XIDs.NVMLEvents.Store(false)
	err = nvml.WatchXIDs(ctx, lib, func(ev nvml.XIDEvent) {
		e.XIDs.Add(exporter.GPU{Index: fmt.Sprint(ev.Index), UUID: ev.UUID, PCIBusID: ev.PCIBusID}, ev.Code, ev.At, 0)
	})
	if err != nil {
		c.log.Info("NVML event watcher stopped; counting XIDs from the kernel log", zap.Error(err))
	}
}

// feedXIDs counts the kernel-log XIDs of a cycle; the counter drops records
// it has already seen, so re-reading the ring buffer never double-counts.
func feedXIDs(x *exporter.XIDCounter, n *state.Node) {
	if n == nil || n.Kernel == nil || x.NVMLEvents.Load() {
		return
	}
	for _, ev := range n.Kernel.XIDs {
		g := exporter.GPU{}
		if n.NVML != nil {
			for i := range n.NVML.GPUs {
				if ev.MatchGPU(n.NVML.GPUs[i].PCIBusID) {
					gp := &n.NVML.GPUs[i]
					g = exporter.GPU{Index: fmt.Sprint(gp.Index), UUID: gp.UUID, PCIBusID: gp.PCIBusID}
				}
			}
		}
		if g.PCIBusID == "" {
			g.PCIBusID = ev.BusID
		}
		x.Add(g, ev.Code, ev.Time, ev.Seq)
	}
}

func (c *cli) runServe(f *serveFlags) error {
	tuneRuntime(c.getenv)
	d, _, err := c.newDaemon(f)
	if err != nil {
		return c.usageError("%v", err)
	}
	if err := f.http.validate(); err != nil {
		return c.usageError("%v", err)
	}
	if !f.systemd {
		if err := validateListenAddresses(f.listen); err != nil {
			return c.usageError("%v", err)
		}
	}
	mux, err := c.serveMux(f, d)
	if err != nil {
		return c.usageError("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// SIGHUP re-reads --web.config.file (below); without this Go's default
	// would end the daemon.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	// The web config and its TLS files are read here, bounded, and the
	// toolkit is given a private snapshot of them, never the operator's
	// paths, which it would read unbounded on every request and handshake
	// (webconfig.go; issue 32).
	snap, err := newWebSnapshot(ctx, f.webConfig, snapshotDirBase(c.getenv))
	if err != nil {
		f.nvml.Close()
		return c.usageError("%v", err)
	}
	defer snap.Remove()
	webConfig := f.webConfig
	if snap != nil {
		webConfig = snap.Path()
	}
	go c.reloadOnHUP(ctx, hup, snap)
	if f.collect.simulate == "" && f.collect.simulateFile == "" {
		go c.watchXIDEvents(ctx, d.Exporter)
	}
	go d.Run(ctx)

	srv := newHTTPServer(mux, &f.http)
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	c.log.Info("serving", zap.Strings("listen", f.listen), zap.Duration("interval", f.interval))
	webFlags := &web.FlagConfig{WebListenAddresses: &f.listen, WebSystemdSocket: &f.systemd, WebConfigFile: &webConfig}
	// The listeners are opened here, not by web.ListenAndServe, so that the
	// connection guard admits each connection on accept (issue 32).
	ls, err := listen(srv, f.listen, f.systemd)
	if err == nil {
		err = web.ServeMultiple(ls, srv.Server, webFlags, slogFor(c.log))
		for _, l := range ls {
			l.Close()
		}
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		c.exit = exitUsage
		fmt.Fprintf(c.stderr, "%s: serve: %v\n", programName, err)
	}
	f.nvml.Close()
	return nil
}

// serveMux is the daemon's HTTP surface: metrics from memory, the latest
// report, liveness, and a landing page.
func (c *cli) serveMux(f *serveFlags, d *exporter.Daemon) (*http.ServeMux, error) {
	if err := validateTelemetryPath(f.metricsPath); err != nil {
		return nil, err
	}
	metrics, _ := c.metricsHandler(d)
	mux := http.NewServeMux()
	mux.Handle(f.metricsPath, staleHeader(d.Exporter, metrics))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/report", func(w http.ResponseWriter, _ *http.Request) { serveReport(w, d.Exporter, f.http.exposeProcessDetails) })
	mux.Handle(daemonapi.JobPath, daemonapi.JobHandler(f.jobs, f.http.exposeProcessDetails))
	mux.Handle("/", landingPage(d.Exporter, f.metricsPath))
	return mux, nil
}

// staleHeader tells an HTTP client of /metrics (a person with curl, a
// proxy) what gpuprobe_collect_stale tells Prometheus, as /report does: the
// data served is an older collection's because the last one failed. It
// stays set for as long as collections keep failing.
func staleHeader(e *exporter.Exporter, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := e.Latest(); s != nil {
			w.Header().Set("X-Gpuprobe-Stale", fmt.Sprint(s.Stale))
		}
		h.ServeHTTP(w, r)
	})
}

// serveReport writes the latest result document, the same JSON 'check
// --format json' prints, with the snapshot's freshness in headers. Results
// name processes by pid, user and executable only; with
// --web.expose-process-details the GPU processes' command lines are added
// under "processes".
func serveReport(w http.ResponseWriter, e *exporter.Exporter, processDetails bool) {
	s := e.Latest()
	if s == nil || s.Doc == nil {
		http.Error(w, "no collection has finished yet", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Last-Modified", s.At.UTC().Format(http.TimeFormat))
	w.Header().Set("X-Gpuprobe-Stale", fmt.Sprint(s.Stale))
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if processDetails {
		enc.Encode(struct {
			*report.Document
			Processes []gpuProcess `json:"processes"`
		}{s.Doc, gpuProcesses(s.Node)})
		return
	}
	enc.Encode(s.Doc)
}

// gpuProcess is one GPU process as --web.expose-process-details lists it.
type gpuProcess struct {
	GPU int `json:"gpu"`
	state.Process
}

func gpuProcesses(n *state.Node) []gpuProcess {
	out := []gpuProcess{}
	if n == nil || n.NVML == nil {
		return out
	}
	for _, g := range n.NVML.GPUs {
		for _, p := range g.Processes {
			out = append(out, gpuProcess{g.Index, p})
		}
	}
	return out
}

// reloadOnHUP takes a new snapshot of --web.config.file on each SIGHUP:
// how a renewed certificate or changed password gets in without a restart.
// A failed read keeps the running snapshot.
func (c *cli) reloadOnHUP(ctx context.Context, hup <-chan os.Signal, snap *webSnapshot) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		if snap == nil {
			c.log.Info("SIGHUP: no --web.config.file to reload")
			continue
		}
		if err := snap.Reload(ctx); err != nil {
			c.log.Warn("SIGHUP: web config not reloaded; serving the previous snapshot", zap.Error(err))
			continue
		}
		c.log.Info("SIGHUP: web config reloaded", zap.String("file", snap.src))
	}
}
