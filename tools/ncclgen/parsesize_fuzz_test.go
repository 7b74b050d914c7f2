package main

import "testing"

// FuzzParseSize (-size): never a panic, a size that parses is positive
// and at most 1 PiB ("0.0001" read as 0 and "1e300" wrapped before).
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"1GB", "512MB", "64k", "1000", "1e300", "NaN", "Inf", "-1G", "0.0001", "G", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseSize(s)
		if err != nil {
			return
		}
		if n <= 0 || n > 1<<50 {
			t.Fatalf("size %d from %q", n, s)
		}
	})
}
