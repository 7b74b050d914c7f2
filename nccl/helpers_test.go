package nccl

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func readLines(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
}

// analyzeString runs Analyze over an in-memory log.
func analyzeString(t *testing.T, log string) *Verdict {
	t.Helper()
	v, err := judge(context.Background(), Input{Name: "test.log", Reader: strings.NewReader(log)})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// comparable renders a verdict as JSON without what legitimately differs
// between two ways of reading the same text: the input names.
func comparable(t *testing.T, v *Verdict) string {
	t.Helper()
	c := *v
	c.Stats.Inputs = nil
	c.Stats.Bytes = 0
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(&c); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }
