# waitroom: `make run` starts the server on the embedded Redis; `make test`
# installs what the tests need (redis-server) and runs every test with -race.
GO      ?= go
ARGS    ?=
APT     := $(shell command -v apt-get 2>/dev/null)
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run build test deps vet bench clean

run:
	$(GO) run ./server $(ARGS)

build:
	$(GO) build -o waitroom ./server

# deps installs the system packages the tests use, only when missing.
deps:
	@command -v redis-server >/dev/null 2>&1 || { \
	  echo "installing redis-server"; \
	  $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }
	@command -v redis-server >/dev/null

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }

test: deps vet
	$(GO) test -race -count=1 -timeout 30m ./...

bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 3s ./queue/

clean:
	rm -rf waitroom results
