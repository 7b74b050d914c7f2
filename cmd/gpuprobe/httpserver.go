package main

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/coreos/go-systemd/v22/activation"
	"github.com/mdlayher/vsock"

	"github.com/gpuprobe/gpuprobe/daemonapi"
	"github.com/gpuprobe/gpuprobe/internal/httpserve"
)

// httpFlags set the daemon's HTTP hardening (internal/httpserve says why
// each bound is there).
type httpFlags struct {
	exposeProcessDetails bool
	maxInFlight          int
	maxConns             int
	maxIdle              int
	reserved             int
	maxPerClient         int
	limits               httpserve.Limits // timeouts and sizes (tests shorten them)
}

func (f *httpFlags) register(cmd *kingpin.CmdClause) {
	f.limits = httpserve.DefaultLimits
	cmd.Flag("web.expose-process-details", "Also list GPU processes' command lines on /report (default: pid, user and executable name only; arguments can hold secrets and /report is unauthenticated unless --web.config.file sets auth).").BoolVar(&f.exposeProcessDetails)
	cmd.Flag("web.max-requests", "Requests served at once; more are answered 503 at once (0: no limit).").Default("40").IntVar(&f.maxInFlight)
	cmd.Flag("web.max-connections", "Open connections at once; when full, the oldest idle keep-alive connection (then one that has not sent its request in 2 s) is closed to admit a new one, else the new one is closed on accept.").Default("256").IntVar(&f.maxConns)
	cmd.Flag("web.max-idle-connections", "Idle keep-alive connections kept; beyond, the oldest idle is closed.").Default("64").IntVar(&f.maxIdle)
	cmd.Flag("web.reserved-connections", "Of --web.max-connections, places kept for clients that hold no connection yet (0: none).").Default("16").IntVar(&f.reserved)
	cmd.Flag("web.max-connections-per-client", "Open connections one source address may hold (0: no limit). Behind a proxy or NAT all clients share its address, and this limit.").Default("32").IntVar(&f.maxPerClient)
	cmd.Flag("web.idle-timeout", "Close keep-alive connections idle this long.").Default(httpserve.DefaultLimits.IdleTimeout.String()).DurationVar(&f.limits.IdleTimeout)
}

func (f *httpFlags) validate() error {
	if f.maxInFlight < 0 {
		return fmt.Errorf("--web.max-requests must not be negative")
	}
	if f.maxConns < 1 {
		return fmt.Errorf("--web.max-connections must be at least 1")
	}
	if f.maxIdle < 1 || f.maxIdle > f.maxConns {
		return fmt.Errorf("--web.max-idle-connections must be between 1 and --web.max-connections (%d)", f.maxConns)
	}
	if f.reserved < 0 || f.reserved >= f.maxConns {
		return fmt.Errorf("--web.reserved-connections must be between 0 and --web.max-connections - 1 (%d)", f.maxConns-1)
	}
	if f.maxPerClient < 0 || f.maxPerClient > f.maxConns {
		return fmt.Errorf("--web.max-connections-per-client must be between 0 (no limit) and --web.max-connections (%d)", f.maxConns)
	}
	if f.limits.IdleTimeout <= 0 {
		return fmt.Errorf("--web.idle-timeout must be positive")
	}
	return nil
}

// reservedPaths are served by the daemon itself.
var reservedPaths = []string{"/", "/report", "/healthz"}

// validateTelemetryPath checks --web.telemetry-path before it reaches the
// mux, which panics on a duplicate or malformed pattern ("/", "/report",
// "", "/a b" all did at start-up).
func validateTelemetryPath(p string) error {
	if p == "" || p[0] != '/' || len(p) == 1 {
		return fmt.Errorf("--web.telemetry-path %q: want an absolute path below / such as /metrics", p)
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/-_.~", r)) {
			return fmt.Errorf("--web.telemetry-path %q: %q is not allowed (letters, digits and / - _ . ~ only)", p, r)
		}
	}
	if strings.Contains(p, "//") || strings.Contains(p, "/./") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") || strings.HasSuffix(p, "/.") {
		return fmt.Errorf("--web.telemetry-path %q: not a clean path", p)
	}
	for _, r := range reservedPaths {
		if strings.TrimSuffix(p, "/") == r || p == r {
			return fmt.Errorf("--web.telemetry-path %q: already serves the daemon's %s", p, r)
		}
	}
	// The job API owns its whole tree: its own pattern panicked the mux,
	// and a path below it would shadow a job's ID.
	if jobs := daemonapi.JobPath; p == strings.TrimSuffix(jobs, "/") || strings.HasPrefix(p, jobs) {
		return fmt.Errorf("--web.telemetry-path %q: already serves the daemon's %s (job API)", p, jobs)
	}
	return nil
}

// validateListenAddresses refuses an empty --web.listen-address: Go reads
// "" as ":0", a random port on every interface (issue 32).
func validateListenAddresses(addrs []string) error {
	if len(addrs) == 0 {
		return fmt.Errorf("--web.listen-address: none given (want host:port, such as :%s or 127.0.0.1:%s)", DefaultPort, DefaultPort)
	}
	for _, a := range addrs {
		if strings.TrimSpace(a) == "" {
			return fmt.Errorf("--web.listen-address %q: empty (it would listen on a random port on every interface); want host:port, such as :%s", a, DefaultPort)
		}
	}
	return nil
}

// newHTTPServer builds the daemon's hardened server from the flags; serve
// it on listeners wrapped by its Listener (listen does).
func newHTTPServer(h http.Handler, f *httpFlags) *httpserve.Server {
	o := httpserve.Options{MaxInFlight: f.maxInFlight, MaxConns: f.maxConns, MaxIdle: f.maxIdle,
		Reserved: f.reserved, MaxPerClient: f.maxPerClient, Limits: f.limits}
	if o.Reserved == 0 {
		o.Reserved = -1 // the flag's 0 is none; Options' 0 is the default
	}
	if o.MaxPerClient == 0 {
		o.MaxPerClient = -1
	}
	return httpserve.New(h, o)
}

// listen opens the listeners exporter-toolkit's ListenAndServe would
// (systemd sockets, vsock:// or TCP addresses), each wrapped by the
// server's connection guard; close them when serving ends.
func listen(srv *httpserve.Server, addrs []string, systemd bool) ([]net.Listener, error) {
	var ls []net.Listener
	if systemd {
		got, err := activation.Listeners()
		if err != nil {
			return nil, err
		}
		for _, l := range got {
			if l != nil {
				ls = append(ls, srv.Listener(l))
			}
		}
		if len(ls) == 0 {
			return nil, fmt.Errorf("no socket activation file descriptors found")
		}
		return ls, nil
	}
	for _, a := range addrs {
		var l net.Listener
		var err error
		if strings.HasPrefix(a, "vsock://") {
			var port uint64
			_, p, perr := net.SplitHostPort(strings.TrimPrefix(a, "vsock://"))
			if perr == nil {
				port, perr = strconv.ParseUint(p, 10, 32)
			}
			if perr != nil {
				err = fmt.Errorf("invalid vsock address %q: %v", a, perr)
			} else {
				l, err = vsock.Listen(uint32(port), nil)
			}
		} else {
			l, err = net.Listen("tcp", a)
		}
		if err != nil {
			for _, l := range ls {
				l.Close()
			}
			return nil, err
		}
		ls = append(ls, srv.Listener(l))
	}
	return ls, nil
}
