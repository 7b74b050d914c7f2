package slurmstate

import (
	"testing"
)

var testGPUs = []GPUIdent{
	{Index: 0, UUID: "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"},
	{Index: 1, UUID: "GPU-8e100991-ce97-6694-b8eb-b8b1ff5053af"},
	{Index: 2, UUID: "GPU-938c4705-98bf-1735-e98b-c2a5872a8022", MIGUUIDs: []string{"MIG-5a1b0000-1111-2222-3333-444444444444", "MIG-5a1b0001-1111-2222-3333-444444444444"}},
	{Index: 3, UUID: "GPU-938d0000-0000-0000-0000-000000000000"},
}

func TestVisibleDevices(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		unset   bool
		gpus    []int // resolved NVML indexes, -1 for unresolved
		invalid string
		hidden  int
		nodev   bool
		unverif int
	}{
		{name: "unset", unset: true, gpus: nil},
		{name: "empty hides all", raw: "", gpus: nil},
		{name: "blank hides all", raw: "  ", gpus: nil},
		{name: "indexes", raw: "0,1", gpus: []int{0, 1}},
		{name: "spaces", raw: "2, 3", gpus: []int{2, 3}},
		{name: "index beyond NVML", raw: "0,7", gpus: []int{0, -1}},
		{name: "full uuid", raw: "GPU-8e100991-ce97-6694-b8eb-b8b1ff5053af", gpus: []int{1}},
		{name: "upper-case uuid", raw: "GPU-8E100991-CE97-6694-B8EB-B8B1FF5053AF", gpus: []int{1}},
		{name: "short uuid prefix", raw: "GPU-8932f937,GPU-938c", gpus: []int{0, 2}},
		{name: "ambiguous prefix", raw: "GPU-938", gpus: []int{-1}},
		{name: "unknown uuid", raw: "GPU-deadbeef", gpus: []int{-1}},
		{name: "mig with parent", raw: "MIG-GPU-8e100991-ce97-6694-b8eb-b8b1ff5053af/1/2", gpus: []int{1}},
		{name: "mig instance uuid nobody lists", raw: "MIG-dcf43e8e-5d19-5fa8-8b1d-8aaca1e467f0", gpus: []int{-1}, unverif: 1},
		{name: "mig instance uuid of GPU 2", raw: "MIG-5a1b0001-1111-2222-3333-444444444444", gpus: []int{2}},
		{name: "mig instance prefix on one GPU", raw: "MIG-5a1b", gpus: []int{2}},
		{name: "invalid hides the rest", raw: "0,2,-1,1", gpus: []int{0, 2}, invalid: "-1", hidden: 1},
		{name: "garbage first", raw: "foo,0", gpus: nil, invalid: "foo", hidden: 1},
		{name: "bad uuid chars", raw: "GPU-xyz", gpus: nil, invalid: "GPU-xyz"},
		{name: "empty entry", raw: "0,,1", gpus: []int{0}, invalid: "", hidden: 1},
		{name: "NoDevFiles", raw: "NoDevFiles", nodev: true},
	}
	for _, tt := range tests {
		v := ParseVisibleDevices(tt.raw, !tt.unset)
		res := v.Resolve(testGPUs)
		var got []int
		unverif := 0
		for _, r := range res {
			got = append(got, r.GPU)
			if r.Unverifiable {
				unverif++
			}
			if r.GPU < 0 && r.Err == "" {
				t.Errorf("%s: unresolved entry %q has no error", tt.name, r.Ref.Raw)
			}
		}
		if !equalInts(got, tt.gpus) || v.Invalid != tt.invalid || v.Truncated != (tt.hidden > 0 || tt.invalid != "") || v.Hidden != tt.hidden || v.NoDevFiles != tt.nodev || unverif != tt.unverif {
			t.Errorf("%s: %q -> gpus %v invalid %q hidden %d nodev %v unverifiable %d; want %v %q %d %v %d",
				tt.name, tt.raw, got, v.Invalid, v.Hidden, v.NoDevFiles, unverif, tt.gpus, tt.invalid, tt.hidden, tt.nodev, tt.unverif)
		}
		if v.Set == tt.unset {
			t.Errorf("%s: Set = %v", tt.name, v.Set)
		}
	}
	if !ParseVisibleDevices("0,GPU-1", true).IndexBased() || ParseVisibleDevices("GPU-1", true).IndexBased() {
		t.Error("IndexBased wrong")
	}
}

