package httpserve

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// Guard admits connections so that no client can starve the others of the
// port (issue 32: 256 idle keep-alive connections from one client, 2,000
// concurrent scrapers or 300 slowloris clients kept every new scrape out).
// It tracks each connection's state through http.Server's ConnState hook
// and admits new ones in a net.Listener wrapper (Listener), before the
// server spends a goroutine or buffers on them:
//
//   - at most MaxConns connections are open; when the server is full, the
//     oldest idle keep-alive connection is closed to admit a new one, then
//     the oldest connection that has not sent a whole request within
//     StallAfter (a slowloris); only when neither exists is the new one
//     closed;
//   - at most MaxIdle connections are idle: one going idle beyond that
//     closes the oldest idle;
//   - the last Reserved places are kept for clients that hold no
//     connection, so clients already connected cannot fill the server;
//   - one client (source address) holds at most MaxPerClient connections:
//     beyond, its own oldest idle connection is closed, else the new one.
//     Behind a proxy or NAT all clients share one address and one limit.
type Guard struct {
	o Options

	mu        sync.Mutex
	open      map[net.Conn]*tracked // by the accepted (innermost) connection
	perClient map[string]int
	idle      int
	stats     GuardStats
}

// GuardStats count what the guard did.
type GuardStats struct {
	Refused, RefusedPerClient, ShedIdle, ShedStalled int
}

type tracked struct {
	conn   net.Conn
	client string
	state  http.ConnState
	since  time.Time // of the last state change
}

// NewGuard returns a guard with o's caps (see Options; o is Derived).
func NewGuard(o Options) *Guard {
	return &Guard{o: o.Derived(), open: map[net.Conn]*tracked{}, perClient: map[string]int{}}
}

// Stats returns the counts so far.
func (g *Guard) Stats() GuardStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stats
}

// Open returns the number of connections open and idle.
func (g *Guard) Open() (open, idle int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.open), g.idle
}

// Listener wraps l: Accept closes the connections the guard refuses and
// returns the admitted ones unchanged (a TLS listener may wrap it).
func (g *Guard) Listener(l net.Listener) net.Listener { return &guardListener{Listener: l, g: g} }

type guardListener struct {
	net.Listener
	g *Guard
}

func (l *guardListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.g.admit(c) {
			return c, nil
		}
		c.Close()
	}
}

// inner is the connection the listener accepted, under any TLS wrapper.
func inner(c net.Conn) net.Conn {
	for {
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return c
		}
		n := u.NetConn()
		if n == nil || n == c {
			return c
		}
		c = n
	}
}

var errRefused = errors.New("refused")

// admit registers c if the caps allow, closing others to make room as the
// Guard's rules say, and reports whether c may be served.
func (g *Guard) admit(c net.Conn) bool {
	client := ""
	if a := c.RemoteAddr(); a != nil {
		client = clientOf(a.String())
	}
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.makeRoom(client, now); err != nil {
		return false
	}
	g.open[c] = &tracked{conn: c, client: client, state: http.StateNew, since: now}
	g.perClient[client]++
	return true
}

func (g *Guard) makeRoom(client string, now time.Time) error {
	o := g.o
	if o.MaxPerClient > 0 && g.perClient[client] >= o.MaxPerClient {
		if !g.shed(func(t *tracked) bool { return t.client == client && t.state == http.StateIdle }) {
			g.stats.RefusedPerClient++
			return errRefused
		}
		g.stats.ShedIdle++
	}
	if o.MaxConns <= 0 {
		return nil
	}
	limit := o.MaxConns
	if g.perClient[client] > 0 && o.Reserved > 0 {
		limit -= o.Reserved
	}
	for len(g.open) >= limit {
		switch {
		case g.shed(func(t *tracked) bool { return t.state == http.StateIdle }):
			g.stats.ShedIdle++
		case g.shed(func(t *tracked) bool { return t.state == http.StateNew && now.Sub(t.since) >= o.StallAfter }):
			g.stats.ShedStalled++
		default:
			g.stats.Refused++
			return errRefused
		}
	}
	return nil
}

// shed closes the oldest connection that match selects and says whether
// there was one. The caller holds mu.
func (g *Guard) shed(match func(*tracked) bool) bool {
	var oldest *tracked
	for _, t := range g.open {
		if match(t) && (oldest == nil || t.since.Before(oldest.since)) {
			oldest = t
		}
	}
	if oldest == nil {
		return false
	}
	g.forget(oldest)
	oldest.conn.Close()
	return true
}

// forget drops t from the counts. The caller holds mu.
func (g *Guard) forget(t *tracked) {
	delete(g.open, t.conn)
	if t.state == http.StateIdle {
		g.idle--
	}
	if g.perClient[t.client]--; g.perClient[t.client] <= 0 {
		delete(g.perClient, t.client)
	}
}

// ConnState is the server's hook: it follows each connection's state,
// keeps the idle ones under MaxIdle, and admits connections that did not
// come through Listener when they are first seen.
func (g *Guard) ConnState(c net.Conn, s http.ConnState) {
	raw := inner(c)
	if s == http.StateNew {
		g.mu.Lock()
		_, known := g.open[raw]
		g.mu.Unlock()
		if !known && !g.admit(raw) {
			c.Close()
		}
		return
	}
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	t, ok := g.open[raw]
	if !ok {
		return // shed, or refused
	}
	switch s {
	case http.StateClosed, http.StateHijacked:
		g.forget(t)
		return
	case http.StateIdle:
		if t.state != http.StateIdle {
			g.idle++
		}
	default:
		if t.state == http.StateIdle {
			g.idle--
		}
	}
	t.state, t.since = s, now
	for g.o.MaxIdle > 0 && g.idle > g.o.MaxIdle {
		if !g.shed(func(t *tracked) bool { return t.state == http.StateIdle }) {
			break
		}
		g.stats.ShedIdle++
	}
}
