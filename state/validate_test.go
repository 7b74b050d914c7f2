package state

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValidateFixture(t *testing.T) {
	if err := loadFixture(t).Validate(); err != nil {
		t.Fatalf("a snapshot written by gpuprobe fails validation: %v", err)
	}
}

func TestValidateRejects(t *testing.T) {
	good := `"host":"n1","collected_at":"2026-01-01T00:00:00Z"`
	for _, tc := range []struct{ name, json, want string }{
		{"schema only", `{"schema_version":1}`, "host: missing"},
		{"schema only nvml", `{"schema_version":1}`, "nvml: missing"},
		{"count without GPUs", `{"schema_version":1,` + good + `,"nvml":{"available":true,"device_count":8,"gpus":[]}}`, "device_count 8 but nvml.gpus has 0"},
		{"negative count", `{"schema_version":1,` + good + `,"nvml":{"available":true,"device_count":-1,"gpus":[]}}`, "outside 0..1024"},
		{"index mismatch", `{"schema_version":1,` + good + `,"nvml":{"available":true,"device_count":2,"gpus":[{"index":0},{"index":7}]}}`, "nvml.gpus[1].index is 7"},
		{"gpus while unavailable", `{"schema_version":1,` + good + `,"nvml":{"available":false,"device_count":0,"gpus":[{"index":0}]}}`, "available is false"},
		{"future schema", `{"schema_version":99,` + good + `,"nvml":{"gpus":[]}}`, "schema_version 99"},
	} {
		var n Node
		if err := json.Unmarshal([]byte(tc.json), &n); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		err := n.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want it to say %q", tc.name, err, tc.want)
		}
	}
}