// A plain index on a GPU in MIG mode counts CUDA's MIG devices, not
// NVML's GPUs (nanoporetech/dorado#1586: CUDA_VISIBLE_DEVICES=0,1,2,3 for
// four MIG instances on two GPUs used to read "index 2, but NVML sees only
// 2 GPUs"). Only an index past every device CUDA could enumerate is wrong.
var migGPUs = []GPUIdent{
	{Index: 0, UUID: "GPU-7d5d2d18-e527-75f1-571c-349591a57073", MIG: true, MIGUUIDs: []string{"MIG-8210e6aa-6e55-5fcc-b76a-18069cb47525"}},
	{Index: 1, UUID: "GPU-25aa9f9b-ef43-d088-94bf-f344ba6d12f2", MIG: true, MIGUUIDs: []string{"MIG-69119060-baa9-56cb-8d2a-a144214426ae", "MIG-2", "MIG-3"}},
	{Index: 2, UUID: "GPU-938d0000-0000-0000-0000-000000000000"}, // not in MIG mode: one CUDA device
}

func TestVisibleDevicesMIGIndexes(t *testing.T) {
	for _, c := range []struct {
		raw              string
		gpus             []GPUIdent
		unverif, invalid int
	}{
		{"0,1,2,3", migGPUs, 4, 0},
		{"4", migGPUs, 1, 0}, // 4 MIG instances + 1 GPU: index 4 may exist
		{"5", migGPUs, 0, 1}, // past every device CUDA could enumerate
		{"0,9", migGPUs, 1, 1},
		{"MIG-8210e6aa", migGPUs, 0, 0}, // a MIG UUID still maps to its GPU
		// A GPU in MIG mode listing no instance: the count is unknown.
		{"7", []GPUIdent{{Index: 0, UUID: "GPU-1", MIG: true}}, 1, 0},
		// No GPU in MIG mode: NVML's count, as before.
		{"2", testGPUs[:2], 0, 1},
	} {
		res := ParseVisibleDevices(c.raw, true).Resolve(c.gpus)
		unverif, invalid := 0, 0
		for _, r := range res {
			switch {
			case r.Unverifiable:
				unverif++
			case r.GPU < 0:
				invalid++
			}
			if r.GPU < 0 && r.Err == "" {
				t.Errorf("%q: entry %q unresolved without a reason", c.raw, r.Ref.Raw)
			}
		}
		if unverif != c.unverif || invalid != c.invalid {
			t.Errorf("%q: %d unverifiable, %d invalid; want %d, %d (%+v)", c.raw, unverif, invalid, c.unverif, c.invalid, res)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func FuzzParseVisibleDevices(f *testing.F) {
	for _, s := range []string{"0,1", "GPU-8932f937", "MIG-GPU-8e100991/1/2", "NoDevFiles", "0,-1,1", "", "0,1,2,3,9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := ParseVisibleDevices(s, true)
		for _, gpus := range [][]GPUIdent{testGPUs, migGPUs} {
			res := v.Resolve(gpus)
			if len(res) != len(v.Entries) {
				t.Fatalf("%q: %d entries, %d resolutions", s, len(v.Entries), len(res))
			}
			for _, r := range res {
				if r.GPU >= len(gpus) || r.GPU < -1 {
					t.Fatalf("%q: resolved to GPU %d", s, r.GPU)
				}
				if r.GPU < 0 && r.Err == "" {
					t.Fatalf("%q: entry %q unresolved without a reason", s, r.Ref.Raw)
				}
			}
		}
	})
}
