package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/internal/httpserve"
)

// The daemon's server, built from its flags and served on listen's
// listeners, carries the connection guard: one client's idle keep-alive
// connections beyond its limit are refused and a scrape from another
// address gets through (issue 32; internal/httpserve has the attacks).
func TestServeConnGuardWired(t *testing.T) {
	f := &httpFlags{maxInFlight: 40, maxConns: 16, maxIdle: 8, reserved: 2, maxPerClient: 4, limits: httpserve.DefaultLimits}
	if err := f.validate(); err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") }), f)
	ls, err := listen(srv, []string{"127.0.0.1:0"}, false)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Server.Serve(ls[0])
	defer srv.Close()
	addr := ls[0].Addr().String()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 2 * time.Second}
	for i := 0; i < 16; i++ {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			resp.Body.Close()
		}
	}
	if open, _ := srv.Guard.Open(); open > 4 {
		t.Errorf("%d connections open from one client with a per-client limit of 4", open)
	}
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func TestServeConnGuardFlagsValidated(t *testing.T) {
	for _, f := range []httpFlags{
		{maxConns: 16, maxIdle: 0, reserved: 2, maxPerClient: 4},
		{maxConns: 16, maxIdle: 17, reserved: 2, maxPerClient: 4},
		{maxConns: 16, maxIdle: 8, reserved: 16, maxPerClient: 4},
		{maxConns: 16, maxIdle: 8, reserved: -1, maxPerClient: 4},
		{maxConns: 16, maxIdle: 8, reserved: 2, maxPerClient: 17},
	} {
		f.limits = httpserve.DefaultLimits
		if err := f.validate(); err == nil || !strings.Contains(err.Error(), "--web.") {
			t.Errorf("%+v: %v, want a flag error", f, err)
		}
	}
}
