package check

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseReason(t *testing.T) {
	tests := []struct {
		in   string
		want Reason
	}{
		{"gpuprobe: gpu.row_remap node gpu=3 GPU 3 (0000:5d:00.0): row remap pending",
			Reason{Check: "gpu.row_remap", Class: ClassNode, GPUs: []int{3}, Summary: "GPU 3 (0000:5d:00.0): row remap pending"}},
		{"gpuprobe: fabric.state transient fabric still training (+2 more)",
			Reason{Check: "fabric.state", Class: ClassTransient, Summary: "fabric still training", More: 2}},
		{"gpuprobe: gpu.ecc node gpu=1,2,3,4,5,6,7,8+ 9 GPUs",
			Reason{Check: "gpu.ecc", Class: ClassNode, GPUs: []int{1, 2, 3, 4, 5, 6, 7, 8}, MoreGPUs: true, Summary: "9 GPUs"}},
		{"gpuprobe: slurm.gres config - gpu=3 is what gres.conf says",
			Reason{Check: "slurm.gres", Class: ClassConfig, Summary: "- gpu=3 is what gres.conf says"}},
		// The format before the grammar: still gpuprobe's.
		{"gpuprobe: gpu.row_remap: GPU 3: row remap pending",
			Reason{Check: "gpu.row_remap", Summary: "GPU 3: row remap pending", Legacy: true}},
		{"gpuprobe: nvlink.state: GPU 7: link down; GPU 7... (+2 more)",
			Reason{Check: "nvlink.state", Summary: "GPU 7: link down; GPU 7...", More: 2, Legacy: true}},
	}
	for _, tt := range tests {
		got, err := ParseReason(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseReason(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			continue
		}
		if s := got.String(); s != tt.in {
			t.Errorf("round trip %q -> %q", tt.in, s)
		}
	}
	for _, bad := range []string{
		"", "admin: replacing PSU", "GPUPROBE: gpu.ecc node x", "gpuprobe:gpu.ecc node x",
		"gpuprobe: gpu.ecc", "gpuprobe: gpu.ecc node", "gpuprobe: gpu.ecc hardware GPU 1 broken",
		"gpuprobe: Gpu.Ecc node x", "gpuprobe: gpu.ecc node gpu=1", "gpuprobe: gpu.ecc node  two blanks",
		"gpuprobe: gpu.ecc node \"quoted\"", "gpuprobe: gpu.ecc node line\nbreak", "gpuprobe: gpu.ecc node trailing ",
		"gpuprobe: gpu.ecc node " + strings.Repeat("x", MaxReasonLen),
	} {
		if r, err := ParseReason(bad); err == nil {
			t.Errorf("ParseReason(%q) = %+v, want an error", bad, r)
		}
	}
}

// Every check in the catalogue has a class, and the table names no check
// that does not exist.
func TestEveryCheckHasAClass(t *testing.T) {
	ids := map[string]bool{}
	for _, c := range All() {
		ids[c.ID] = true
		if _, ok := classes[c.ID]; !ok {
			t.Errorf("check %s has no class in check/reason.go", c.ID)
		}
	}
	for id, c := range classes {
		if !ids[id] {
			t.Errorf("class table names %s, not a check", id)
		}
		if !c.Valid() {
			t.Errorf("%s: class %q", id, c)
		}
	}
	if ClassOf("no.such") != ClassNode {
		t.Error("an unknown check must be class node (never lifted by itself)")
	}
}

// Every check, with hostile and long summaries, writes a reason that parses
// back to what was written.
func TestDrainReasonRoundTrip(t *testing.T) {
	summaries := []string{
		"GPU 3 (0000:5d:00.0): row remap pending", "", " ", "gpu=3 looks like a GPU list", "gpu=x",
		strings.Repeat("GPU 7: link down; ", 40), "tab\there \"q\" 'q' `q` line\nbreak\x1b[2J",
		strings.Repeat("é", 300), "ends in (+3 more)", "\u202eevil", "invalid \xff byte", "a  b   c",
	}
	gpuSets := [][]int{nil, {3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {-1}, {12345}}
	ids := []string{"Bad ID: x", "unknown"}
	for _, c := range All() {
		ids = append(ids, c.ID)
	}
	for _, id := range ids {
		for _, s := range summaries {
			for _, g := range gpuSets {
				for _, more := range []int{0, 1, 40} {
					fails := []DrainFailure{{ID: id, Summary: s, GPUs: g}}
					for i := 0; i < more; i++ {
						fails = append(fails, DrainFailure{ID: "gpu.ecc", Summary: "x"})
					}
					checkRoundTrip(t, DrainReason(fails))
				}
			}
		}
	}
}

func checkRoundTrip(t *testing.T, s string) {
	t.Helper()
	r, err := ParseReason(s)
	if err != nil {
		t.Fatalf("gpuprobe wrote %q, which does not parse: %v", s, err)
	}
	if r.Legacy || !r.Class.Valid() {
		t.Errorf("%q: %+v", s, r)
	}
	if back := r.String(); back != s {
		t.Errorf("round trip %q -> %q", s, back)
	}
	if len(s) > MaxReasonLen || !utf8.ValidString(s) || strings.ContainsAny(s, "\"'`\n\r\t") {
		t.Errorf("reason %q (%d bytes)", s, len(s))
	}
}

func FuzzParseReason(f *testing.F) {
	for _, s := range []string{
		"gpuprobe: gpu.row_remap node gpu=3 GPU 3 (0000:5d:00.0): row remap pending",
		"gpuprobe: fabric.state transient fabric still training (+2 more)",
		"gpuprobe: gpu.ecc node gpu=1,2,3,4,5,6,7,8+ 9 GPUs",
		"gpuprobe: gpu.row_remap: GPU 3: row remap pending",
		"gpuprobe: slurm.gres config - gpu=3 x",
		"admin: replacing PSU",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseReason(s)
		if err != nil {
			return
		}
		if !strings.HasPrefix(s, ReasonPrefix) || r.Check == "" || r.Summary == "" {
			t.Fatalf("%q parsed to %+v", s, r)
		}
		if !r.Legacy && !r.Class.Valid() {
			t.Fatalf("%q: class %q", s, r.Class)
		}
		// What parses writes back the same, and parses the same again.
		back := r.String()
		if back != s {
			t.Fatalf("round trip %q -> %q", s, back)
		}
		if r2, err := ParseReason(back); err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("%q: %+v then %+v, %v", s, r, r2, err)
		}
	})
}

// Every job-scope check falls under one of JobScopeGroups, and no node
// check does: a skip list built from it removes exactly the job checks.
func TestJobScopeGroups(t *testing.T) {
	groups := JobScopeGroups()
	for _, want := range []string{"job", "container"} {
		if !slices.Contains(groups, want) {
			t.Errorf("JobScopeGroups() = %v, want %q in it", groups, want)
		}
	}
	for _, c := range All() {
		g, _, _ := strings.Cut(c.ID, ".")
		if in := slices.Contains(groups, g); in != (c.Scope == JobScope) {
			t.Errorf("%s (scope %s): group %q in JobScopeGroups = %v", c.ID, c.Scope, g, in)
		}
	}
}
