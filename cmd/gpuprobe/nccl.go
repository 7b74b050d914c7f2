package main

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/gpuprobe/gpuprobe/check"
	"github.com/gpuprobe/gpuprobe/check/ncclverdict"
	"github.com/gpuprobe/gpuprobe/collect"
	"github.com/gpuprobe/gpuprobe/internal/safefile"
	"github.com/gpuprobe/gpuprobe/internal/safetext"
	"github.com/gpuprobe/gpuprobe/nccl"
	"github.com/gpuprobe/gpuprobe/report"
	"github.com/gpuprobe/gpuprobe/state"
)

func init() {
	registrars = append(registrars, registerNCCL)
	var logs []string
	var expectGDR bool
	checkExtensions = append(checkExtensions, checkExtension{
		flags: func(cmd *kingpin.CmdClause) {
			logs, expectGDR = nil, false // flags are registered anew for every run
			cmd.Flag("nccl-log", "Add the nccl.transport check, judged from this NCCL_DEBUG=INFO log (repeatable; a regular file or a pipe, read within --timeout).").PlaceHolder("FILE").StringsVar(&logs)
			cmd.Flag("nccl-expect-gdr", "nccl.transport: inter-node traffic without GPUDirect RDMA is a failure.").BoolVar(&expectGDR)
		},
		configure: func(_ *checkFlags, cfg *check.Config, o *collect.Options) error {
			o.NCCLLogs = logs
			cfg.NCCL.ExpectGDR = cfg.NCCL.ExpectGDR || expectGDR
			return nil
		},
		after: func(*cli, *state.Node, *report.Document) (int, error) { return 0, nil },
	})
}

func registerNCCL(c *cli) {
	cmd := c.app.Command("nccl", "Turn NCCL_DEBUG=INFO logs into a transport verdict: GPUDirect RDMA, IB, TCP sockets or OFI, per communicator and rank.")

	analyze := cmd.Command("analyze", "Analyze logs of any NCCL version and launcher. Exit 0 healthy, 1 a problem (TCP fallback across nodes, version mismatch, NCCL errors, no GDR with --expect-gdr), 2 unreadable input.")
	files := analyze.Arg("file", "Log files; '-' or none for stdin.").Strings()
	format := analyze.Flag("format", "Output format.").Default("text").Enum("text", "json")
	expectGDR := analyze.Flag("expect-gdr", "Inter-node traffic without GPUDirect RDMA is a problem.").Bool()
	timeout := analyze.Flag("timeout", "Give up (exit 2) when reading the logs takes longer: a FIFO with no writer or a pipe that stops sending must not hang the caller. 0 is no limit.").Default(analyzeTimeout.String()).Duration()
	analyze.Action(func(*kingpin.ParseContext) error {
		if *timeout < 0 {
			return c.usageError("nccl analyze: --timeout must not be negative")
		}
		ctx := context.Background()
		if *timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, *timeout)
			defer cancel()
		}
		paths := *files
		for i, p := range paths {
			if p == "" {
				paths[i] = "-" // the flag library hands a lone "-" over as ""
			}
		}
		nccl.LimitRuntime() // bounded RSS whatever the log (docs/nccl.md, Limits)
		f, err := nccl.AnalyzeFiles(ctx, paths...)
		if err != nil {
			return c.usageError("nccl analyze: %s", safetext.Clean(err.Error()))
		}
		v := ncclverdict.Judge(f)
		if err := writeVerdict(c, v, *format); err != nil {
			return err
		}
		if len(v.Problems(ncclverdict.ProblemOptions{ExpectGDR: *expectGDR})) > 0 {
			c.exit = exitFailed
		}
		return nil
	})

	run := cmd.Command("run", "Run a command with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,NET (unless set), pass its output through, and print the verdict to stderr at the end. Exits with the command's own code unless --fail-on-verdict.")
	args := run.Arg("command", "The command and its arguments (after --).").Required().Strings()
	runGDR := run.Flag("expect-gdr", "Inter-node traffic without GPUDirect RDMA is a problem.").Bool()
	reportFile := run.Flag("report", "Also write the verdict as JSON to FILE.").PlaceHolder("FILE").String()
	failOnVerdict := run.Flag("fail-on-verdict", "Exit 1 when the verdict shows a problem and the command itself succeeded.").Bool()
	run.Action(func(*kingpin.ParseContext) error {
		// A bad --report (a symlink, a FIFO, a device) fails before the
		// command runs, not after a training job's hours.
		if *reportFile != "" {
			if err := safefile.CheckTarget(*reportFile); err != nil {
				return c.usageError("nccl run: --report: %s", safetext.Clean(err.Error()))
			}
		}
		code, f, err := nccl.RunCommand(context.Background(), nccl.RunOptions{Args: *args, Stdin: c.stdin, Stdout: c.stdout, Stderr: c.stderr})
		if err != nil {
			fmt.Fprintf(c.stderr, "%s: nccl run: %v\n", programName, err)
			if f == nil {
				// The command could not be started: exit as a shell would (127 not found, 126 not executable).
				c.exit = code
				if c.exit == 0 {
					c.exit = exitUsage
				}
				return nil
			}
		}
		v := ncclverdict.Judge(f)
		fmt.Fprintln(c.stderr, "--- gpuprobe nccl verdict ---")
		cleanVerdict(v).WriteText(c.stderr)
		if *reportFile != "" {
			// Atomic, and only over a regular file: never through a
			// symlink planted at the path, never into a FIFO or device.
			var buf bytes.Buffer
			werr := v.WriteJSON(&buf)
			if werr == nil {
				werr = safefile.WriteFile(*reportFile, buf.Bytes(), 0o644)
			}
			if werr != nil {
				return c.usageError("nccl run: --report: %s", safetext.Clean(werr.Error()))
			}
		}
		c.exit = code
		if *failOnVerdict && code == 0 && len(v.Problems(ncclverdict.ProblemOptions{ExpectGDR: *runGDR})) > 0 {
			c.exit = exitFailed
		}
		return nil
	})
}

