# Singularity in Go. `make demo` runs the embedded demo world; `make test`
# is the whole test suite as CI runs it.

GO       ?= go
BIN      := bin
PACKAGES := ./...

.PHONY: all build install prices test vet bench bench-long bench-scale scale-run fuzz demo peers crash cluster-talk cluster-failover cluster-family-failover cluster-crash cluster-family-crash cluster-demo first-hour clean proto

all: build

# The revision `singularity --version` reports, embedded with -ldflags -X
# whatever GOFLAGS says (-buildvcs=false drops the toolchain's own stamp);
# all three are empty outside a git checkout, and the binary then falls
# back to the toolchain's stamp or says "revision unknown".
REVISION      := $(shell git rev-parse HEAD 2>/dev/null)
REVISION_TIME := $(shell git log -1 --format=%cI 2>/dev/null)
MODIFIED      := $(if $(shell git status --porcelain 2>/dev/null | head -c 1),true)
LDFLAGS       := -X main.revision=$(REVISION) -X main.revisionTime=$(REVISION_TIME) -X main.modified=$(MODIFIED)

# The example Las runs once per being: it is built static (no cgo), which
# maps no C library into each of its processes.
build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...
	CGO_ENABLED=0 $(GO) build -o $(BIN)/ ./cmd/examplelas

# `make install` puts singularity and singularity-keeper side by side (the
# runtime starts each Las under the keeper it finds beside itself,
# docs/las.md#leftovers): in $(PREFIX)/bin when PREFIX is given
# (PREFIX=/usr/local), else where `go install` would, GOBIN or
# $(go env GOPATH)/bin. The revision is embedded as `make build` does.
PREFIX ?=
INSTALL_DIR = $(if $(PREFIX),$(PREFIX)/bin,$(or $(shell $(GO) env GOBIN),$(shell $(GO) env GOPATH)/bin))

install:
	mkdir -p '$(INSTALL_DIR)'
	$(GO) build -ldflags '$(LDFLAGS)' -o '$(INSTALL_DIR)/' ./cmd/singularity ./cmd/singularity-keeper

# The messages members send each other (internal/wire/clusterpb), generated
# with Debian's protoc (apt-get install protobuf-compiler) and protoc-gen-go
# at the protobuf module's version in go.mod. The generated code is
# committed: building and `make test` need no protoc.
PROTOC_GEN_GO_VERSION := $(shell $(GO) list -m -f '{{.Version}}' google.golang.org/protobuf)
proto:
	GOBIN=$(abspath $(BIN)) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	cd internal/wire/clusterpb && PATH=$(abspath $(BIN)):$$PATH protoc --proto_path=. \
		--go_out=. --go_opt=paths=source_relative singularity_cluster.proto

# The price catalogue the binary embeds (docs/brama.md#the-price-catalogue),
# generated from the @pydantic/genai-prices version pinned in
# tools/prices/package-lock.json and dated today (UTC). It needs node and
# npm; the generated file is committed, so building and `make test` need
# neither.
prices:
	cd tools/prices && npm ci --no-audit --no-fund && node generate.mjs ../../internal/prices/catalog/catalog.json $$(date -u +%F)

vet:
	$(GO) vet $(PACKAGES)

test: vet
	$(GO) test -race -count=1 -timeout 20m $(PACKAGES)

# Every benchmark but the long ones, which have targets of their own:
# a few minutes in all. The files they write live in the tests'
# temporary directory (the machine's disk), so figures with fsync in
# them move with the disk (docs/measurements.md says where each figure of
# record was taken).
LONG_BENCHMARKS := ^(BenchmarkFamilyScale|BenchmarkFamilyStatus|BenchmarkLongLife|BenchmarkPairRSS|BenchmarkRead)$$

bench:
	$(GO) test -run '^$$' -bench . -skip '$(LONG_BENCHMARKS)' -benchmem -benchtime 2s -timeout 30m $(PACKAGES)

