package state

import "testing"

// The T.Limit arithmetic on the figures real GPUs gave (H200 through NVML,
// H100 through nvidia-smi) and the inputs it must refuse.
func TestTLimitThresholds(t *testing.T) {
	p := func(v int) *int { return &v }
	for _, tc := range []struct {
		name                   string
		cur                    int
		margin, slowAt, shutAt *int
		wantSlow, wantShut     int // 0: nil
	}{
		{"real H200 (NVML fields)", 33, p(54), p(-2), p(-8), 89, 95},
		{"real H100 (nvidia-smi -q)", 35, p(52), p(-2), p(-8), 89, 95},
		{"no margin", 35, nil, p(-2), p(-8), 0, 0},
		{"slowdown margin missing", 35, p(52), nil, p(-8), 0, 95},
		{"implausible margin", 35, p(5000), p(-2), p(-8), 0, 0},
		{"slowdown not below shutdown", 35, p(52), p(-8), p(-2), 0, 0},
		{"result not a temperature", 35, p(-100), p(-2), p(-8), 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slow, shut := TLimitThresholds(tc.cur, tc.margin, tc.slowAt, tc.shutAt)
			v := func(x *int) int {
				if x == nil {
					return 0
				}
				return *x
			}
			if v(slow) != tc.wantSlow || v(shut) != tc.wantShut {
				t.Errorf("got %d/%d, want %d/%d", v(slow), v(shut), tc.wantSlow, tc.wantShut)
			}
		})
	}
}
