package nccl

import "testing"

// BenchmarkParts splits the analyzer's cost on the connection-heavy shape
// into its two stages: the line parser (which runs on several cores) and
// the merger (which runs on one).
func BenchmarkParts(b *testing.B) {
	log := benchInput(b, "init")
	b.Run("parse", func(b *testing.B) {
		b.SetBytes(int64(len(log)))
		lp := newLineParser(DefaultMaxLineBytes)
		var out batch
		for b.Loop() {
			for off := 0; off < len(log); off += blockSize {
				out.reset()
				lp.block(log[off:min(off+blockSize, len(log))], &out)
			}
		}
	})
	b.Run("parse+merge", func(b *testing.B) {
		b.SetBytes(int64(len(log)))
		lp := newLineParser(DefaultMaxLineBytes)
		var out batch
		for b.Loop() {
			a := NewAnalyzer()
			src := a.source("x")
			for off := 0; off < len(log); off += blockSize {
				out.reset()
				lp.block(log[off:min(off+blockSize, len(log))], &out)
				a.merge(src, &out)
			}
		}
	})
}

// BenchmarkMerge times the merger alone, on the connection-heavy shape and
// on the real one: the blocks are parsed before the clock starts. The
// merger runs on one core, so its time bounds the whole analyzer's wall
// time from below on any number of CPUs.
func BenchmarkMerge(b *testing.B) {
	b.Run("init", func(b *testing.B) { benchMerge(b, benchInput(b, "init")) })
	b.Run("real", func(b *testing.B) { benchMerge(b, benchRealInput(b)) })
}

func benchMerge(b *testing.B, log []byte) {
	lp := newLineParser(DefaultMaxLineBytes)
	var batches []*batch
	for off := 0; off < len(log); off += blockSize {
		out := new(batch)
		lp.block(log[off:min(off+blockSize, len(log))], out)
		batches = append(batches, out)
	}
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		a := NewAnalyzer()
		src := a.source("x")
		for _, out := range batches {
			a.merge(src, out)
		}
	}
}

// BenchmarkParseConnMemo times the connection parse with its transport
// memo on the messages of 4 MiB of the init shape, per line.
func BenchmarkParseConnMemo(b *testing.B) {
	var msgs [][]byte
	for _, k := range benchKeys(b) {
		if m := k[len(infoMark):]; len(m) > 8 && string(m[:8]) == "Channel " {
			msgs = append(msgs, m)
		}
	}
	cs := make([]connItem, 256)
	memo := new(trMemo)
	for b.Loop() {
		for i, m := range msgs {
			parseConnMemo(m, &cs[i&255].conn, memo)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/line")
}
