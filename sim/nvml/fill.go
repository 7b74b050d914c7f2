package nvml

import (
	"reflect"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

var returnType = reflect.TypeOf(gonvml.SUCCESS)

// FillNotSupported sets every nil XxxFunc field of a go-nvml mock (a pointer
// to mock.Device, mock.Interface, ...) to a function that answers
// ERROR_NOT_SUPPORTED. go-nvml's mocks panic on an unset method; a real driver
// answers NOT_SUPPORTED for what a GPU lacks, and that is what the collector
// must be tested against.
func FillNotSupported(mock any) {
	v := reflect.ValueOf(mock).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Type.Kind() != reflect.Func || !strings.HasSuffix(f.Name, "Func") || !v.Field(i).IsNil() {
			continue
		}
		ft := f.Type
		v.Field(i).Set(reflect.MakeFunc(ft, func([]reflect.Value) []reflect.Value {
			out := make([]reflect.Value, ft.NumOut())
			for o := range out {
				if ft.Out(o) == returnType {
					out[o] = reflect.ValueOf(gonvml.ERROR_NOT_SUPPORTED)
				} else {
					out[o] = reflect.Zero(ft.Out(o))
				}
			}
			return out
		}))
	}
}
