// Command nvprobe prints the raw NVML answers gpuprobe derives temperature
// thresholds from (threshold call, margin, T.Limit field values) and the HW
// slowdown counters, so a lent GPU can confirm what the mocks assume.
package main

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

func main() {
	if r := nvml.Init(); r != nvml.SUCCESS {
		fmt.Println("init", nvml.ErrorString(r))
		return
	}
	defer nvml.Shutdown()
	d, r := nvml.DeviceGetHandleByIndex(0)
	fmt.Println("handle", nvml.ErrorString(r))
	for _, th := range []nvml.TemperatureThresholds{0, 1, 2, 3} {
		v, r := d.GetTemperatureThreshold(th)
		fmt.Println("threshold", th, v, nvml.ErrorString(r))
	}
	t, r := d.GetTemperature(nvml.TEMPERATURE_GPU)
	fmt.Println("temp", t, nvml.ErrorString(r))
	m, r := d.GetMarginTemperature()
	fmt.Printf("margin %+v %s\n", m, nvml.ErrorString(r))
	fv := []nvml.FieldValue{{FieldId: 193}, {FieldId: 194}, {FieldId: 195}, {FieldId: 196}, {FieldId: 270}, {FieldId: 271}}
	r = d.GetFieldValues(fv)
	fmt.Println("fields", nvml.ErrorString(r))
	for _, f := range fv {
		fmt.Printf("field %d ret=%s type=%d val=%v\n", f.FieldId, nvml.ErrorString(nvml.Return(f.NvmlReturn)), f.ValueType, f.Value)
	}
	v, r := nvml.SystemGetCudaDriverVersion()
	fmt.Println("cuda", v, nvml.ErrorString(r))
}
