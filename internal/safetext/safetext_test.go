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

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in     string
		n      int
		marker string
		want   string
	}{
		{"", 0, Ellipsis, ""},
		{"abc", 3, Ellipsis, "abc"},
		{"abcd", 3, Ellipsis, "abc…"},
		{"abcd", 0, Ellipsis, "…"},
		{"abcd", -1, Ellipsis, "…"},
		{"abcd", 2, "...", "ab..."},
		// "é" is 2 bytes, "日" 3, "😀" 4: a cut inside one backs up to its start.
		{"héllo", 2, Ellipsis, "h…"},
		{"héllo", 3, Ellipsis, "hé…"},
		{"a日本", 2, Ellipsis, "a…"},
		{"a日本", 3, Ellipsis, "a…"},
		{"a日本", 4, Ellipsis, "a日…"},
		{"😀x", 3, Ellipsis, "…"},
		{"😀x", 4, Ellipsis, "😀…"},
		{"\uFFFDx", 2, Ellipsis, "…"}, // U+FFFD written out is a valid rune
		// Invalid bytes are cut like any byte.
		{"\xff\xfe\xfd", 2, Ellipsis, "\xff\xfe…"},
		{"a\x80\x80\x80\x80b", 3, Ellipsis, "a\x80\x80…"},
		{"a\xe6\x97", 2, Ellipsis, "a\xe6…"}, // a truncated sequence is not a rune
	} {
		if got := ClipWith(tc.in, tc.n, tc.marker); got != tc.want {
			t.Errorf("ClipWith(%q, %d, %q) = %q, want %q", tc.in, tc.n, tc.marker, got, tc.want)
		}
		if tc.marker == Ellipsis {
			if got := Clip(tc.in, tc.n); got != tc.want {
				t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		}
	}
}

func FuzzClip(f *testing.F) {
	for _, s := range []string{"", "plain", "héllo wörld 日本", "😀😀😀", "\xff\xfe", "a\xe6\x97\xa5\x80"} {
		for _, n := range []int{0, 1, 2, 3, 5, 80} {
			f.Add(s, n)
		}
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n %= 1 << 10
		out := Clip(s, n)
		if n < 0 {
			n = 0
		}
		if len(s) <= n {
			if out != s {
				t.Fatalf("Clip(%q, %d) = %q: changed text within the bound", s, n, out)
			}
			return
		}
		body, ok := strings.CutSuffix(out, Ellipsis)
		if !ok {
			t.Fatalf("Clip(%q, %d) = %q: cut without the marker", s, n, out)
		}
		if !strings.HasPrefix(s, body) {
			t.Fatalf("Clip(%q, %d) = %q: not a prefix of the input", s, n, out)
		}
		if len(body) > n || len(body) <= n-utf8.UTFMax {
			t.Fatalf("Clip(%q, %d) = %q: kept %d bytes", s, n, out, len(body))
		}
		if utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Fatalf("Clip(%q, %d) = %q: split a UTF-8 sequence", s, n, out)
		}
		// No valid sequence of s straddles the cut.
		for i := len(body) - 1; i >= 0 && i > len(body)-utf8.UTFMax; i-- {
			if r, size := utf8.DecodeRuneInString(s[i:]); (r != utf8.RuneError || size > 1) && i+size > len(body) {
				t.Fatalf("Clip(%q, %d) = %q: cut %q at byte %d", s, n, out, s[i:i+size], len(body)-i)
			}
		}
	})
}
