package slurmstate

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestExpandHostlist(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  string
	}{
		{in: "", want: nil},
		{in: "vm", want: []string{"vm"}},
		{in: "gpu[001-003,020]", want: []string{"gpu001", "gpu002", "gpu003", "gpu020"}},
		{in: "gpu[001-016,020]", want: append(seq("gpu", 1, 16, 3), "gpu020")},
		{in: "a,b[1-2],c", want: []string{"a", "b1", "b2", "c"}},
		{in: "rack[1-2]-node[01-02]", want: []string{"rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"}},
		{in: "n[8-11]", want: []string{"n8", "n9", "n10", "n11"}},
		{in: "n[08-11]", want: []string{"n08", "n09", "n10", "n11"}},
		{in: "dgx[1-4]", want: []string{"dgx1", "dgx2", "dgx3", "dgx4"}},
		{in: "n[7]-ib", want: []string{"n7-ib"}},
		{in: " a , b ", want: []string{"a", "b"}},
		{in: "gpu[1-3", err: "unclosed"},
		{in: "gpu1-3]", err: "unmatched"},
		{in: "gpu[[1-2]]", err: "nested"},
		{in: "gpu[]", err: "empty brackets"},
		{in: "gpu[3-1]", err: "end before start"},
		{in: "gpu[a-b]", err: "bad range"},
		{in: "gpu[1-]", err: "bad range"},
		{in: "gpu[-1]", err: "bad range"},
		{in: "gpu[0-99999999]", err: "more than"},
		{in: "a[0-999]b[0-999]c[0-999]", err: "more than"},
		{in: "gpu[99999999999999999999]", want: []string{"gpu99999999999999999999"}},
		{in: "gpu[1-99999999999999999999]", err: "too large"},
		{in: "has space", err: "blank"},
	}
	for _, tt := range tests {
		got, err := ExpandHostlist(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ExpandHostlist(%q) error = %v, want one containing %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ExpandHostlist(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ExpandHostlist(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func seq(prefix string, lo, hi, width int) []string {
	var out []string
	for i := lo; i <= hi; i++ {
		out = append(out, prefix+pad(uint64(i), width))
	}
	return out
}

func TestExpandTasksPerNode(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		bad  bool
	}{
		{in: "4", want: []int{4}},
		{in: "2(x3),1", want: []int{2, 2, 2, 1}},
		{in: "1(x2)", want: []int{1, 1}},
		{in: "2(3)", bad: true},
		{in: "x", bad: true},
		{in: "2(x0)", bad: true},
		{in: "1(x99999999)", bad: true},
	}
	for _, tt := range tests {
		got, err := ExpandTasksPerNode(tt.in)
		if tt.bad != (err != nil) || !tt.bad && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ExpandTasksPerNode(%q) = %v, %v; want %v (error: %v)", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"gpu[001-016,020]", "a,b", "r[1-2]n[01-03]", "x[", "x]", "[1-2]", "n[9-10]-ib,m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := ExpandHostlist(s)
		if err != nil {
			return
		}
		if len(hosts) > MaxExpand {
			t.Fatalf("%q expanded to %d hosts", s, len(hosts))
		}
		// A list without brackets expands to its own items.
		if !strings.ContainsAny(s, "[]") {
			var want []string
			for _, p := range strings.Split(s, ",") {
				if p = strings.TrimSpace(p); p != "" {
					want = append(want, p)
				}
			}
			if !reflect.DeepEqual(hosts, want) {
				t.Fatalf("%q: got %v, want %v", s, hosts, want)
			}
		}
		for _, h := range hosts {
			if strings.ContainsAny(h, "[],") {
				t.Fatalf("%q: host %q still holds list syntax", s, h)
			}
		}
	})
}

func FuzzExpandTasksPerNode(f *testing.F) {
	f.Add("2(x3),1")
	f.Add("4")
	f.Fuzz(func(t *testing.T, s string) {
		counts, err := ExpandTasksPerNode(s)
		if err == nil && len(counts) > MaxExpand {
			t.Fatalf("%q: %d entries", s, len(counts))
		}
	})
}

// Issue 32: a 1 KB hostlist ("a"×1000 + "[0-1048575]") expanded to 1.1 GB
// in 5 s. Names and bytes are capped with an error naming the limit.
func TestExpandHostlistCapped(t *testing.T) {
	long := strings.Repeat("a", 1000)
	for _, c := range []struct{ in, want string }{
		{long + "[0-1048575]", "more than 65536 names"},
		{"n[0-70000]", "more than 65536 names"},
		{"r[0-300]n[0-300]", "more than 65536 names"},
		{long + "[0-9999]", "more than 4194304 bytes"},
		{long + "[0-4999]," + long + "b[0-4999]", "more than 4194304 bytes"},
	} {
		start := time.Now()
		hosts, err := ExpandHostlist(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) || len(err.Error()) > 400 {
			t.Errorf("%.40q...: %d hosts, %v; want an error naming %q", c.in, len(hosts), err, c.want)
		}
		if el := time.Since(start); el > time.Second {
			t.Errorf("%.40q...: took %s", c.in, el)
		}
	}
	if hosts, err := ExpandHostlist("gpu[00001-65536]"); err != nil || len(hosts) != 65536 {
		t.Errorf("65,536 nodes: %d, %v", len(hosts), err)
	}
}
