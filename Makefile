# gpuprobe — build, demo and the whole test suite.
# `make demo` and `make test` are the two set-up commands the README gives;
# both install what they need on a fresh Debian/Ubuntu machine (as root).

GO        ?= go
BIN       ?= bin/gpuprobe
FUZZTIME  ?= 10s
# go-nvml's cgo headers mark deprecated entry points; the warnings are noise.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
export CGO_ENABLED = 1

.PHONY: all build demo deps test vet unit race fuzz e2e test-prometheus test-systemd test-slurm bench bench-check bench-serve bench-nccl clean

all: build

deps:
	@bash scripts/deps.sh

build: deps
	$(GO) build -o $(BIN) ./cmd/gpuprobe

demo: build
	./$(BIN) check --simulate dgx-h100

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

unit:
	$(GO) test ./...

race:
	$(GO) test -race ./...

fuzz:
	@FUZZTIME=$(FUZZTIME) bash scripts/fuzz.sh

# End-to-end against real parts: Prometheus + promtool, systemd-analyze, a real Slurm.
e2e: test-prometheus test-systemd test-slurm

test-slurm:
	bash scripts/slurm-e2e.sh

test-prometheus:
	bash scripts/prometheus-e2e.sh

test-systemd:
	bash scripts/systemd-check.sh

# The whole suite: what CI runs.
test: deps vet race fuzz e2e

bench: bench-check bench-serve

bench-check:
	$(GO) test -run '^$$' -bench BenchmarkCheckSimulatedDGXH100 -benchmem ./cmd/gpuprobe

# 1,000 collection cycles and 100,000 scrapes in one process: heap growth, RSS, CPU per cycle.
bench-serve:
	$(GO) test -run '^$$' -bench BenchmarkDaemonSteadiness -benchtime 1x -timeout 30m ./cmd/gpuprobe

bench-nccl:
	bash scripts/bench-nccl.sh

clean:
	rm -rf bin
