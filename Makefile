# otelcol-iclens: receivers for per-component interconnect bandwidth, and the collector built from them.

SHELL := /bin/bash
GO    ?= go
TOOLS := $(CURDIR)/.tools

# The collector release line every module is pinned to (go.mod and builder-config.yaml agree).
OTEL_CORE_VERSION ?= v0.165.0

# mdatagen: the standard generator, at the version of our release line. Where the module proxy does
# not serve it, point MDATAGEN at a binary built from the collector repository's cmd/mdatagen.
MDATAGEN_VERSION ?= $(OTEL_CORE_VERSION)
MDATAGEN         ?= $(GO) run go.opentelemetry.io/collector/cmd/mdatagen@$(MDATAGEN_VERSION)

# ocb, the OpenTelemetry Collector Builder.
OCB := $(TOOLS)/builder
# ocb writes its generated main package here (a nested module that `go test ./...` skips).
OCB_OUT := distributions/otelcol-iclens/_build

RECEIVERS := $(patsubst %/metadata.yaml,%,$(wildcard receiver/*/metadata.yaml))
GO_SOURCES := $(shell find receiver internal metadata -name '*.go' -o -name '*.yaml' 2>/dev/null) go.mod go.sum
DIST_CONFIG ?= distributions/otelcol-iclens/config.yaml


.PHONY: all generate build run demo test test-short lint bench bench-compare bench-overhead clean tools

all: lint test build

## generate: run mdatagen for every receiver (internal/metadata, documentation.md, generated tests)
generate:
	@set -e; for d in $(RECEIVERS); do echo "mdatagen $$d"; (cd $$d && $(MDATAGEN) metadata.yaml); done

$(OCB):
	GOBIN=$(TOOLS) $(GO) install go.opentelemetry.io/collector/cmd/builder@$(OTEL_CORE_VERSION)

tools: $(OCB)

## build: the collector, built by ocb from builder-config.yaml, at bin/otelcol-iclens
build: bin/otelcol-iclens

# Rebuilt only when a source, the module graph or the builder config changed; ocb's own Go build
# reuses the Go build cache, so a rebuild after a small change takes seconds.
bin/otelcol-iclens: builder-config.yaml $(GO_SOURCES) | $(OCB)
	$(OCB) --config builder-config.yaml
	@mkdir -p bin
	cp $(OCB_OUT)/otelcol-iclens bin/otelcol-iclens

## run: build and run the collector with the default configuration (works without RDMA hardware)
run: build
	bin/otelcol-iclens --config $(DIST_CONFIG)

## demo: build the collector and replay the simulated cases of a 2-node cluster in a loop, served
## in Prometheus format on 127.0.0.1:9464 (ICLENS_PROMETHEUS_ENDPOINT); see internal/simulate
DEMO_DIR ?= $(CURDIR)/.demo
demo: build
	$(GO) run ./internal/simulate/cmd/iclens-simulate -out $(DEMO_DIR) -collector-config $(DEMO_DIR)/otelcol.yaml
	bin/otelcol-iclens --config $(DEMO_DIR)/otelcol.yaml

## test: everything: unit, fuzz seeds, generated and end-to-end tests (the end-to-end test builds the collector)
# (./... skips dot-directories: the benchmark harness in .ci/ is named on its own.)
test: build
	ICLENS_COLLECTOR=$(CURDIR)/bin/otelcol-iclens $(GO) test -count=1 ./... ./.ci/bench-compare

## lint: gofmt and go vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./... ./.ci/bench-compare

## bench: Go benchmarks of every scrape, one report (bench.txt) and a summary
bench:
	set -o pipefail; $(GO) test -run '^$$' -bench . -benchmem ./... | tee bench.txt
	@echo; echo "summary (bench.txt):"; awk '/^pkg:/ { n = split($$2, p, "/"); pkg = p[n] } \
	  /^Benchmark/ { line = sprintf("%-18s %-38s", pkg, $$1); \
	  for (i = 3; i < NF; i++) if ($$(i+1) ~ /\/op$$/) line = line sprintf(" %12s %s", $$i, $$(i+1)); print line }' bench.txt

# node_exporter, the tool operators use today, built from the Go module proxy at a pinned version
# (v1.12.0 is refused by the proxy here; v1.12.1 is served).
NODE_EXPORTER_VERSION ?= v1.12.1
NODE_EXPORTER := $(TOOLS)/node_exporter
$(NODE_EXPORTER):
	GOBIN=$(TOOLS) $(GO) install github.com/prometheus/node_exporter@$(NODE_EXPORTER_VERSION)

# The harness counts opens with strace; install it where it is missing (Debian CI images).
STRACE_CHECK = command -v strace >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace; }

## bench-compare: node_exporter's infiniband collector vs the rnic receiver on one fixture node:
## files read, CPU time per scrape, peak RSS; fails unless ours are below node_exporter's
bench-compare: build $(NODE_EXPORTER)
	@$(STRACE_CHECK)
	$(GO) run ./.ci/bench-compare -mode compare -node-exporter $(NODE_EXPORTER) -collector bin/otelcol-iclens $(BENCH_FLAGS)

## bench-overhead: the whole collector (distribution config) on the fixture node at 1 s and 100 ms, 60 s each
bench-overhead: build
	$(GO) run ./.ci/bench-compare -mode overhead -collector bin/otelcol-iclens -config $(DIST_CONFIG) $(BENCH_FLAGS)

clean:
	rm -rf bin $(OCB_OUT) $(DEMO_DIR)
