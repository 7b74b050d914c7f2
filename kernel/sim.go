package kernel

import (
	"fmt"
	"github.com/gpuprobe/gpuprobe/state"
	"strconv"
	"strings"
	"time"

	"github.com/gpuprobe/gpuprobe/simulate"
	"github.com/gpuprobe/gpuprobe/xid"
)

func init() {
	simulate.Register(simulate.FaultDoc{Name: "xid", Arg: "CODE@GPU",
		Effect: "the kernel log holds XID CODE for the GPU (e.g. xid=79@2: fallen off the bus on GPU 2)"})
}

// Simulated builds the kernel state of a simulated node: its XID lines are
// written in the driver's own format and go through the real parser.
func Simulated(spec *simulate.Spec, busIDs []string, driver string) (*state.Kernel, error) {
	st := &state.Kernel{XIDSource: "simulated", XIDs: []state.XIDEvent{}, ModuleVersion: driver, UptimeSeconds: 86400}
	boot := time.Now().Add(-24 * time.Hour)
	for i, f := range spec.Has("xid") {
		code, _, _ := strings.Cut(f.Value, "@")
		c, err := strconv.Atoi(code)
		if err != nil || c <= 0 {
			return nil, fmt.Errorf("fault xid=%s: want CODE@GPU, e.g. xid=79@2", f.Value)
		}
		gpu, err := f.GPU(len(busIDs))
		if err != nil {
			return nil, err
		}
		msg := "simulated by gpuprobe --simulate"
		bus := strings.TrimSuffix(busIDs[gpu], ".0")
		rec := fmt.Sprintf("3,%d,%d,-;NVRM: Xid (PCI:%s): %d, pid=%d, name=python, %s", 5000+i, int64(23*time.Hour/time.Microsecond)+int64(i), bus, c, 31337+i, msg)
		if ev, ok := xid.ParseKmsg([]byte(rec), boot); ok {
			st.XIDs = append(st.XIDs, ev)
		}
	}
	return st, nil
}
