package daemonapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/jobrecord"
	"github.com/gpuprobe/gpuprobe/state"
)

func TestServeJobRecord(t *testing.T) {
	book := jobrecord.New(0, 0, 0)
	at := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	for k := 0; k < 3; k++ {
		book.Observe(&state.Node{CollectedAt: at.Add(time.Duration(k) * 15 * time.Second), NVML: &state.NVML{GPUs: []state.GPU{{
			Index: 3, UUID: "GPU-x", Utilization: &state.Utilization{GPUPercent: 90},
			Processes: []state.Process{{PID: 4711, User: "alice", JobID: "42"}}}}}})
	}
	srv := httptest.NewServer(JobHandler(book, true))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 1<<16)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return resp.StatusCode, b.String()
	}
	code, body := get("/api/v1/jobs/42")
	var j state.JobPerf
	if code != 200 || json.Unmarshal([]byte(body), &j) != nil || len(j.GPUs) != 1 || j.GPUs[0].Index != 3 || len(j.GPUs[0].Samples) != 3 || j.User != "alice" {
		t.Fatalf("job 42: HTTP %d %s", code, body)
	}
	if code, _ := get("/api/v1/jobs/43"); code != http.StatusNotFound {
		t.Errorf("unknown job: HTTP %d, want 404", code)
	}
	if code, _ := get("/api/v1/jobs/..%2f..%2fetc"); code != http.StatusBadRequest {
		t.Errorf("a non-numeric ID: HTTP %d, want 400", code)
	}
	if code, _ := get("/api/v1/jobs/42/x"); code != http.StatusBadRequest {
		t.Errorf("a path under a job: HTTP %d, want 400", code)
	}
}

// Without --web.expose-process-details the record does not say who owns
// the job; the PIDs the perf checks need stay.
func TestServeJobRecordHidesTheUser(t *testing.T) {
	book := jobrecord.New(0, 0, 0)
	book.Observe(&state.Node{CollectedAt: time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC), NVML: &state.NVML{GPUs: []state.GPU{{
		Index: 3, UUID: "GPU-x", Utilization: &state.Utilization{GPUPercent: 90},
		Processes: []state.Process{{PID: 4711, User: "alice", JobID: "42"}}}}}})
	rec := httptest.NewRecorder()
	JobHandler(book, false)(rec, httptest.NewRequest("GET", "/api/v1/jobs/42", nil))
	body := rec.Body.String()
	if rec.Code != 200 || strings.Contains(body, "alice") || !strings.Contains(body, "4711") {
		t.Fatalf("HTTP %d: %s", rec.Code, body)
	}
	if j, _ := book.Job("42"); j.User != "alice" {
		t.Errorf("the book's own record lost its user: %q", j.User)
	}
}
