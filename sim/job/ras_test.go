package job

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuprobe/gpuprobe/ncclras"
	simulate "github.com/gpuprobe/gpuprobe/sim/spec"
)

// The simulated RAS port: job-hang-peer's answers NCCL's protocol through
// the real client, the other job scenarios' refuse, and a spec with no job
// scenario leaves the port this machine's (nil dialer).
func TestRASDial(t *testing.T) {
	parse := func(s string) *simulate.Spec {
		spec, err := simulate.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return spec
	}
	if RASDial(parse("dgx-h100")) != nil {
		t.Error("no job scenario, yet the RAS port is simulated")
	}
	_, err := RASDial(parse("dgx-h100:job-hang-dstate"))(context.Background(), "127.0.0.1:28028")
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("job-hang-dstate: %v, want refused", err)
	}
	r := ncclras.Query(context.Background(), "127.0.0.1:28028", ncclras.Options{Timeout: 5 * time.Second, RASTimeout: 5 * time.Second,
		Dial: RASDial(parse("dgx-h100:job-hang-peer"))})
	if !r.Answered || r.Error != "" || r.Bytes != len(RASReport) || len(r.Comms) != 1 || len(r.Comms[0].Missing) != 1 ||
		r.Comms[0].Missing[0].Rank != 37 || !strings.HasPrefix(r.Comms[0].Missing[0].Node, "192.0.2.") || r.Unparsed != 0 {
		t.Errorf("%+v", r)
	}
}
