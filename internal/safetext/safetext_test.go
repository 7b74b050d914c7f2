package safetext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClean(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"python3 train.py --lr 3e-4", "python3 train.py --lr 3e-4"},
		{"héllo wörld 日本", "héllo wörld 日本"},
		{"evil\x1b[2J\x1b[H  PASS gpu.driver", `evil\x1b[2J\x1b[H  PASS gpu.driver`},
		{"a\nb\rc", `a\x0ab\x0dc`},
		{"tab\there", "tab here"},
		{"abc\u202Egnp.exe", `abc\u202egnp.exe`},
		{"zero\u200Bwidth\u200D\uFEFF", `zero\u200bwidth\u200d\ufeff`},
		{"iso\u2066late\u2069", `iso\u2066late\u2069`},
		{"c1\u009bX", `c1\x9bX`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"line\u2028sep", `line\u2028sep`},
		{"del\x7f", `del\x7f`},
	} {
		if got := Clean(tc.in); got != tc.want {
			t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestLines(t *testing.T) {
	got := Lines("one\x1b[31m\r\ntwo\u202e\n")
	if want := "one\\x1b[31m\ntwo\\u202e\n"; got != want {
		t.Errorf("Lines = %q, want %q", got, want)
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]0;title\x07", "\u202e", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Clean(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Clean(%q) = %q: not valid UTF-8", s, out)
		}
		for _, r := range out {
			if r == '\t' || unsafe(r) {
				t.Fatalf("Clean(%q) = %q keeps %U", s, out, r)
			}
		}
		if Clean(out) != out {
			t.Fatalf("Clean is not idempotent on %q", s)
		}
		if isClean(s) && out != s {
			t.Fatalf("clean input %q changed to %q", s, out)
		}
		_ = strings.TrimSpace(out)
	})
}