# The long benchmarks, each with its own bound: the long lives of one
# being (1,500 cycles each, on the tests' temporary directory), the
# memory of Las pairs (it starts example Las processes by the dozen), and
# reading families of up to 10,001 beings as `singularity status` does
# (BenchmarkRead writes its family to /dev/shm when there is one,
# BenchmarkFamilyStatus to SCALE_DIR).
bench-long:
	$(GO) test -run '^$$' -bench '^BenchmarkLongLife$$' -benchtime 1x -timeout 60m ./actors/being/
	$(GO) test -run '^$$' -bench '^BenchmarkPairRSS$$' -benchtime 1x -timeout 20m ./actors/las/
	$(GO) test -run '^$$' -bench '^BenchmarkRead$$' -benchtime 1x -timeout 30m ./internal/store/accounts/
	SCALE_DIR=$(SCALE_DIR) $(GO) test -run '^$$' -bench '^BenchmarkFamilyStatus$$' -benchtime 1x -timeout 30m ./test/family/

# BenchmarkFamilyScale alone (test/family): 10, 100, 1,000 and 10,000 beings
# at the default window, each after 100 cycles of life, reporting
# heap-B/being, rss-B/being, rounds/s and threads. It takes a long while
# (the 10,000 beings live two million rounds first), so it is not part of
# `make test`. The states live on SCALE_DIR, a tmpfs by default (the life
# would otherwise be two million fsyncs of a shared disk); SCALE_BEINGS
# picks other sizes ("10,100").
SCALE_DIR ?= /dev/shm
SCALE_ROUNDS ?= 20000x

bench-scale:
	SCALE_DIR=$(SCALE_DIR) $(GO) test -run '^$$' -bench '^BenchmarkFamilyScale$$' -benchtime $(SCALE_ROUNDS) -timeout 6h ./test/family/

# The black-box run of docs/family.md#families-of-thousands: `singularity run`
# grows a family to SCALE_RUN_BEINGS beings by endowed spawning, then the
# debug tree and `singularity status` are read over all of them (the normal
# suite runs it with 300).
SCALE_RUN_BEINGS ?= 10000

scale-run:
	SCALE_RUN_BEINGS=$(SCALE_RUN_BEINGS) $(GO) test -count=1 -run '^TestRunGrowsAFamilyBySpawning$$' -timeout 30m -v ./test/e2e/

# Each fuzz target for FUZZTIME (package:target; -fuzz takes one target per
# package, so one run each). `make test` runs only their seed corpora.
# Go 1.26's fuzz coordinator can end a clean run with a bare "context
# deadline exceeded" when the machine is loaded (go.dev/issue/75804, fixed
# in Go 1.27); such a run wrote no failing input and is not a finding.
FUZZTIME ?= 30s
FUZZ_TARGETS := \
	./internal/store/money:FuzzParse \
	./internal/store/money:FuzzUnmarshalJSON \
	./actors/brama:FuzzParseCompletion \
	./actors/brama:FuzzUsageDebit \
	./internal/wire/mcpwire:FuzzClassify \
	./internal/store/state:FuzzReadJournal \
	./internal/store/state:FuzzLoad \
	./internal/store/state:FuzzIndentCompact \
	./internal/store/state:FuzzMemoryJSON \
	./internal/store/state:FuzzPack \
	./internal/tools/boundary:FuzzCheck \
	./internal/durable:FuzzSecretForms

fuzz:
	@set -e; log=$$(mktemp); trap 'rm -f "$$log" "$$log.rc"' EXIT; \
	for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name in $$pkg for $(FUZZTIME)"; \
		( set +e; $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg 2>&1; echo $$? >"$$log.rc" ) | tee "$$log"; \
		[ "$$(cat "$$log.rc")" = 0 ] && continue; \
		if grep -q 'Failing input written' "$$log" || ! grep -q 'context deadline exceeded' "$$log"; then exit 1; fi; \
		echo "== $$name: coordinator deadline race (go.dev/issue/75804), no failing input written"; \
	done

# The crash test at full length (test/crash): CRASH_KILLS random SIGKILLs of
# a spawning, earning family in `run`; the normal suite runs a few hundred.
CRASH_KILLS ?= 2000

crash:
	CRASH_KILLS=$(CRASH_KILLS) $(GO) test -count=1 -timeout 3h -run TestCrash ./test/crash/ -v

# The failover test of a family across processes (test/cluster
# TestBeingsSpreadOverMembers) at length: the beings spread over three
# members (the default placement), each at its share, and CLUSTER_KILLS
# SIGKILLs of a random member, each followed by the checks of
# docs/cluster.md#failure and the time until every being cycles again.
# The family is the demo world's four beings, spawning, or CLUSTER_BEINGS
# (300 for the figure of docs/measurements.md: the four and funded
# children seeded on the root, each with its own Las process); the
# normal suite kills 3 members of the four. CLUSTER_SEED repeats the
# choice of members. Needs etcd (Debian's etcd-server).
# CLUSTER_LOG_DIR=<dir> (any cluster test) keeps each member's whole
# stderr in <dir>/<member>.log, and etcd's log in <dir>/etcd.log.
# CLUSTER_CYCLE_SECS (any cluster test) is the beings' pause between
# cycles, 0.05 s by default.
CLUSTER_KILLS ?= 20
CLUSTER_BEINGS ?=

