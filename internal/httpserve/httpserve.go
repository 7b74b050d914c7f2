// Package httpserve hardens an HTTP server the way a node exporter's is
// hardened: every connection and request is bounded in time, headers in
// size, and the numbers of connections and requests in flight are capped,
// so slow or idle clients and header floods on the port cannot take the
// node's memory.
package httpserve

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits are the server's timeouts and sizes (tests shorten them).
type Limits struct {
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxHeaderBytes                                            int
}

// DefaultLimits: a scrape request is one short GET, so 5 s to send the
// headers and 10 s for the whole request are generous; 30 s to write the
// response covers a slow Prometheus over a congested link; idle keep-alive
// connections (Prometheus keeps one per target) are closed after 2 minutes,
// longer than any scrape interval in use (15-60 s). 16 KiB of headers holds
// any real client's and basic-auth header (Go's default is 1 MiB).
var DefaultLimits = Limits{
	ReadHeaderTimeout: 5 * time.Second,
	ReadTimeout:       10 * time.Second,
	WriteTimeout:      30 * time.Second,
	IdleTimeout:       2 * time.Minute,
	MaxHeaderBytes:    16 << 10,
}

// Options are the caps: MaxInFlight requests served at once (0: no cap),
// MaxConns connections open at once (0: no cap), and the Limits (the zero
// value means DefaultLimits).
type Options struct {
	MaxInFlight int
	MaxConns    int
	Limits      Limits
}

// New wraps h with the request cap and returns a server with the limits set
// and the connection cap enforced on accept.
func New(h http.Handler, o Options) *http.Server {
	l := o.Limits
	if l == (Limits{}) {
		l = DefaultLimits
	}
	cc := &connCap{max: o.MaxConns}
	return &http.Server{
		Handler:           LimitInFlight(h, o.MaxInFlight),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ConnState:         cc.track,
	}
}

// LimitInFlight answers 503 at once when n requests are already being
// served, so a flood costs a goroutine per connection, never a render each.
func LimitInFlight(h http.Handler, n int) http.Handler {
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

// connCap closes connections accepted beyond max. The daemon's listeners
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
