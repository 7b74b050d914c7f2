package check

import "testing"

func TestXIDCatalogue(t *testing.T) {
	if i := XIDLookup(79, nil); i.Severity != XIDCritical || i.Meaning != "GPU has fallen off the bus" {
		t.Errorf("79 = %+v", i)
	}
	if i := XIDLookup(13, nil); i.Severity != XIDWarning || i.Remedy == "" {
		t.Errorf("13 = %+v", i)
	}
	if i := XIDLookup(13, []int{13}); i.Severity != XIDCritical {
		t.Errorf("configured critical set ignored: %+v", i)
	}
	if i := XIDLookup(79, []int{13}); i.Severity != XIDWarning || i.Meaning == "" {
		t.Errorf("configured set must replace the default: %+v", i)
	}
	want := []int{48, 62, 63, 64, 74, 79, 92, 94, 95, 109, 119, 120}
	got := map[int]bool{}
	for _, c := range DefaultCriticalXIDs() {
		got[c] = true
	}
	for _, c := range want {
		if !got[c] {
			t.Errorf("default critical set lacks %d", c)
		}
	}
}