cluster-failover:
	CLUSTER_KILLS=$(CLUSTER_KILLS) CLUSTER_BEINGS=$(CLUSTER_BEINGS) $(GO) test -count=1 -timeout 60m -run '^TestBeingsSpreadOverMembers$$' ./test/cluster/ -v

# The same with the whole family on one member (--cluster-placement
# family; test/cluster TestFailoverAfterSIGKILL): CLUSTER_KILLS SIGKILLs
# of the member holding the family. CLUSTER_FREEZE=1 makes each blow a
# holder whose machine died (SIGSTOP, so its lease decides, then SIGKILL
# once a survivor holds the family); CLUSTER_SEED_MEMORIES=1000 starts
# every seeded child with a full mind, as a long run ends with.
cluster-family-failover:
	CLUSTER_KILLS=$(CLUSTER_KILLS) CLUSTER_BEINGS=$(CLUSTER_BEINGS) $(GO) test -count=1 -timeout 60m -run '^TestFailoverAfterSIGKILL$$' ./test/cluster/ -v

# The demo world's family on three member processes, a real etcd on
# loopback: first the whole family on one member (test/cluster
# TestClusterDemo), its holder SIGKILLed midway and the family back on a
# survivor; then the beings spread over the three (TestClusterDemoSpread,
# the default placement), the fullest member SIGKILLed and its beings
# back on the two others; every ledger exact. Needs etcd (Debian's
# etcd-server); it tells its stories in the test log.
cluster-demo:
	CLUSTER_DEMO=1 $(GO) test -count=1 -timeout 10m -run '^TestClusterDemo(Spread)?$$' ./test/cluster/ -v

# Relatives talking and the operator funding them through kills
# (test/cluster TestTalkAndFundThroughKills): a family spread over three
# members with the family tools, CLUSTER_TALK_KILLS random SIGKILLs;
# every fund and every message applied exactly once.
CLUSTER_TALK_KILLS ?= 10

cluster-talk:
	CLUSTER_TALK_KILLS=$(CLUSTER_TALK_KILLS) $(GO) test -count=1 -timeout 30m -run '^TestTalkAndFundThroughKills$$' ./test/cluster/ -v

# The storm (test/cluster TestSpreadStorm): CLUSTER_STORM random SIGKILLs
# and SIGSTOPs of random members of a family spread over three, each
# followed by the same checks; CLUSTER_SEED repeats a storm.
CLUSTER_STORM ?= 200

cluster-crash:
	CLUSTER_SPREAD_STORM=$(CLUSTER_STORM) $(GO) test -count=1 -timeout 120m -run '^TestSpreadStorm$$' ./test/cluster/ -v

# The storm with the whole family on one member (test/cluster
# TestStorm), at the holder or a standby.
cluster-family-crash:
	CLUSTER_STORM=$(CLUSTER_STORM) $(GO) test -count=1 -timeout 120m -run '^TestStorm$$' ./test/cluster/ -v

# The embedded demo world (docs/demo.md): a simulated Brama and the example Las,
# nothing else to install. DEMO_CYCLES cycles of the root being (about a
# second each, time to open the debug page), then a summary; DEMO_CYCLES=0
# runs until Ctrl-C.
DEMO_CYCLES ?= 30

demo:
	$(GO) run ./cmd/singularity demo --cycles $(DEMO_CYCLES)

# The first hour, measured (docs/development.md#the-first-hour): the
# seconds from `git clone` of this checkout's HEAD to the first completed
# cycle, following the clone's README for a keyless local server against
# mock-llm from test/peers (`make peers` first). FIRST_HOUR=cold starts
# from empty Go and npm caches.
FIRST_HOUR ?= warm

first-hour:
	test/firsthour/run.sh $(FIRST_HOUR)

# Third-party MCP peers the Las tests run (npm registry).
peers:
	cd test/peers && npm ci --no-audit --no-fund

clean:
	rm -rf $(BIN)
