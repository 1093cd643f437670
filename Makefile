# sandbox-apiserver: see README.md for the two-command quick start.
SHELL := /usr/bin/env bash
GO ?= go
OUTPUT := _output
BIN := $(OUTPUT)/bin

# One build flavour for everything a run compiles: the upstream tools (hack/build-tools.sh), the
# images (hack/build-image.sh) and the project's binaries and tests all build without cgo and with
# -trimpath, so the Kubernetes libraries they share compile once into the build cache, not once per
# flavour (minutes each on two cores with an empty cache).
export CGO_ENABLED ?= 0
export GOFLAGS ?= -trimpath

.PHONY: all build image release test test-unit test-python-unit test-fuzz fuzz test-integration test-e2e test-e2e-chart codegen deploy verify vet bench bench-compare tools run run-chart chart-images down clean

all: build

# Every command under cmd/ (sandbox-apiserver, the kubectl-sandbox plugin, ...) into $(BIN).
build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./cmd/...

# OCI image layouts under _output/images/ (linux/amd64 and linux/arm64, no container engine).
image:
	hack/build-image.sh

# The install YAML, the chart package, the image archives and SHA256SUMS under _output/release/VERSION/.
release: tools
	hack/release.sh

# Every test layer: the builds, verify, unit (with a brief fuzzing run), integration, then end to
# end on the local control plane; hack/test.sh times each and ends with a table of the times.
test:
	hack/test.sh

test-unit: test-python-unit
	$(GO) test ./pkg/... ./cmd/... ./hack/...

# The Python SDK (clients/python): its unit tests, with Debian's packages (no PyPI).
test-python-unit:
	hack/python-unit.sh

# Budgets are counts of inputs, not durations: with a duration, Go 1.26's fuzz coordinator can
# fail a target with a bare "context deadline exceeded" when the time runs out under load
# (golang/go#75804), which would make make test flaky.
FUZZTIME ?= 30000x
FUZZ_PKGS := ./pkg/apis/agents/install ./pkg/apis/extensions/install
FUZZ_TARGETS := FuzzDecode FuzzConvert FuzzValidate

# go test fuzzes one target per run: briefly in make test (5-15 s each on two cores), for two
# million inputs each with make fuzz (2-15 min each).
test-fuzz:
	@set -e; for pkg in $(FUZZ_PKGS); do for t in $(FUZZ_TARGETS); do \
		$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; done; done

fuzz: FUZZTIME := 2000000x
fuzz: test-fuzz

test-integration:
	$(GO) test -count=1 -timeout 20m ./test/integration/...

# The mutation detector fails a run whose controllers change an object their informers hold: those
# of our kinds share their contents with the server's watch cache (pkg/fastpath).
# The tests spend most of their time waiting on the plane, not on the CPU, so more of them run at
# once than go test's default of one per core; those that restart or kill parts of the plane are
# not parallel and run first, alone.
E2E_PARALLEL ?= 6
test-e2e: build tools
	hack/python-deps.sh >/dev/null
	KUBE_CACHE_MUTATION_DETECTOR=true $(GO) test -count=1 -timeout 40m -parallel $(E2E_PARALLEL) ./test/e2e/...

# The chart installed by helm on the real node (test/e2e/chart_test.go): tenants, metrics, helm
# upgrade and rollback under load, failover of the controllers and of an etcd member, uninstall.
# They need a plane of their own in the chart mode, which TestMain starts (and stops) when none
# runs: run them after test-e2e's plane has stopped (make down after make run). They need root on
# Linux (the real node); elsewhere the target says so and does nothing.
test-e2e-chart:
	@if [[ "$$(uname -s)" != Linux || "$$(id -u)" != 0 ]]; then \
		echo "test-e2e-chart: skipped: the chart is installed on the real node, which needs root on Linux"; \
	else \
		$(MAKE) --no-print-directory build tools chart-images && \
		SANDBOX_APISERVER_MODE=chart $(GO) test -count=1 -timeout 40m -run '^TestChart$$' ./test/e2e/; \
	fi

codegen:
	hack/update-codegen.sh

# artifacts/deploy/*.yaml from the chart.
deploy: tools
	hack/update-deploy.sh

vet:
	$(GO) vet ./...

verify: vet tools
	hack/verify-tracked-files.sh
	hack/verify-shellcheck.sh
	hack/verify-imports.sh
	hack/verify-codegen.sh
	hack/verify-deploy.sh

# Benchmarks print their figures and write them to _output/bench/*.json; they never fail on a
# timing. The cluster benchmarks (cold start, warm claims, claim rates) run on the local control
# plane, with kube-apiserver's profiling on for the burst's CPU profiles.
bench: build tools
	PROFILING=true hack/local-up.sh start
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 1x -timeout 90m ./test/bench/...

# The working tree side by side with base commits, alternating rounds on fresh planes:
# make bench-compare BASE="COMMIT [COMMIT ...]" [ROUNDS=3] [BENCH=regexp] (hack/bench-compare.sh).
bench-compare:
	hack/bench-compare.sh

# Upstream Kubernetes binaries (kube-apiserver, kubectl, etcd, kwok, ...) and helm built from the module proxy;
# as root on Linux also the real node's kubelet, containerd and runc, and its images (docs/local-plane.md).
tools:
	hack/build-tools.sh

run: build tools
	hack/local-up.sh start
	hack/run-examples.sh
	hack/e2b-env.sh

# The plane with sandbox-apiserver installed by its Helm chart on the real node (as root on Linux),
# from the images of chart-images, instead of as a process here (docs/operating.md, "Try the chart
# locally"); make down uninstalls it.
run-chart: tools chart-images
	SANDBOX_APISERVER_MODE=chart hack/local-up.sh start
	hack/run-examples.sh

# The server's image and the pinned etcd's, for this machine's platform only, under _output/images.
chart-images:
	IMAGE_BINARIES="sandbox-apiserver etcd" IMAGE_PLATFORMS="linux/$$($(GO) env GOARCH)" hack/build-image.sh

# Stops the plane, removes its volumes' data and undoes what its real node did to the host
# (docs/local-plane.md).
down:
	hack/local-up.sh stop

clean:
	rm -rf $(OUTPUT)
