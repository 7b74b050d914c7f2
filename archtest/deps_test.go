// Package archtest holds the rules of the code's shape that the compiler
// cannot enforce: the node state is a leaf, and the judge does no I/O.
package archtest

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/gpuprobe/gpuprobe/"

// pure project packages anything may import: small helpers with no I/O.
// safetext is one: a check that quotes a user-chosen name (a process's
// comm) escapes it where it is quoted, not only where it is printed.
// jsonindent is one: it formats bytes it is given.
var pure = map[string]bool{module + "internal/busid": true, module + "internal/cpulist": true, module + "internal/safetext": true, module + "internal/jsonindent": true}

func goList(t *testing.T, format string, pkgs ...string) []string {
	t.Helper()
	statSources(t, "..")
	args := append([]string{"list", "-f", format}, pkgs...)
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.Fields(string(out))
}

// statSources stats every Go file of the module under root. go test caches
// a passing result until a file the test opened or stat-ed changes; the
// imports are read by the go command in a subprocess, which the cache
// does not see, so without this an import added to check/ passed from the
// cache (it did, and only a clean machine's CI caught it).
func statSources(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			_, err = os.Stat(path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// state is the schema: it imports no project package but the pure helpers
// and does no I/O, so a snapshot can be judged anywhere.
func TestStateIsALeaf(t *testing.T) {
	for _, imp := range goList(t, `{{join .Imports " "}}`, module+"state/...") {
		if strings.HasPrefix(imp, module) && !pure[imp] && !isState(imp) {
			t.Errorf("state imports %s: node-state types belong in state/, not in a collector", imp)
		}
		if ioPackage(imp) {
			t.Errorf("state imports %s: the node state does no I/O", imp)
		}
	}
}

// check is the only judge and judges plain data: no driver, no processes,
// no network, no files, no collector and no simulation in its dependencies.
func TestCheckIsPure(t *testing.T) {
	pkgs := goList(t, `{{.ImportPath}}`, module+"check/...")
	own := map[string]bool{}
	for _, p := range pkgs {
		own[p] = true
	}
	for _, dep := range goList(t, `{{join .Deps " "}}`, pkgs...) {
		switch {
		case own[dep], pure[dep], isState(dep):
		case strings.HasPrefix(dep, module):
			t.Errorf("check depends on %s: verdicts read the node state, not a collector", dep)
		case strings.HasPrefix(dep, "github.com/NVIDIA/"):
			t.Errorf("check depends on %s: only collectors touch the driver", dep)
		case dep == "os/exec" || dep == "net" || strings.HasPrefix(dep, "net/"):
			t.Errorf("check depends on %s: the judge runs no process and opens no socket", dep)
		}
	}
	for _, imp := range goList(t, `{{join .Imports " "}}`, pkgs...) {
		if ioPackage(imp) {
			t.Errorf("a check package imports %s: checks read no files (config is read by cmd)", imp)
		}
	}
}

// isState reports the schema packages: state and its sub-packages.
func isState(p string) bool { return p == module+"state" || strings.HasPrefix(p, module+"state/") }

func ioPackage(p string) bool {
	switch p {
	case "os", "os/exec", "io/ioutil", "syscall", "net", "net/http", "golang.org/x/sys/unix":
		return true
	}
	return false
}

// isSim reports the simulation wing: every package that fakes a driver, a
// sysfs tree, a job or a log lives under sim/.
func isSim(p string) bool { return p == module+"sim" || strings.HasPrefix(p, module+"sim/") }

// The simulation wing is wired only in cmd: no collector, check, output or
// helper imports it, so no production path can branch on "simulated". Tests
// may build fixtures with it (sim/sysfs lays out a fake sysfs tree the way
// the kernel does); the product's own code may not.
func TestSimIsWiredOnlyInCmd(t *testing.T) {
	lines := goList(t, `{{.ImportPath}}:{{join .Imports ","}}`, module+"...")
	seen := 0
	for _, line := range lines {
		pkg, imps, _ := strings.Cut(line, ":")
		if isSim(pkg) || strings.HasPrefix(pkg, module+"cmd/") || strings.HasPrefix(pkg, module+"tools/") {
			continue
		}
		seen++
		for _, imp := range strings.Split(imps, ",") {
			if isSim(imp) {
				t.Errorf("%s imports %s: simulation is wired only in cmd", pkg, imp)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("only %d non-sim packages listed: the listing is broken", seen)
	}
}

// Helpers live under internal/ and import no part of the product: a helper
// that reached up into a collector or a check would be a part in disguise.
func TestInternalHelpersAreLeaves(t *testing.T) {
	lines := goList(t, `{{.ImportPath}}:{{join .Imports ","}}`, module+"internal/...")
	if len(lines) < 5 {
		t.Fatalf("only %d helpers listed under internal/", len(lines))
	}
	for _, line := range lines {
		pkg, imps, _ := strings.Cut(line, ":")
		for _, imp := range strings.Split(imps, ",") {
			if strings.HasPrefix(imp, module) && !strings.HasPrefix(imp, module+"internal/") {
				t.Errorf("helper %s imports %s: helpers import only other helpers", pkg, imp)
			}
		}
	}
}

// Every file gpuprobe writes goes through internal/safefile (issue 32): a
// plain create, mkdir or symlink follows a link planted at the path and, as
// root, writes wherever it points. Simulation and tools write test fixtures.
func TestWritesGoThroughSafefile(t *testing.T) {
	calls := []string{"os.WriteFile(", "os.Create(", "os.OpenFile(", "os.Mkdir(", "os.MkdirAll(", "os.Symlink(", "os.Rename(", "ioutil.WriteFile("}
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		slash := filepath.ToSlash(p)
		if d.IsDir() {
			switch slash {
			case "../sim", "../tools", "../internal/safefile", "../archtest":
				return filepath.SkipDir
			}
			if d.Name() == "testdata" || (strings.HasPrefix(d.Name(), ".") && p != "..") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, c := range calls {
			if strings.Contains(string(b), c) {
				t.Errorf("%s calls %s...): write through internal/safefile (WriteFile, or Dir for a tree)", slash, c)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The CUDA driver is reached only through package cuda, and only the
// command wires it in: verify's runner measures through a verify.Driver, so
// it runs the same against the simulated driver, and nothing else in the
// product can load libcuda behind the runner's deadlines. cuda itself
// imports no project package but verify (the interface it implements).
func TestOnlyCmdImportsCuda(t *testing.T) {
	cuda := module + "cuda"
	lines := goList(t, `{{.ImportPath}}:{{join .Imports ","}}`, module+"...")
	found := false
	for _, line := range lines {
		pkg, imps, _ := strings.Cut(line, ":")
		if pkg == cuda {
			found = true
			for _, imp := range strings.Split(imps, ",") {
				if strings.HasPrefix(imp, module) && imp != module+"verify" {
					t.Errorf("cuda imports %s: it implements verify.Driver and depends on nothing else of the product", imp)
				}
			}
			continue
		}
		for _, imp := range strings.Split(imps, ",") {
			if imp == cuda && pkg != module+"cmd/gpuprobe" {
				t.Errorf("%s imports cuda: only cmd/gpuprobe wires the real driver in (the runner takes a verify.Driver)", pkg)
			}
		}
	}
	if !found {
		t.Fatalf("package %s not listed: the listing is broken", cuda)
	}
}
