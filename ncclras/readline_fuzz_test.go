package ncclras

import (
	"bufio"
	"strings"
	"testing"
)

// FuzzReadLine reads arbitrary handshake answers line by line through a
// small buffer: never a panic, a line is at most maxLine bytes, has no
// line ending, and is a part of the input.
func FuzzReadLine(f *testing.F) {
	for _, s := range []string{"CLIENT PROTOCOL 2\r\nTIMEOUT 5\n", strings.Repeat("x", maxLine+1) + "\n", "no newline", "\n\n", strings.Repeat("y", 3*maxLine)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		br := bufio.NewReaderSize(strings.NewReader(s), 16)
		for i := 0; i <= len(s); i++ {
			line, err := readLine(br)
			if err != nil {
				return
			}
			if len(line) > maxLine || strings.HasSuffix(line, "\n") || !strings.Contains(s, line) {
				t.Fatalf("line %q from %q", line, s)
			}
		}
	})
}
