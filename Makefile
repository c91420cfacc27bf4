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

.PHONY: all generate build run test test-short lint bench clean tools

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

## test: everything: unit, fuzz seeds, generated and end-to-end tests (the end-to-end test builds the collector)
test: build
	ICLENS_COLLECTOR=$(CURDIR)/bin/otelcol-iclens $(GO) test -count=1 ./...

## lint: gofmt and go vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## bench: Go benchmarks of every scrape, one report
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./... | tee bench.txt

clean:
	rm -rf bin $(OCB_OUT)
