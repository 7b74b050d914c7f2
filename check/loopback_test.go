package check

import (
	"net"
	"strings"
	"testing"
)

// check must not import net (archtest, ncclverdict's deps test), so it reads
// IP literals itself; net.ParseIP and IsLoopback are the oracle.
func TestLoopbackIP(t *testing.T) {
	for _, s := range []string{"127.0.0.1", "127.1.2.3", "10.0.0.1", "::1", "0:0:0:0:0:0:0:1", "0000::0001", "::ffff:127.0.0.1",
		"::ffff:10.1.2.3", "fe80::1", "::", "2001:db8::1", "gpu001", "localhost", "127.0.0.01", "1.2.3", "::1::", "1:2:3:4:5:6:7:8:9", ""} {
		ip, loop := loopbackIP(s)
		want := net.ParseIP(s)
		if ip != (want != nil) || ip && loop != want.IsLoopback() {
			t.Errorf("%q: ip=%v loopback=%v; net says %v", s, ip, loop, want)
		}
	}
	if ip, loop := loopbackIP("::1%lo"); !ip || !loop {
		t.Error("a zone is not part of the address")
	}
}

func FuzzLoopbackIP(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "::1", "::ffff:127.0.0.1", "1::2:3", "fe80::1%eth0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Contains(s, "%") {
			return // net.ParseIP refuses zones; loopbackIP drops them
		}
		ip, loop := loopbackIP(s)
		want := net.ParseIP(s)
		if ip != (want != nil) || ip && loop != want.IsLoopback() {
			t.Fatalf("%q: ip=%v loopback=%v; net says %v", s, ip, loop, want)
		}
	})
}
