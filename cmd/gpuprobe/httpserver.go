package main

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gpuprobe/gpuprobe/daemonapi"
	"github.com/gpuprobe/gpuprobe/internal/httpserve"
)

// httpFlags set the daemon's HTTP hardening (internal/httpserve says why
// each bound is there).
type httpFlags struct {
	exposeProcessDetails bool
	maxInFlight          int
	maxConns             int
	limits               httpserve.Limits // timeouts and sizes (tests shorten them)
}

func (f *httpFlags) register(cmd *kingpin.CmdClause) {
	f.limits = httpserve.DefaultLimits
	cmd.Flag("web.expose-process-details", "Also list GPU processes' command lines on /report (default: pid, user and executable name only; arguments can hold secrets and /report is unauthenticated unless --web.config.file sets auth).").BoolVar(&f.exposeProcessDetails)
	cmd.Flag("web.max-requests", "Requests served at once; more are answered 503 at once (0: no limit).").Default("40").IntVar(&f.maxInFlight)
	cmd.Flag("web.max-connections", "Open connections at once; more are closed on accept.").Default("256").IntVar(&f.maxConns)
	cmd.Flag("web.idle-timeout", "Close keep-alive connections idle this long.").Default(httpserve.DefaultLimits.IdleTimeout.String()).DurationVar(&f.limits.IdleTimeout)
}

func (f *httpFlags) validate() error {
	if f.maxInFlight < 0 {
		return fmt.Errorf("--web.max-requests must not be negative")
	}
	if f.maxConns < 1 {
		return fmt.Errorf("--web.max-connections must be at least 1")
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

// newHTTPServer builds the daemon's hardened server from the flags.
func newHTTPServer(h http.Handler, f *httpFlags) *http.Server {
	return httpserve.New(h, httpserve.Options{MaxInFlight: f.maxInFlight, MaxConns: f.maxConns, Limits: f.limits})
}
