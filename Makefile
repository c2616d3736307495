# Singularity in Go. `make demo` runs the embedded demo world; `make test`
# is the whole test suite as CI runs it.

GO       ?= go
BIN      := bin
PACKAGES := ./...

.PHONY: all build test vet bench demo peers clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

vet:
	$(GO) vet $(PACKAGES)

test: vet
	$(GO) test -race -count=1 -timeout 20m $(PACKAGES)

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s $(PACKAGES)

# The embedded demo world (docs/demo.md): a simulated Brama and the example Las,
# nothing else to install. Three cycles of the root being, then a summary.
demo:
	$(GO) run ./cmd/singularity demo --cycles 3

# Third-party MCP peers the Las tests run (npm registry).
peers:
	cd test/peers && npm ci --no-audit --no-fund

clean:
	rm -rf $(BIN)
