# permitd: two commands on a fresh machine: `make run` and `make test`.
GO        ?= go
PKGS      ?= ./...
BENCHTIME ?= 1x
SHARED    ?= ../shared
# PGO: the profile the permitd binary is optimised with (go build's
# -pgo=auto finds it beside cmd/permitd's main); the benchmarks and the
# load harness's floor are compiled with it too. PGO=off: without.
PGO       ?= $(CURDIR)/cmd/permitd/default.pgo

.PHONY: run test test-short bench lint build fmt fuzz load load-chaos load-ingest web pgo count bench-ab

## run: serve the API on 127.0.0.1:8080 from the bundled real data (prints a development API key)
run:
	$(GO) run ./cmd/permitd serve

## build: the permitd binary in bin/, stamped with the version and revision permitd_build_info reports
build:
	$(GO) build -pgo=$(PGO) -ldflags "-X main.version=$$(git describe --tags --always --dirty 2>/dev/null || echo dev) -X main.revision=$$(git rev-parse HEAD 2>/dev/null || echo unknown)" -o bin/permitd ./cmd/permitd

# ALLOC_TESTS: the tests that count allocations; make test runs them
# again built with $(PGO), as the permitd binary is, since what the
# compiler inlines decides what escapes to the heap.
ALLOC_TESTS = TestEncodersDoNotAllocatePerItem|TestLentListsFromBlocks|TestLentNumbersFromBlocks|TestStrCacheTwoWays|TestStringListsAgree|TestIsLeadIDAllocatesNothing|TestFullAddress|TestNormNamesOf|TestMapsURL|TestGeoListsFirstBlock|TestSharedLists|TestTableRowsFromBlocks|TestCompactOf

## test: every test (Redis tests start redis-server themselves; Kafka runs in process), then the allocation-counting tests built with the binary's profile (PGO), the concurrency tests and the indexer under -race; tools/traceidle (a module of its own) too
# The tests (and the binaries they build) are compiled without the
# profile, save the allocation tests: it changes what is inlined, not
# what the code does, and compiling every package with it too (and under
# -race) took make test from about 5.5 to 15 minutes.
test: export GOFLAGS += -pgo=off
test:
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout 15m $(PKGS)
	$(GO) -C tools/traceidle vet ./...
	$(GO) -C tools/traceidle test -count=1 ./...
	$(GO) test -race -count=1 -run 'Concurrent|HandOutCopies|Race|ImportStages|LargeLeadKeys|BuildsTheResolver|WarmsTheResolvers|WarmResolvers|Lanes|SeekLogs|DefersLead|LeavesLeadTrees|DeferredDays|StopBuilding|WhileAnExport|HeldForAnExport|ImportLent|BackgroundHook|TakeCPUTurns|SignalWriter' ./readmodel/memory/ ./readmodel/resolve/
	$(GO) test -race -count=1 ./internal/spareprocs/
	$(GO) test -race -count=1 ./indexer/...
	$(GO) test -pgo=$(PGO) -count=1 -run '$(ALLOC_TESTS)' ./api/ ./events/ ./indexer/ ./readmodel/memory/ ./readmodel/resolve/
	$(GO) test -race -count=1 -run 'Breaker|Outage|ConnCap|Drain|Throttled|KeyStoreDown|Concurrent|PublishStreams|PublishStopsWhen|PublishCompressed' ./api/quota/ ./cmd/permitd/ ./api/

test-short:
	$(GO) test -short -count=1 $(PKGS)

## bench: the performance targets, reported as benchmark metrics; compiled with cmd/permitd/default.pgo, as the permitd binary is (PGO=off: without)
bench:
	$(GO) test -pgo=$(PGO) -run '^$$' -bench . -benchtime $(BENCHTIME) -timeout 30m $(PKGS)

