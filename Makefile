# gpuprobe — build, demo and the whole test suite.
# `make demo` and `make test` are the two set-up commands the README gives;
# both install what they need on a fresh Debian/Ubuntu machine (as root).

GO        ?= go
BIN       ?= bin/gpuprobe
FUZZTIME  ?= 10s
# go-nvml's cgo headers mark deprecated entry points; the warnings are noise.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
export CGO_ENABLED = 1

.PHONY: all build demo deps test vet unit race fuzz bench bench-check bench-nccl clean

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

# The whole suite: what CI runs.
test: deps vet race fuzz

bench: bench-check

bench-check:
	$(GO) test -run '^$$' -bench BenchmarkCheckSimulatedDGXH100 -benchmem ./cmd/gpuprobe

bench-nccl:
	bash scripts/bench-nccl.sh

clean:
	rm -rf bin
