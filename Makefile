# Run `make` (or `make help`) to list the targets.

GO ?= go
GOPATH_BIN := $(shell $(GO) env GOPATH)/bin
STATICCHECK ?= $(shell command -v staticcheck 2>/dev/null || echo $(GOPATH_BIN)/staticcheck)

.DEFAULT_GOAL := help
.PHONY: help test test-short chaos sweep lint demo bench bench-peers cluster-up cluster-down

help: ## List the targets
	@awk 'BEGIN {FS = ":.*?## "} /^[a-zA-Z0-9_-]+:.*?## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

test: ## Vet, then run all tests with -race (starts real redis-servers and headless chromium)
	scripts/ensure.sh redis-server REDIS_SERVER
	scripts/ensure.sh chromium SLUICE_CHROMIUM
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 15m ./...

test-short: ## Run the tests in -short mode, without -race
	scripts/ensure.sh redis-server REDIS_SERVER
	$(GO) test -short -count=1 ./...

sweep: ## Run the full sweep of corrupt keys and fields (every type, every value, every backend), with -race
	scripts/ensure.sh redis-server REDIS_SERVER
	SLUICE_SWEEP=full $(GO) test -race -count=1 -timeout 1h -run '^TestCorruptDataIsItsJobsAlone$$' ./internal/store

SLUICE_CHAOS_DURATION ?= 5m
SLUICE_MODEL_STEPS ?= 20000
SLUICE_AREA_MODEL_STEPS ?= 3000

chaos: ## Run the chaos suite for SLUICE_CHAOS_DURATION (default 5m), then the store model for SLUICE_MODEL_STEPS and the flow-control, waits and families models for SLUICE_AREA_MODEL_STEPS, with -race
	scripts/ensure.sh redis-server REDIS_SERVER
	SLUICE_CHAOS_DURATION=$(SLUICE_CHAOS_DURATION) SLUICE_RESIZE_DURATION=$(SLUICE_CHAOS_DURATION) $(GO) test -race -count=1 -timeout 2h -run '^TestChaos(LostReplies|Silence|Resize)?$$' -v ./internal/chaos
	SLUICE_MODEL_STEPS=$(SLUICE_MODEL_STEPS) $(GO) test -race -count=1 -timeout 2h -run '^TestModel$$' -v ./internal/store
	SLUICE_FLOWMODEL_STEPS=$(SLUICE_AREA_MODEL_STEPS) SLUICE_WAITMODEL_STEPS=$(SLUICE_AREA_MODEL_STEPS) SLUICE_FAMILYMODEL_STEPS=$(SLUICE_AREA_MODEL_STEPS) \
		$(GO) test -race -count=1 -timeout 2h -run '^(TestFlowModel|TestWaitModel|TestFamilyModel)$$' -v ./internal/store

lint: ## gofmt check, go vet, staticcheck
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...
	cd bench/peers && $(GO) vet ./... && $(STATICCHECK) ./...

demo: ## Run the quickstart example
	$(GO) run ./examples/quickstart

bench: ## Benchmarks on a private redis-server and 3-node cluster, then the 1,000,000-job soak (~15 min)
	$(GO) run ./bench -topology single,cluster -rounds 3
	$(GO) run ./bench -scenario soak

bench-peers: ## Run the benchmark side by side with asynq (bench/peers)
	cd bench/peers && $(GO) run . $(ARGS)

cluster-up: ## Start a local Redis Cluster: 3 masters on 127.0.0.1:7001-7003 (REPLICAS=1: replicas on 7004-7006)
	scripts/cluster.sh up

cluster-down: ## Stop the local Redis Cluster and delete its state
	scripts/cluster.sh down
