package main

import (
	"net"
	"testing"
)

func FuzzParseSnapshot(f *testing.F) {
	for _, s := range []string{`{"schema_version":1}`, `{"schema_version":1,"host":"n","collected_at":"2026-01-01T00:00:00Z","nvml":{"available":true,"device_count":1,"gpus":[{"index":0}]}}`, `[[[]]]`, `{"nvml":{"gpus":[{},{}]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := parseSnapshot("fuzz", data)
		if err == nil && n.Validate() != nil {
			t.Fatalf("parseSnapshot accepted a snapshot that fails Validate")
		}
	})
}

func FuzzParseListeners(f *testing.F) {
	f.Add("   0: 0100007F:4AA7 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 39963 2\n")
	f.Add("   0: 00000000000000000000000001000000:28FF 00000000000000000000000000000000:0000 0A 0:0 0:0 0  1000 0 1\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, l := range parseListeners([]byte(s)) {
			if len(l.ip) != net.IPv4len && len(l.ip) != net.IPv6len || l.port < 0 || l.port > 65535 {
				t.Fatalf("bad listener %+v", l)
			}
		}
	})
}
