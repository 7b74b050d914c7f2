package nccl

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// label is the part of a fixture's NNN.json the tests check. The files
// carry more (source, notes); see testdata/logs/FORMATS.md for the
// conventions.
type label struct {
	Source       string  `json:"source"`
	InterNode    string  `json:"inter_node_transport"`
	TCPFallback  bool    `json:"tcp_fallback"`
	NetSelected  string  `json:"net_selected"`
	NCCLVersion  *string `json:"nccl_version"`
	NRanks       *int64  `json:"nranks"`
	HasErrors    bool    `json:"has_errors"`
	Transports   []string
	TransportsIn []string `json:"transports_seen"`
}

func corpus(t *testing.T) []string {
	t.Helper()
	logs, err := filepath.Glob("testdata/logs/*.log")
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) < 39 {
		t.Fatalf("found %d fixture logs, want the 39 of the shared corpus", len(logs))
	}
	// Posted logs that are not in the shared corpus live apart, so that the
	// benchmark's real shape (testdata/logs) stays the input.
	posted, err := filepath.Glob("testdata/posted/*.log")
	if err != nil || len(posted) == 0 {
		t.Fatalf("no posted logs in testdata/posted: %v", err)
	}
	return append(logs, posted...)
}

func readLabel(t *testing.T, logPath string) label {
	t.Helper()
	raw, err := os.ReadFile(strings.TrimSuffix(logPath, ".log") + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var l label
	if err := json.Unmarshal(raw, &l); err != nil {
		t.Fatalf("%s: %v", logPath, err)
	}
	if l.Source == "" || l.InterNode == "" {
		t.Fatalf("%s: label without source or inter_node_transport", logPath)
	}
	return l
}

func analyzeFile(t *testing.T, path string) *Verdict {
	t.Helper()
	v, err := judgeFiles(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCorpusLabels is the quality bar: every real log gets its labelled
// inter-node transport and TCP-fallback flag.
func TestCorpusLabels(t *testing.T) {
	for _, path := range corpus(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want := readLabel(t, path)
			v := analyzeFile(t, path)
			if v.InterNode != want.InterNode {
				t.Errorf("inter_node = %q, want %q\nsummary: %s", v.InterNode, want.InterNode, v.Summary)
			}
			if v.TCPFallback != want.TCPFallback {
				t.Errorf("tcp_fallback = %v, want %v (reason %+v)", v.TCPFallback, want.TCPFallback, v.TCPFallbackReason)
			}
		})
	}
}

// TestCorpusDetails checks the other labels the verdict reports: the
// selected network where the label uses gpuprobe's vocabulary, the NCCL
// version, and whether the log shows errors.
func TestCorpusDetails(t *testing.T) {
	for _, path := range corpus(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want := readLabel(t, path)
			v := analyzeFile(t, path)
			switch want.NetSelected {
			case "IB", "Socket", "OFI", "unknown":
				if v.NetSelected != want.NetSelected {
					t.Errorf("net_selected = %q, want %q", v.NetSelected, want.NetSelected)
				}
			default: // "FastSocket (plugin, TCP)"
				if !strings.HasPrefix(want.NetSelected, v.NetSelected) {
					t.Errorf("net_selected = %q, want a prefix of %q", v.NetSelected, want.NetSelected)
				}
			}
			if want.NCCLVersion != nil && !slices.Contains(v.NCCLVersions, *want.NCCLVersion) {
				t.Errorf("nccl_versions = %v, want it to include %q", v.NCCLVersions, *want.NCCLVersion)
			}
			if want.NCCLVersion == nil && len(v.NCCLVersions) > 0 {
				t.Errorf("nccl_versions = %v, but the log has no version line", v.NCCLVersions)
			}
			if got := len(v.Errors) > 0; got != want.HasErrors {
				t.Errorf("errors present = %v, want %v: %+v", got, want.HasErrors, v.Errors)
			}
			if v.Summary == "" {
				t.Error("empty summary")
			}
		})
	}
}
