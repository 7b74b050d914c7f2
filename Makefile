# gpuprobe — build, demo and the whole test suite.
# `make demo` and `make test` are the two set-up commands the README gives;
# both install what they need on a fresh Debian/Ubuntu machine (as root).

GO        ?= go
BIN       ?= bin/gpuprobe
# make fuzz: the long run, per target. make test: a few seconds per target.
FUZZTIME  ?= 60s
FUZZBRIEF ?= 2s
# Linters are pinned Go tools run through the module proxy; they never
# enter gpuprobe's go.mod.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
# go-nvml's cgo headers mark deprecated entry points; the warnings are noise.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
export CGO_ENABLED = 1

# Version stamping: prometheus/common/version is what --version,
# gpuprobe_build_info, the JSON report and snapshots read. A tag vX.Y.Z gives
# X.Y.Z (X.Y.Z-N-gHASH past it, -dirty with local changes); a clone with no
# tags gives the pseudo-version 0.0.0-dev+gHASH. SOURCE_DATE_EPOCH pins the
# build date for reproducible packages.
GIT_HASH  := $(shell git rev-parse --short=12 HEAD 2>/dev/null)
GIT_COUNT := $(shell git rev-list --count HEAD 2>/dev/null || echo 0)
VERSION   ?= $(shell v=$$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null) && echo "$${v\#v}" || \
               { d=$$(git diff --quiet HEAD 2>/dev/null || echo .dirty); echo "0.0.0-dev.$(GIT_COUNT)+g$(if $(GIT_HASH),$(GIT_HASH),unknown)$$d"; })
# The same version spelled for dpkg and rpm ordering: 1.2.3-4-gHASH (4 commits
# past v1.2.3) becomes 1.2.3+4.gHASH, which sorts after 1.2.3; the untagged
# 0.0.0-dev.N+gHASH becomes 0.0.0~dev.N+gHASH, which sorts before any release
# and after the dev builds with fewer commits.
PKG_VERSION ?= $(shell echo '$(VERSION)' | sed -E 's/^([0-9]+[.][0-9]+[.][0-9]+)-([0-9]+)-g([0-9a-f]+)/\1+\2.g\3/; s/^([0-9.]+)-dev/\1~dev/; s/-dirty$$/.dirty/; s/-/./g')
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BRANCH    ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null)
BUILDUSER ?= $(shell id -un 2>/dev/null)@$(shell hostname 2>/dev/null)
BUILDDATE ?= $(shell date -u $(if $(SOURCE_DATE_EPOCH),-d @$(SOURCE_DATE_EPOCH)) +%Y%m%d-%H:%M:%S)
VPKG      := github.com/prometheus/common/version
LDFLAGS   := -X $(VPKG).Version=$(VERSION) -X $(VPKG).Revision=$(REVISION) -X $(VPKG).Branch=$(BRANCH) \
             -X $(VPKG).BuildUser=$(BUILDUSER) -X $(VPKG).BuildDate=$(BUILDDATE)

.PHONY: all build demo deps test lint vet unit race fuzz fuzz-brief e2e test-prometheus test-systemd test-slurm test-container test-attack bench bench-check bench-serve bench-nccl bench-nccl-ir clean version pkg-version package test-package test-landing

all: build

deps:
	@bash scripts/deps.sh

build: deps
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/gpuprobe

demo: build
	./$(BIN) check --simulate dgx-h100

# gofmt, go vet, staticcheck and a tidy go.mod: all must be clean.
lint: vet
	$(GO) run $(STATICCHECK) ./...
	$(GO) mod tidy -diff

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

fuzz-brief:
	@FUZZTIME=$(FUZZBRIEF) bash scripts/fuzz.sh

