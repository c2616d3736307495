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

demo:
	@echo "make demo: the embedded demo world is not there yet (issue 7)." >&2
	@exit 1

# Third-party MCP peers the Las tests run (npm registry).
peers:
	cd test/peers && npm ci --no-audit --no-fund

clean:
	rm -rf $(BIN)
