# gatekeeper — make help lists the targets.
SHELL := /bin/bash
GO ?= go
BIN := bin/gatekeeper
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS := -s -w -X main.version=$(VERSION)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.6.1
# Where make run keeps its MariaDB servers between runs.
RUN_BACKENDS_DIR ?= $(or $(TMPDIR),/tmp)/gatekeeper-backends

# Arguments of bench/overhead.sh for make bench-overhead and make bench, e.g. --targets or --time.
OVERHEAD_ARGS ?=
# How long make fuzz runs each fuzz target.
FUZZTIME ?= 1m
# Every package of both modules that go.work joins: ./... from the root is the product
# module alone, so the bench module (benchmarks, simulator, plots) is named as well.
PACKAGES := ./... ./bench/...

.PHONY: help build test chaos fuzz run run-fleet bench-micro bench-quick bench bench-overhead bench-multiplex bench-saturation bench-stepchange bench-handover bench-staleread bench-replicas sim sim-balance plots lint clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

build: ## Build bin/gatekeeper
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/gatekeeper

test: ## go vet, then every test of the product and bench modules under -race, starting real MariaDB backends for the integration suite
	$(GO) vet $(PACKAGES)
	$(GO) test -race -timeout 20m $(PACKAGES)

chaos: build ## The fault-injection suite against bin/gatekeeper: kills, restarts, network faults, idle and slow clients, admission abuse (about 2 minutes; its network checks need root); writes bench/results/chaos/README.md
	$(GO) run ./chaos/cmd/chaos -gatekeeper $(BIN) -out bench/results/chaos/README.md

fuzz: ## Every fuzz target in turn for FUZZTIME each (default 1m); a failing input is kept in the target's testdata/fuzz/
	GO=$(GO) FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

run: build ## Run the proxy (pooled, reads routed to two replicas) on 127.0.0.1:6033 in front of local MariaDB servers it sets up
	@GK_BACKENDS_DIR=$(RUN_BACKENDS_DIR) scripts/test-backends.sh up > /dev/null
	@eval "$$(GK_BACKENDS_DIR=$(RUN_BACKENDS_DIR) scripts/test-backends.sh env)"; \
	echo "gatekeeper: connect with: mariadb -h127.0.0.1 -P6033 -u$$GK_USER -p$$GK_PASSWORD $$GK_DATABASE"; \
	echo "gatekeeper: metrics at http://127.0.0.1:6080/metrics; Ctrl-C stops the proxy;"; \
	echo "gatekeeper: the MariaDB servers stay up: GK_BACKENDS_DIR=$(RUN_BACKENDS_DIR) scripts/test-backends.sh down"; \
	GATEKEEPER_ADMISSION_ENABLED=true GATEKEEPER_MODE=pooled GATEKEEPER_AUTH_FROM_BACKEND=true \
	GATEKEEPER_MONITOR_USER="$$GK_USER" GATEKEEPER_MONITOR_PASSWORD="$$GK_PASSWORD" \
	exec ./$(BIN) serve --primary "$$GK_PRIMARY" --replica "$$GK_REPLICA1" --replica "$$GK_REPLICA2"

run-fleet: build ## Run two proxies in one fleet (127.0.0.1:6033 and :6034, admin :6080 and :6081) over a local etcd and the local MariaDB servers
	@GK_BACKENDS_DIR=$(RUN_BACKENDS_DIR) BIN=$(BIN) scripts/run-fleet.sh

bench-micro: ## Go micro-benchmarks of the hot paths (relay, classifier, estimator, admission)
	$(GO) test -run '^$$' -bench . -benchtime 2000x ./internal/...

bench-quick: build ## The bookstore scenario, short sweep (under 5 minutes); writes bench/results/bookstore-quick/
	bench/bookstore.sh --quick

bench: build ## The bookstore scenario, each admission mode calibrated, 400 and 800 clients, medians of 3 rounds (about 2 hours), then bench-overhead; writes bench/results/
	bench/bookstore.sh --clients 400,800 --warmup 60s --duration 60s --repeat 3 --out bench/results/bookstore-per-mode
	GATEKEEPER=$(BIN) bench/overhead.sh $(OVERHEAD_ARGS)

bench-overhead: build ## sysbench direct and through gatekeeper (passthrough, admission, pooled), HAProxy and ProxySQL, CPU µs per query beside QPS and latency, on pinned cores with 8 or more (about 35 minutes; OVERHEAD_ARGS='--targets direct,gatekeeper,haproxy' narrows it); writes bench/results/overhead/
	GATEKEEPER=$(BIN) bench/overhead.sh $(OVERHEAD_ARGS)

bench-multiplex: build ## 2000 clients with 1s think time through gatekeeper pooled and passthrough (about 3 minutes); writes bench/results/multiplex/
	bench/multiplex.sh

bench-saturation: build ## 128 table scans and 4 SELECT 1 loops direct and through gatekeeper (admission off, off under nice -10, on), medians of 2 rounds (about 8 minutes); writes bench/results/saturation/
	GATEKEEPER=$(BIN) bench/saturation.sh

bench-stepchange: build ## The database's processor quota halved and restored under the bookstore, the database on processor 0: capacity auto against static ones (root, about 21 minutes); writes bench/results/stepchange/
	GATEKEEPER=$(BIN) bench/stepchange.sh --db-cpus 0 --client-cpus 1-$$(($$(nproc) - 1))

sim: ## The admission simulator: the real controller in front of a model database; writes bench/results/sim/
	$(GO) run ./bench/cmd/sim -out bench/results/sim

bench-handover: build ## A hand-over to a new process under a burst of 500 held connections, each mode, fixed and adaptive capacity (under a minute); writes bench/results/handover/
	GATEKEEPER=$(BIN) bench/handover.sh

bench-staleread: build ## Stale reads through replica routing: strong, eventual, session under injected replica lag (about 3 minutes); writes bench/results/staleread/
	GATEKEEPER=$(BIN) bench/staleread.sh

bench-replicas: build ## Reads with 0, 1 and 2 replicas (sysbench read-only, the bookstore's browsing mix) from a devbench bundle, each server on its own cores with 12 or more (about 10 minutes; BUNDLE=DIR, the bundle unpacked); writes bench/results/replicas/
	@[ -n "$(BUNDLE)" ] || { echo "make bench-replicas: give BUNDLE=DIR, a devbench bundle unpacked there (../shared/tools/devbench/make-bundle.sh)" >&2; exit 2; }
	GATEKEEPER=$(BIN) bench/replicas.sh --bundle "$(BUNDLE)"

sim-balance: ## The simulator with a primary, 0-4 replicas and the four balance policies; writes bench/results/sim-balance/
	$(GO) run ./bench/cmd/sim balance -out bench/results/sim-balance

plots: ## Draw every bookstore result's plots again from its results.csv, beside it (only the headline plots are committed)
	GO=$(GO) bench/plots.sh

lint: ## gofmt, go vet and staticcheck over the product and bench modules
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PACKAGES)
	$(GO) run $(STATICCHECK) $(PACKAGES)

clean: ## Remove build output
	rm -rf bin
