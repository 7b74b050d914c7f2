package spec

import (
	"strings"
	"testing"
)

func init() {
	Register(FaultDoc{Name: "test-fault", Arg: "GPU", Effect: "test"})
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		model   string
		faults  int
		wantErr string
	}{
		{in: "dgx-h100", model: "dgx-h100"},
		{in: "dgx-a100:test-fault", model: "dgx-a100", faults: 1},
		{in: "dgx-b200:test-fault=3,test-fault=1", model: "dgx-b200", faults: 2},
		{in: "dgx-h999", wantErr: `unknown model "dgx-h999"`},
		{in: "dgx-h100:nosuch=1", wantErr: `unknown fault "nosuch"`},
	} {
		s, err := Parse(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		if s.Model != tc.model || len(s.Faults) != tc.faults {
			t.Errorf("Parse(%q) = %+v", tc.in, s)
		}
	}
}

func TestFaultGPU(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int
		err   bool
	}{{"", 0, false}, {"3", 3, false}, {"79@2", 2, false}, {"8", 0, true}, {"x", 0, true}, {"-1", 0, true}} {
		got, err := Fault{Name: "f", Value: tc.value}.GPU(8)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("GPU(%q) = %d, %v", tc.value, got, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"dgx-h100", "dgx-h100:test-fault=3", "dgx-a100:test-fault,test-fault=79@2", ":", "dgx-h100:", "dgx-h100:=,="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		s, err := Parse(raw)
		if err != nil {
			return
		}
		for _, fl := range s.Faults {
			if _, ok := known[fl.Name]; !ok {
				t.Fatalf("Parse(%q) accepted unknown fault %q", raw, fl.Name)
			}
			fl.GPU(8) // must not panic
		}
	})
}
