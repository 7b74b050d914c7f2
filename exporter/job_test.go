package exporter

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// A simulated job with one rank on GPU 0: serve exports GPU 0's utilisation
// as a ratio and one gpu_job_info naming the job and its owner, which a
// recording rule joins to aggregate utilisation by job (docs/metrics.md).
func TestJobAttributionSeries(t *testing.T) {
	d := daemonFor(t, "dgx-h100:job-one-gpu", false)
	d.Cycle(context.Background())
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(d.Exporter)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	util := map[string]float64{}
	var jobs []map[string]string
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			switch mf.GetName() {
			case "gpuprobe_gpu_utilization_ratio":
				util[labels["gpu"]] = m.GetGauge().GetValue()
			case "gpuprobe_gpu_job_info":
				jobs = append(jobs, labels)
			}
		}
	}
	if u := util["0"]; u < 0.9 || u > 1 {
		t.Errorf("GPU 0 utilisation %v, want the busy rank's ~0.96", u)
	}
	if u, ok := util["1"]; !ok || u != 0 {
		t.Errorf("GPU 1 utilisation %v (exported %v), want 0", u, ok)
	}
	if len(jobs) != 1 || jobs[0]["gpu"] != "0" || jobs[0]["job_id"] != "4242" || jobs[0]["user"] != "alice" || jobs[0]["uuid"] == "" {
		t.Errorf("gpu_job_info %v, want one series: GPU 0, job 4242, alice", jobs)
	}
}
