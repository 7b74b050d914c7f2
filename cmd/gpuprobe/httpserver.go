package main

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// httpFlags harden the daemon's HTTP server like a node exporter's: every
// connection and request is bounded in time, headers in size, and the
// numbers of connections and requests in flight are capped, so slow or
// idle clients and header floods on the port cannot take the node's memory.
type httpFlags struct {
	exposeProcessDetails bool
	maxInFlight          int
	maxConns             int
	limits               httpLimits
}

// httpLimits are the server's timeouts and sizes (tests shorten them).
type httpLimits struct {
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxHeaderBytes                                            int
}

// defaultHTTPLimits: a scrape request is one short GET, so 5 s to send the
// headers and 10 s for the whole request are generous; 30 s to write the
// response covers a slow Prometheus over a congested link; idle keep-alive
// connections (Prometheus keeps one per target) are closed after 2 minutes,
// longer than any scrape interval in use (15-60 s). 16 KiB of headers holds
// any real client's and basic-auth header (Go's default is 1 MiB).
var defaultHTTPLimits = httpLimits{
	ReadHeaderTimeout: 5 * time.Second,
	ReadTimeout:       10 * time.Second,
	WriteTimeout:      30 * time.Second,
	IdleTimeout:       2 * time.Minute,
	MaxHeaderBytes:    16 << 10,
}

func (f *httpFlags) register(cmd *kingpin.CmdClause) {
	f.limits = defaultHTTPLimits
	cmd.Flag("web.expose-process-details", "Also list GPU processes' command lines on /report (default: pid, user and executable name only; arguments can hold secrets and /report is unauthenticated unless --web.config.file sets auth).").BoolVar(&f.exposeProcessDetails)
	cmd.Flag("web.max-requests", "Requests served at once; more are answered 503 at once (0: no limit).").Default("40").IntVar(&f.maxInFlight)
	cmd.Flag("web.max-connections", "Open connections at once; more are closed on accept.").Default("256").IntVar(&f.maxConns)
	cmd.Flag("web.idle-timeout", "Close keep-alive connections idle this long.").Default(defaultHTTPLimits.IdleTimeout.String()).DurationVar(&f.limits.IdleTimeout)
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
	return nil
}

// newHTTPServer wraps h with the request cap and returns a server with the
// limits set and the connection cap enforced on accept.
func newHTTPServer(h http.Handler, f *httpFlags) *http.Server {
	l := f.limits
	if l == (httpLimits{}) {
		l = defaultHTTPLimits
	}
	cc := &connCap{max: f.maxConns}
	return &http.Server{
		Handler:           limitInFlight(h, f.maxInFlight),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ConnState:         cc.track,
	}
}

// limitInFlight answers 503 at once when n requests are already being
// served, so a flood costs a goroutine per connection, never a render each.
func limitInFlight(h http.Handler, n int) http.Handler {
	if n <= 0 {
		return h
	}
	sem := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
			h.ServeHTTP(w, r)
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many requests in flight", http.StatusServiceUnavailable)
		}
	})
}

// connCap closes connections accepted beyond max. The server's listeners
// come from exporter-toolkit (ports, systemd sockets, TLS), so the cap
// works on connection state rather than by wrapping the listener.
type connCap struct {
	mu   sync.Mutex
	max  int
	open map[net.Conn]bool
}

func (c *connCap) track(conn net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open == nil {
		c.open = map[net.Conn]bool{}
	}
	switch s {
	case http.StateNew:
		if c.max > 0 && len(c.open) >= c.max {
			conn.Close()
			return
		}
		c.open[conn] = true
	case http.StateClosed, http.StateHijacked:
		delete(c.open, conn)
	}
}
