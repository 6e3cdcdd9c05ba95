# waitroom: `make run` starts the server on the embedded Redis; `make test`
# installs what the tests need (redis-server, Chromium, the e2e npm
# packages) and runs every test: Go with -race, the bench's quick runs, and
# the browser tests.
GO         ?= go
ARGS       ?=
BENCH      ?= cost herd clients gateway abandon
BENCH_ARGS ?=
SUDO       := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_UPDATED = /tmp/.waitroom-apt-updated
# Tools built from source once and kept (the gateway tests look here).
WAITROOM_BIN    ?= $(HOME)/.cache/waitroom/bin
TRAEFIK_VERSION ?= v3.6.12

.PHONY: run build test test-go e2e deps deps-redis deps-browser deps-gateway deps-traefik vet bench clean

# The demo lets any room name work (-open-rooms); in production rooms exist
# once an operator made them (admin API).
run:
	$(GO) run ./server -open-rooms $(ARGS)

build:
	$(GO) build -o waitroom ./server

# Packages are installed only when missing, with apt-get (Debian, Ubuntu).
$(APT_UPDATED):
	$(SUDO) apt-get update -qq
	@touch $@

deps-redis:
	@command -v redis-server >/dev/null 2>&1 || { \
	  $(MAKE) --no-print-directory $(APT_UPDATED) && \
	  echo "installing redis-server" && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }
	@command -v redis-server >/dev/null
	@command -v redis-sentinel >/dev/null 2>&1 || { \
	  $(MAKE) --no-print-directory $(APT_UPDATED) && \
	  echo "installing redis-sentinel" && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-sentinel >/dev/null; }
	@command -v redis-sentinel >/dev/null

deps-browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  $(MAKE) --no-print-directory $(APT_UPDATED) && \
	  echo "installing chromium" && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@command -v node >/dev/null 2>&1 || { \
	  $(MAKE) --no-print-directory $(APT_UPDATED) && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }
	@[ -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] || { \
	  $(MAKE) --no-print-directory $(APT_UPDATED) && \
	  echo "installing fonts-wqy-microhei (Chinese and Japanese glyphs)" && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-microhei >/dev/null; }
	@[ -d static/e2e/node_modules/playwright-core ] || npm ci --prefix static/e2e --no-audit --no-fund

# The gateway tests run the examples in real nginx, Caddy and Traefik.
deps-gateway:
	@command -v nginx >/dev/null 2>&1 && command -v caddy >/dev/null 2>&1 || { \
	  $(MAKE) --no-print-directory $(APT_UPDATED) && \
	  echo "installing nginx and caddy" && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx caddy >/dev/null; }
	@command -v nginx >/dev/null && command -v caddy >/dev/null

# Traefik is not packaged by Debian: built from the Go module proxy, once
# (up to an hour on two busy cores; docs/gateway.md), into $(WAITROOM_BIN).
# v3.7 does not build from the module proxy alone (a nested module it
# replaces is not served).
deps-traefik:
	@[ -x $(WAITROOM_BIN)/traefik ] || { \
	  echo "building traefik $(TRAEFIK_VERSION) into $(WAITROOM_BIN) (once)" && \
	  mkdir -p $(WAITROOM_BIN) && \
	  dir=$$(cd $$(mktemp -d) && $(GO) mod download -json github.com/traefik/traefik/v3@$(TRAEFIK_VERSION) | \
	    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p') && \
	  [ -n "$$dir" ] && cd "$$dir" && \
	  $(GO) build -trimpath -o $(WAITROOM_BIN)/traefik.tmp ./cmd/traefik && \
	  mv $(WAITROOM_BIN)/traefik.tmp $(WAITROOM_BIN)/traefik; }
	@[ -x $(WAITROOM_BIN)/traefik ]

deps: deps-redis deps-browser deps-gateway deps-traefik

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }

test: deps vet test-go e2e

test-go: deps-redis deps-gateway deps-traefik
	WAITROOM_BIN=$(WAITROOM_BIN) $(GO) test -race -count=1 -timeout 30m ./...

# Browser tests: headless Debian Chromium driven by playwright-core.
e2e: deps-browser deps-redis deps-gateway
	node --test --test-concurrency=1 static/e2e/

# Queue micro-benchmarks, then the load scenarios into results/
# (make bench BENCH_ARGS=-quick for a run of seconds).
bench: deps-redis
	$(GO) test -run '^$$' -bench . -benchtime 3s ./queue/
	@for s in $(BENCH); do $(GO) run ./bench $$s -out results $(BENCH_ARGS) || exit 1; done

clean:
	rm -rf waitroom results static/e2e/shots
