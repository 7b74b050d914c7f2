// Command gpuprobe is the CLI: flags and wiring only. Collecting, judging and
// rendering live in their own packages.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Exit codes: 0 nothing failed, 1 a check failed, 2 gpuprobe could not run.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	programName = "gpuprobe"
)

// cli is one invocation: its streams, its logger and its exit code.
type cli struct {
	app            *kingpin.Application
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	exit           int
	logLevel       string
	log            *zap.Logger
}

// registrars add the commands; each command's file appends its own.
var registrars []func(*cli)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

type terminated int

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) (code int) {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	app := kingpin.New(programName, "Node-side GPU and NCCL diagnostics for Slurm GPU clusters.")
	app.Version(version.Print(programName))
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	// kingpin exits the process on --help/--version; turn that into a return
	// so tests and deferred cleanup see it.
	app.Terminate(func(code int) { panic(terminated(code)) })
	defer func() {
		if p := recover(); p != nil {
			t, ok := p.(terminated)
			if !ok {
				panic(p)
			}
			code = int(t)
		}
	}()
	app.Flag("log.level", "Log level for stderr: debug, info, warn, error.").Default("warn").EnumVar(&c.logLevel, "debug", "info", "warn", "error")
	app.PreAction(func(*kingpin.ParseContext) error { return c.initLog() })
	c.app = app
	for _, r := range registrars {
		r(c)
	}
	args, err := dashArgs(app, args)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", programName, err)
		return exitUsage
	}
	if _, err := app.Parse(args); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", programName, err)
		return exitUsage
	}
	return c.exit
}

// initLog builds the stderr logger: stdout belongs to the report.
func (c *cli) initLog() error {
	lvl, err := zapcore.ParseLevel(c.logLevel)
	if err != nil {
		return err
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(c.stderr), lvl)
	c.log = zap.New(core)
	return nil
}

// usageError reports a problem with the invocation itself (exit 2).
func (c *cli) usageError(format string, a ...any) error {
	c.exit = exitUsage
	fmt.Fprintf(c.stderr, "%s: %s\n", programName, fmt.Sprintf(format, a...))
	return nil
}
