package main

import (
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
