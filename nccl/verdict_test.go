package nccl

import (
	"context"

	"github.com/gpuprobe/gpuprobe/check/ncclverdict"
)

// The parser's tests judge what it found with the real judge: a test that
// reads a log and asserts a verdict tests both halves as the CLI runs them.
type (
	Verdict        = ncclverdict.Verdict
	Finding        = ncclverdict.Finding
	ProblemOptions = ncclverdict.ProblemOptions
)

const (
	InterGDRDMA  = ncclverdict.InterGDRDMA
	InterIB      = ncclverdict.InterIB
	InterSocket  = ncclverdict.InterSocket
	InterOFI     = ncclverdict.InterOFI
	InterNone    = ncclverdict.InterNone
	InterUnknown = ncclverdict.InterUnknown
)

// Verdict judges what the analyzer has read so far.
func (a *Analyzer) Verdict() *Verdict { return ncclverdict.Judge(a.Facts()) }

func judge(ctx context.Context, inputs ...Input) (*Verdict, error) {
	f, err := Analyze(ctx, inputs...)
	return ncclverdict.Judge(f), err
}

func judgeFiles(ctx context.Context, paths ...string) (*Verdict, error) {
	f, err := AnalyzeFiles(ctx, paths...)
	return ncclverdict.Judge(f), err
}
func hasCode(list []Finding, code string) bool {
	for _, f := range list {
		if f.Code == code {
			return true
		}
	}
	return false
}
