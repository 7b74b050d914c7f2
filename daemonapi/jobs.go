package daemonapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/jobrecord"
)

// JobPath serves the daemon's record of a job: GET /api/v1/jobs/ID.
const JobPath = "/api/v1/jobs/"

// JobHandler answers with the record's JSON (state.JobPerf), 404 for a job
// the daemon has not seen on a GPU, 400 for an ID that is not a number (the
// ID is never used as a path or echoed unchecked). The endpoint is as open
// as /metrics: who owns the job is said only with exposeUser
// (--web.expose-process-details). The job's PIDs stay: the perf checks
// need them to tell the training process from its loaders, and they are
// the numbers /report lists by default.
func JobHandler(book *jobrecord.Book, exposeUser bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.URL.Path, JobPath)
		if _, err := strconv.ParseUint(id, 10, 32); err != nil {
			http.Error(w, "a job ID is a number", http.StatusBadRequest)
			return
		}
		j, ok := book.Job(id)
		if !ok {
			http.Error(w, "job "+id+" has run no process on this node's GPUs since the daemon started (or was forgotten)", http.StatusNotFound)
			return
		}
		if !exposeUser {
			j.User = ""
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(j)
	}
}
