package check

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuprobe/gpuprobe/state"
)

// Scope says where a check belongs: node checks judge the machine (health
// check, daemon), job checks judge one job step's launch.
type Scope string

// Scopes.
const (
	NodeScope Scope = "node"
	JobScope  Scope = "job"
	// PerfScope checks judge a running job that `gpuprobe job` sampled; no
	// other command selects them and they never drain a node.
	PerfScope Scope = "perf"
)

// Check is one entry of the catalogue. ID is API: it appears in config,
// metric labels and drain reasons, and never changes.
type Check struct {
	ID    string
	Title string
	Scope Scope
	Run   func(*state.Node, *Config) Result
}

// registry keeps registration order, which is report order: each domain's
// file registers its checks from the foundation (driver, count) outwards.
var registry []Check

func register(c Check) {
	for _, r := range registry {
		if r.ID == c.ID {
			panic("check: duplicate ID " + c.ID)
		}
	}
	if c.Scope == "" {
		c.Scope = NodeScope
	}
	registry = append(registry, c)
}

// All returns the catalogue in report order.
func All() []Check {
	return append([]Check(nil), registry...)
}

// JobScopeGroups lists the ID prefixes ("job", "container") of the
// job-scope checks, for a skip list that must hold every one of them (the
// daemon and a health check judge the node, never a job).
func JobScopeGroups() []string {
	var out []string
	for _, c := range registry {
		if c.Scope != JobScope {
			continue
		}
		g, _, _ := strings.Cut(c.ID, ".")
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// Select picks checks by ID or dotted prefix ("gpu" selects gpu.*). An empty
// include list means all. A pattern that matches nothing is an error: a typo
// in --checks must not silently check nothing.
func Select(include, exclude []string) ([]Check, error) {
	var all []Check
	for _, c := range All() {
		if c.Scope != PerfScope && c.Scope != VerifyScope {
			all = append(all, c)
		}
	}
	return selectFrom(all, include, exclude)
}

// PerfChecks selects among the perf checks, as Select does among the rest.
func PerfChecks(include, exclude []string) ([]Check, error) {
	var all []Check
	for _, c := range All() {
		if c.Scope == PerfScope {
			all = append(all, c)
		}
	}
	return selectFrom(all, include, exclude)
}

func selectFrom(all []Check, include, exclude []string) ([]Check, error) {
	for _, p := range append(append([]string{}, include...), exclude...) {
		if !matchesAny(all, p) {
			return nil, fmt.Errorf("no check matches %q (see 'gpuprobe checks')", p)
		}
	}
	var out []Check
	for _, c := range all {
		if (len(include) == 0 || match(c.ID, include)) && !match(c.ID, exclude) {
			out = append(out, c)
		}
	}
	return out, nil
}

func matchesAny(all []Check, p string) bool {
	for _, c := range all {
		if match(c.ID, []string{p}) {
			return true
		}
	}
	return false
}

func match(id string, patterns []string) bool {
	for _, p := range patterns {
		p = strings.TrimSuffix(strings.TrimSpace(p), ".*")
		if id == p || strings.HasPrefix(id, p+".") {
			return true
		}
	}
	return false
}

// Run judges node with every check side by side. Checks are pure, so the
// deadline only matters if one misbehaves; a check that panics or does not
// finish in time becomes an error result and the others still count.
func Run(ctx context.Context, node *state.Node, cfg *Config, checks []Check) []Result {
	out := make([]Result, len(checks))
	done := make(chan int, len(checks))
	for i, c := range checks {
		go func(i int, c Check) {
			defer func() {
				if p := recover(); p != nil {
					out[i] = Result{ID: c.ID, Status: Error, Devices: []Device{},
						Summary: fmt.Sprintf("internal error in check: %v", p), Details: []string{string(debug.Stack())}}
				}
				done <- i
			}()
			r := c.Run(node, cfg)
			r.ID = c.ID
			if r.Devices == nil {
				r.Devices = []Device{}
			}
			out[i] = r
		}(i, c)
	}
	finished := make([]bool, len(checks))
	for n := 0; n < len(checks); n++ {
		select {
		case i := <-done:
			finished[i] = true
		case <-ctx.Done():
			res := make([]Result, len(checks))
			for i, c := range checks {
				if finished[i] {
					res[i] = out[i]
				} else {
					res[i] = Result{ID: c.ID, Status: Error, Devices: []Device{}, Summary: "did not finish before the run deadline"}
				}
			}
			return res
		}
	}
	return out
}

// Overall is the verdict of a run: the worst status, with --strict turning
// warnings into failures. Skips count as passes.
func Overall(results []Result, strict bool) Status {
	s := Pass
	for _, r := range results {
		st := r.Status
		if strict && st == Warn {
			st = Fail
		}
		if st.Worse(s) {
			s = st
		}
	}
	return s
}

// ExitCode maps the overall verdict: 1 when something failed (or, with
// --strict, warned), else 0. Errors fail too: a node that cannot be judged
// must not be called healthy.
func ExitCode(results []Result, strict bool) int {
	switch Overall(results, strict) {
	case Fail, Error:
		return 1
	}
	return 0
}

func itoa(i int) string { return strconv.Itoa(i) }
