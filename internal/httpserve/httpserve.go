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

// Options are the caps. MaxInFlight: requests served at once (0: no cap).
// MaxConns: connections open at once (0: no cap). MaxIdle: idle keep-alive
// connections kept (0: MaxConns/4; the oldest idle is closed beyond).
// Reserved: the top of MaxConns kept for clients that hold no connection
// (0: MaxConns/16, at least 1; -1: none). MaxPerClient: connections one
// source address may hold (0: MaxConns/8, at least 1; -1: no limit; behind
// a proxy every client has the proxy's address). StallAfter: a connection
// that has not sent a whole request in this long may be closed to admit
// another when the server is full (0: 2 s). Limits: the zero value means
// DefaultLimits.
type Options struct {
	MaxInFlight  int
	MaxConns     int
	MaxIdle      int
	Reserved     int
	MaxPerClient int
	StallAfter   time.Duration
	Limits       Limits
}

// Derived fills in the defaults Options documents for the zero values.
func (o Options) Derived() Options {
	if o.Limits == (Limits{}) {
		o.Limits = DefaultLimits
	}
	if o.StallAfter == 0 {
		o.StallAfter = 2 * time.Second
	}
	if o.MaxConns <= 0 {
		return o
	}
	if o.MaxIdle == 0 {
		o.MaxIdle = max(1, o.MaxConns/4)
	}
	if o.Reserved == 0 {
		o.Reserved = max(1, o.MaxConns/16)
	}
	if o.Reserved >= o.MaxConns {
		o.Reserved = o.MaxConns - 1
	}
	if o.MaxPerClient == 0 {
		o.MaxPerClient = max(1, o.MaxConns/8)
	}
	return o
}

// Server is an http.Server whose connections are admitted by a Guard:
// serve it on Listener(l), or with Serve, which wraps l.
type Server struct {
	*http.Server
	Guard *Guard
}

// Listener wraps l so that its connections are admitted by the guard.
func (s *Server) Listener(l net.Listener) net.Listener { return s.Guard.Listener(l) }

// Serve serves on l wrapped by Listener.
func (s *Server) Serve(l net.Listener) error { return s.Server.Serve(s.Listener(l)) }

// New wraps h with the request cap and returns a server with the limits set
// and the connection caps enforced by its Guard (on accept where the
// listener is wrapped, else when the connection is first seen).
func New(h http.Handler, o Options) *Server {
	o = o.Derived()
	l := o.Limits
	g := NewGuard(o)
	return &Server{Server: &http.Server{
		Handler:           limitInFlight(h, o.MaxInFlight, o.MaxPerClient >= 0),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ConnState:         g.ConnState,
	}, Guard: g}
}

// LimitInFlight answers 503 at once when n requests are already being
// served, so a flood costs a goroutine per connection, never a render each.
// The last n/8 (at least 1) places are kept for clients (source addresses)
// with no request in flight, so clients holding requests open (slow
// readers) cannot keep a scrape from another address out.
func LimitInFlight(h http.Handler, n int) http.Handler { return limitInFlight(h, n, true) }

// limitInFlight is LimitInFlight, with the reserve for new clients only if
// perClient (behind a proxy every request has one address).
func limitInFlight(h http.Handler, n int, perClient bool) http.Handler {
	if n <= 0 {
		return h
	}
	reserve := 0
	if n > 1 && perClient {
		reserve = max(1, n/8)
	}
	var mu sync.Mutex
	inFlight := 0
	per := map[string]int{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client := clientOf(r.RemoteAddr)
		mu.Lock()
		ok := inFlight < n && (per[client] == 0 || inFlight < n-reserve)
		if ok {
			inFlight++
			per[client]++
		}
		mu.Unlock()
		if !ok {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many requests in flight", http.StatusServiceUnavailable)
			return
		}
		defer func() {
			mu.Lock()
			inFlight--
			if per[client]--; per[client] == 0 {
				delete(per, client)
			}
			mu.Unlock()
		}()
		h.ServeHTTP(w, r)
	})
}

// clientOf is the client's key for the per-client limits: the IP of a TCP
// peer address, else the whole address.
func clientOf(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