// analyzeTimeout bounds `nccl analyze`. Memory is bounded by the analyzer
// whatever the input (a few blocks in flight, capped tables), and a log is
// streamed, so its length is bounded only through time: 5 minutes is tens
// of GB at the measured speed (docs/nccl.md, Limits), far beyond any real
// init log, and a FIFO with no writer ends in an error instead of a hang.
const analyzeTimeout = 5 * time.Minute

func writeVerdict(c *cli, v *ncclverdict.Verdict, format string) error {
	if format == "json" {
		return v.WriteJSON(c.stdout)
	}
	return cleanVerdict(v).WriteText(c.stdout)
}

// cleanVerdict returns a copy of v for a terminal: host names, network and
// transport names, evidence lines and findings come from the log, which
// any process of the job (or whoever wrote the file) chose, so every
// string is passed through safetext.Clean. The copy is generic, so a field
// added to the verdict later is cleaned too. JSON output keeps the text as
// read: encoding/json escapes control characters, and it is data.
func cleanVerdict(v *ncclverdict.Verdict) *ncclverdict.Verdict {
	return cleanCopy(reflect.ValueOf(v)).Interface().(*ncclverdict.Verdict)
}

// cleanCopy deep-copies x with every string (map keys included) cleaned.
func cleanCopy(x reflect.Value) reflect.Value {
	switch x.Kind() {
	case reflect.String:
		out := reflect.New(x.Type()).Elem()
		out.SetString(safetext.Clean(x.String()))
		return out
	case reflect.Pointer:
		if x.IsNil() {
			return x
		}
		out := reflect.New(x.Type().Elem())
		out.Elem().Set(cleanCopy(x.Elem()))
		return out
	case reflect.Struct:
		out := reflect.New(x.Type()).Elem()
		out.Set(x) // unexported fields (none today) keep their value
		for i := range x.NumField() {
			if f := out.Field(i); f.CanSet() {
				f.Set(cleanCopy(x.Field(i)))
			}
		}
		return out
	case reflect.Slice:
		if x.IsNil() {
			return x
		}
		out := reflect.MakeSlice(x.Type(), x.Len(), x.Len())
		for i := range x.Len() {
			out.Index(i).Set(cleanCopy(x.Index(i)))
		}
		return out
	case reflect.Array:
		out := reflect.New(x.Type()).Elem()
		for i := range x.Len() {
			out.Index(i).Set(cleanCopy(x.Index(i)))
		}
		return out
	case reflect.Map:
		if x.IsNil() {
			return x
		}
		out := reflect.MakeMapWithSize(x.Type(), x.Len())
		for it := x.MapRange(); it.Next(); {
			out.SetMapIndex(cleanCopy(it.Key()), cleanCopy(it.Value()))
		}
		return out
	case reflect.Interface:
		if x.IsNil() {
			return x
		}
		out := reflect.New(x.Type()).Elem()
		out.Set(cleanCopy(x.Elem()))
		return out
	}
	return x
}