# End-to-end against real parts: Prometheus + promtool, systemd-analyze, a real
# Slurm, Podman, Chromium, dpkg. The binary is built once (make build) and every
# script copies it (GPUPROBE_BIN); a script run alone builds its own.
E2E_ENV = GPUPROBE_BIN=$(abspath $(BIN))
E2E_ENV_RUN = $(if $(GPUPROBE_BIN),GPUPROBE_BIN='$(GPUPROBE_BIN)')
e2e: build
	@bash scripts/nfpm.sh background
	$(MAKE) --no-print-directory test-prometheus test-systemd test-slurm test-container test-landing test-attack test-package $(E2E_ENV)

test-slurm:
	$(E2E_ENV_RUN) bash scripts/slurm-e2e.sh
	$(E2E_ENV_RUN) bash scripts/slurm-2node-e2e.sh

# The container.* checks inside real Podman containers (rootful, runc).
test-container:
	$(E2E_ENV_RUN) bash scripts/container-e2e.sh

test-prometheus:
	$(E2E_ENV_RUN) bash scripts/prometheus-e2e.sh

test-systemd:
	$(E2E_ENV_RUN) bash scripts/systemd-check.sh

# The landing page in Debian's headless Chromium.
test-landing:
	$(E2E_ENV_RUN) bash scripts/landing-e2e.sh

# The daemon under idle, concurrent and slowloris floods on loopback (~30 s):
# every fresh-connection probe scrape must get through, p99 under 1 s.
test-attack:
	$(E2E_ENV_RUN) bash scripts/attack-serve.sh

# The whole suite: what CI runs. Each step prints how long it took.
test: deps
	@bash scripts/timed.sh lint $(MAKE) --no-print-directory lint
	@bash scripts/timed.sh race $(MAKE) --no-print-directory race
	@bash scripts/timed.sh fuzz-brief $(MAKE) --no-print-directory fuzz-brief
	@bash scripts/timed.sh e2e $(MAKE) --no-print-directory e2e

bench: bench-check bench-serve

bench-check:
	$(GO) test -run '^$$' -bench BenchmarkCheckSimulatedDGXH100 -benchmem ./cmd/gpuprobe

# 1,000 collection cycles and 100,000 scrapes: heap growth and CPU per cycle
# in one process (BenchmarkDaemonSteadiness), the real daemon's resident set
# and its anonymous memory from /proc/PID/smaps_rollup (BenchmarkDaemonProcessRSS;
# GPUPROBE_BENCH_CYCLES=10000 for the footprint goal's 10,000 cycles), and a
# scrape storm of 100 keep-alive clients x 500 gzip scrapes with its p99
# (BenchmarkScrapeStorm).
bench-serve:
	$(GO) test -run '^$$' -bench 'BenchmarkDaemonSteadiness|BenchmarkDaemonProcessRSS|BenchmarkScrapeStorm' -benchtime 1x -timeout 40m ./cmd/gpuprobe

bench-nccl:
	bash scripts/bench-nccl.sh

# Instructions the analyzer runs on 40 MB of the real shape, per git
# revision (valgrind; the same on every run): make bench-nccl-ir REVS="main HEAD".
bench-nccl-ir:
	bash scripts/bench-nccl-ir.sh $(REVS)

version:
	@echo $(VERSION)

pkg-version:
	@echo $(PKG_VERSION)

# .deb and .rpm for amd64 and arm64 in dist/ (scripts/package.sh; nfpm is a
# pinned Go tool run through the module proxy). package-amd64 / package-arm64
# build one architecture.
PKG_ENV = VERSION='$(VERSION)' PKG_VERSION='$(PKG_VERSION)' LDFLAGS='$(LDFLAGS)' GO='$(GO)'

package:
	$(PKG_ENV) bash scripts/package.sh amd64 arm64

package-%:
	$(PKG_ENV) bash scripts/package.sh $*

# Install the amd64 .deb on this machine, verify it, purge it, check nothing is left.
test-package:
	$(PKG_ENV) bash scripts/package-test.sh

clean:
	rm -rf bin dist