## bench-ab: one benchmark metric of two revisions, their test binaries run in turn in new processes (AB_FLAGS: -a REV -b REV, "." the work tree; -bench, -metric, -pairs, -higher; write a pattern's $ as $$); prints each run, the medians and the pairs' mean ratio B/A with a 95% interval (not part of test)
AB_FLAGS ?=
bench-ab:
	$(GO) run ./test/benchab -pgo $(PGO) $(AB_FLAGS)

## count: the mix's replay counted under valgrind (instructions, data references and simulated cache misses an event, to ready; -settled: until the store settles), COUNT_BASE (default HEAD) against the work tree; COUNT_FLAGS: -pairs, -permits, -settled; deterministic to about 0.1%, where timed pairs move by a third (not part of test)
count:
	GO=$(GO) sh tools/count.sh

## pgo: regenerate cmd/permitd/default.pgo (profile-guided optimisation of the permitd binary) from CPU profiles of the mix's ingest and of every endpoint under load; commit the result
pgo:
	GO=$(GO) sh tools/pgo.sh

## load: saturate every v1 endpoint against permitd (bundled data) and a bare Gin floor serving the same bytes; prints req/s, p50, p99, ratio (not part of test). CHAOS=redis adds the chaos run (load-chaos) after it.
LOAD_FLAGS ?=
CHAOS ?=
load:
	$(GO) build -pgo=$(PGO) -o bin/permitd ./cmd/permitd
	$(GO) build -pgo=$(PGO) -o bin/floor ./test/load/floor
	$(GO) run ./test/load/driver -permitd bin/permitd -floor bin/floor $(LOAD_FLAGS)
	@if [ "$(CHAOS)" = redis ]; then $(MAKE) --no-print-directory load-chaos; elif [ -n "$(CHAOS)" ]; then echo "load: CHAOS=$(CHAOS): only redis can be killed and restarted"; exit 2; fi

## load-ingest: the Kafka ingest as separate processes (a kfake-broker from $(SHARED)/tools, permitd serve -data none, permitd publish): the replay of a base and a live set published into the running server; prints times, events/s and the cores of the server, the broker and the machine; INGEST_FLAGS=-live leads makes the live set a new seed's leads only, -restart adds a restart from the shutdown snapshot (not part of test)
INGEST_FLAGS ?= -runs 2
load-ingest:
	$(GO) build -pgo=$(PGO) -o bin/permitd ./cmd/permitd
	$(GO) run ./test/load/ingest -permitd bin/permitd -broker-dir $(SHARED)/tools/kfake-broker $(INGEST_FLAGS)

## fuzz: every fuzz target in turn for FUZZTIME each (default 1m; make test runs their seeds and the inputs fuzzing found, testdata/fuzz); what fails is written to the package's testdata/fuzz, to commit with its fix
FUZZTIME ?= 1m
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do \
		dir=./$$(dirname $${f#./}); \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "== $$dir $$t"; \
			$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10s $$dir; \
		done; \
	done

## lint: gofmt, vet, OpenSearch bodies against the official spec when ../shared exists, a Go client generated from the OpenAPI document compiles (oapi-codegen), deploy/k8s renders and validates offline (kustomize, kubeconform); tools pinned in tools/go.mod
lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet $(PKGS)
	@SHARED=$(SHARED) sh mappings/lint.sh
	@GO=$(GO) sh tools/openapi-client.sh
	@GO=$(GO) sh tools/k8s-lint.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

## load-chaos: serve with Redis under load, kill and restart redis-server mid-run; reports errors by phase and the recovery time
CHAOS_FLAGS ?= -duration 20s -rate 300 -kill-at 6s -down 5s
load-chaos:
	$(GO) run ./test/faults/chaos $(CHAOS_FLAGS)

## web: rebuild web/dist (the /docs and /explore assets, embedded by package web) from web/src and the pinned npm packages; commit the result
web:
	cd web && npm ci --ignore-scripts --no-audit --no-fund && npm run build
