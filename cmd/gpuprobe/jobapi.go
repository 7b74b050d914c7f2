package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/internal/readlimit"
	"github.com/gpuprobe/gpuprobe/jobrecord"
	"github.com/gpuprobe/gpuprobe/state"
)

// jobAPIPath serves the daemon's record of a job: GET /api/v1/jobs/ID.
const jobAPIPath = "/api/v1/jobs/"

// serveJob answers with the record's JSON (state.JobPerf), 404 for a job
// the daemon has not seen on a GPU, 400 for an ID that is not a number.
func serveJob(book *jobrecord.Book) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.URL.Path, jobAPIPath)
		if _, err := strconv.ParseUint(id, 10, 32); err != nil {
			http.Error(w, "a job ID is a number", http.StatusBadRequest)
			return
		}
		j, ok := book.Job(id)
		if !ok {
			http.Error(w, "job "+id+" has run no process on this node's GPUs since the daemon started (or was forgotten)", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(j)
	}
}

// jobFromDaemon fetches the daemon's record of a job; the daemon must pass
// the same trust test as check --from-daemon (a root-owned listener).
func jobFromDaemon(ctx context.Context, base, id string) (*state.JobPerf, error) {
	if base == "local" {
		base = "http://127.0.0.1:" + DefaultPort
	}
	ctx, cancel := context.WithTimeout(ctx, daemonTimeout)
	defer cancel()
	if err := trustDaemon(ctx, base); err != nil {
		return nil, fmt.Errorf("the daemon cannot be trusted: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+jobAPIPath+id, nil)
	if err != nil {
		return nil, err
	}
	resp, err := daemonClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	data, err := readlimit.Reader(ctx, "daemon job record", resp.Body, readlimit.Report)
	if err != nil {
		return nil, err
	}
	if err := boundJSON(data, maxJSONArray, maxJSONDepth); err != nil {
		return nil, fmt.Errorf("job record: %w", err)
	}
	var j state.JobPerf
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("decoding the job record: %w", err)
	}
	if j.JobID != id || len(j.GPUs) > state.MaxGPUs {
		return nil, fmt.Errorf("job record: job %q with %d GPUs, asked for %s", j.JobID, len(j.GPUs), id)
	}
	return &j, nil
}
