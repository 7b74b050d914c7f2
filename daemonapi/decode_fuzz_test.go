package daemonapi

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/state"
)

// FuzzDecodeReport feeds the /report body reader arbitrary bytes (a daemon
// port is the client's input): never a panic, a report that decodes is
// within validReport's bounds, and Verdicts over it neither panics nor
// builds more GPUs than state.MaxGPUs.
func FuzzDecodeReport(f *testing.F) {
	at := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC).Format(time.RFC3339)
	for _, s := range []string{
		`{"schema_version":1,"host":"n1","status":"pass","collected_at":"` + at + `","driver_version":"550.54.15","gpus":8,"checks":[{"id":"gpu.driver","status":"pass","summary":"ok"}]}`,
		`{"schema_version":1,"collected_at":"` + at + `","gpus":-1}`,
		`{"schema_version":1,"collected_at":"` + at + `","gpus":50000000}`,
		`{"schema_version":1,"collected_at":"` + at + `","gpus":1,"checks":[{"id":"gpu.driver","status":"bogus"}]}`,
		`{"schema_version":2}`, `null`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	checks := []check.Check{{ID: "gpu.driver"}, {ID: "gpu.ecc"}}
	now := time.Date(2026, 11, 24, 3, 0, 30, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := decodeReport(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "decoding report") && !strings.HasPrefix(err.Error(), "report: ") {
				t.Fatalf("error does not name the report: %v", err)
			}
			return
		}
		if doc.GPUs < 0 || doc.GPUs > state.MaxGPUs || doc.CollectedAt.IsZero() {
			t.Fatalf("out-of-bounds report accepted: gpus %d, collected_at %v", doc.GPUs, doc.CollectedAt)
		}
		n, _, err := Verdicts(doc, checks, time.Hour, now)
		if err == nil && len(n.NVML.GPUs) > state.MaxGPUs {
			t.Fatalf("%d GPUs built", len(n.NVML.GPUs))
		}
	})
}

// FuzzDecodeJob feeds the job record reader arbitrary bytes: never a panic,
// and a record that decodes is the job asked for, within MaxGPUs.
func FuzzDecodeJob(f *testing.F) {
	for _, s := range []string{
		`{"job_id":"42","gpus":[]}`, `{"job_id":"43"}`, `{"job_id":"42","gpus":[` + strings.Repeat(`{},`, 10) + `{}]}`,
		strings.Repeat("[", 100) + strings.Repeat("]", 100), `null`, ``,
	} {
		f.Add([]byte(s), "42")
	}
	f.Fuzz(func(t *testing.T, data []byte, id string) {
		j, err := decodeJob(data, id)
		if err != nil {
			if !strings.Contains(err.Error(), "job record") {
				t.Fatalf("error does not name the job record: %v", err)
			}
			return
		}
		if j.JobID != id || len(j.GPUs) > state.MaxGPUs {
			t.Fatalf("job %q with %d GPUs for %q", j.JobID, len(j.GPUs), id)
		}
	})
}
