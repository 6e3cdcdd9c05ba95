# waitroom: `make run` starts the server on the embedded Redis; `make test`
# installs what the tests need (redis-server, Chromium, the e2e npm
# packages) and runs every test: Go with -race, the bench's quick runs, and
# the browser tests, then the deployment files' checks (make test-deploy:
# the chart, the alert rules, the dashboard, systemd, the image), and
# prints how long each part took. The release snapshot is make
# release-check's, not every test run's.
GO         ?= go
ARGS       ?=
BENCH      ?= cost herd clients gateway abandon busy autopilot
BENCH_ARGS ?=
SUDO       := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_UPDATED = /tmp/.waitroom-apt-updated
# Tools built from source once and kept (the gateway tests look here).
WAITROOM_BIN    ?= $(HOME)/.cache/waitroom/bin
TRAEFIK_VERSION ?= v3.6.12
BUILD_DIR       = .build

.PHONY: run build test test-go e2e pack-js deps deps-packages tools deps-redis deps-bench deps-browser deps-gateway deps-traefik deps-verify vet bench clean \
	test-deploy test-deploy-go release-check chart-check rules-check systemd-check image test-image \
	deps-image static-binary tool-goreleaser tool-helm tool-promtool tool-staticcheck \
	tool-govulncheck vulncheck

# The demo lets any room name work (-open-rooms) and mounts the demo
# protected endpoint the page places its order on (-demo); in production
# rooms exist once an operator made them (admin API), and the protected
# API is the shop's own.
run:
	$(GO) run ./server -open-rooms -demo $(ARGS)

# Version and commit as the released binary has them (VERSION, COMMIT
# below), so that `./waitroom -version` names the checkout it was built from.
build:
	$(GO) build -ldflags '$(VERSION_FLAGS)' -o waitroom ./server

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

# wrk: the HTTP load generator the joinpath benchmark can drive joins with.
deps-bench:
	@command -v wrk >/dev/null 2>&1 || { \
	  $(MAKE) --no-print-directory $(APT_UPDATED) && \
	  echo "installing wrk" && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
	@command -v wrk >/dev/null

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
	@[ -d static/e2e/node_modules/playwright-core ] && [ -d static/e2e/node_modules/typescript ] || npm ci --prefix static/e2e --no-audit --no-fund

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

# The entry-token examples verify with stock libraries: PyJWT (Debian's),
# jose (npm) and golang-jwt (its own module, fetched by go).
deps-verify:
	@/usr/bin/python3 -c 'import jwt, cryptography' 2>/dev/null || { \
	  $(MAKE) --no-print-directory $(APT_UPDATED) && \
	  echo "installing python3-jwt and python3-cryptography" && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-jwt python3-cryptography >/dev/null; }
	@command -v node >/dev/null 2>&1 || { \
	  $(MAKE) --no-print-directory $(APT_UPDATED) && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }
	@[ -d examples/verify/node/node_modules/jose ] || npm ci --prefix examples/verify/node --no-audit --no-fund

# What apt and npm install (and promtool, unpacked from Debian's package),
# then the tools built from the Go module proxy once per machine.
deps-packages: deps-redis deps-bench deps-browser deps-gateway deps-verify deps-edge tool-promtool
tools: deps-traefik tool-staticcheck tool-govulncheck tool-helm
deps: deps-packages tools

# go vet, gofmt, staticcheck and govulncheck (built from the Go module proxy
# once, pinned below) over every package, with the integration tests' files
# (staticcheck, with the tag, sees all but the fast lane's one-line switch),
# and the deploy-tagged ones too: deploy/ is
# a module of its own (its tests' Kubernetes and OpenAPI libraries stay out
# of the main module's requirements), so they run from inside it.
vet:
	@$(MAKE) --no-print-directory tool-staticcheck tool-govulncheck
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(STATICCHECK) -tags integration ./...
	cd deploy && $(GO) vet -tags deploy ./...
	cd deploy && $(STATICCHECK) -tags deploy ./...
	@$(MAKE) --no-print-directory vulncheck

# govulncheck against a database built here from golang.org/x/vulndb (the
# database's source, served by the module proxy) rather than vuln.go.dev: it
# is as fresh as VULNDB_VERSION. The standard library is checked at the
# toolchain go.mod names (fetched from the module proxy once), the one
# releases build with.
GO_TOOLCHAIN = $(shell sed -n 's/^toolchain //p' go.mod)
vulncheck:
	@$(MAKE) --no-print-directory tool-govulncheck
	GOTOOLCHAIN=$(GO_TOOLCHAIN) $(GOVULNCHECK) -db file://$(VULNDB) -tags integration ./...
	cd deploy && GOTOOLCHAIN=$(GO_TOOLCHAIN) $(GOVULNCHECK) -db file://$(VULNDB) -tags deploy ./...

# The parts of make test, in order; the first that fails stops the run.
# Parts joined by a comma run side by side, because the machine allows it:
# the tools compile while apt and npm download, and the Go and browser
# tests mostly wait (ticks, timeouts, pages) rather than compute. The first
# part's output shows as it comes; the others' is kept in
# .build/<part>.log and shown when they end. Each part's time and the
# total are printed at the end (and kept in .build/test-times).
# TEST_PARTS="deps vet test-go e2e test-edge test-deploy" runs them one at
# a time.
TEST_PARTS = deps-packages,tools vet test-go,e2e test-edge test-deploy

test: $(BUILD_DIR)/.gitignore
	@: > $(BUILD_DIR)/test-times; failed=; begin=$$(date +%s); \
	part() { start=$$(date +%s); $(MAKE) --no-print-directory $$1; rc=$$?; \
	  echo "$$1 $$(( $$(date +%s) - start )) s$$([ $$rc = 0 ] || echo ' (failed)')" >> $(BUILD_DIR)/test-times; \
	  return $$rc; }; \
	for g in $(TEST_PARTS); do \
	  first=$${g%%,*}; side=; \
	  for p in $$(echo "$${g#"$$first"}" | tr , ' '); do \
	    echo "== make $$p (beside $$first; its output: $(BUILD_DIR)/$$p.log)"; \
	    part $$p > $(BUILD_DIR)/$$p.log 2>&1 & side="$$side $$!:$$p"; done; \
	  echo "== make $$first"; part $$first || failed="$$failed $$first"; \
	  for s in $$side; do wait $${s%%:*} || failed="$$failed $${s#*:}"; \
	    echo "== make $${s#*:}: its output"; cat $(BUILD_DIR)/$${s#*:}.log; done; \
	  [ -z "$$failed" ] || break; done; \
	echo "total $$(( $$(date +%s) - begin )) s" >> $(BUILD_DIR)/test-times; \
	echo "== make test: time per part"; sed 's/^/   /' $(BUILD_DIR)/test-times; \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed"; exit 1; fi

# Every Go test: the fast lane's (plain `go test ./...`, hermetic) and the
# integration tests the build tag turns on (real redis-server, Sentinel,
# Cluster, nginx, Caddy, Traefik, the verify examples, the bench's quick
# runs), which never skip here: a missing tool fails them.
test-go: deps-redis deps-bench deps-gateway deps-traefik deps-verify
	WAITROOM_BIN=$(WAITROOM_BIN) $(GO) test -race -count=1 -tags integration -timeout 30m ./...

# Browser tests: headless Debian Chromium driven by playwright-core. The
# package test loads the client from the tarball pack-js makes.
e2e: deps-browser deps-redis deps-gateway pack-js
	WAITROOM_JS_TARBALL=$(CURDIR)/$(JS_TARBALL) node --test --test-concurrency=1 static/e2e/

# The edge connector (clients/edge): its types under tsc --strict, the
# shared vectors, and its scenarios on Node and on workerd from npm against
# a real waitroom (built here), redis-server and origin.
.PHONY: deps-edge test-edge bench-edge
deps-edge: deps-redis
	@command -v node >/dev/null 2>&1 || { \
	  $(MAKE) --no-print-directory $(APT_UPDATED) && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }
	@[ -d clients/edge/node_modules/workerd ] && [ -d clients/edge/node_modules/typescript ] || npm ci --prefix clients/edge --no-audit --no-fund
test-edge: deps-edge deps-browser $(BUILD_DIR)/.gitignore
	$(GO) build -o $(BUILD_DIR)/waitroom-edge ./server
	cd clients/edge && npx tsc -p tsconfig.json && \
	  WAITROOM_SERVER=$(CURDIR)/$(BUILD_DIR)/waitroom-edge node --test --test-concurrency=1 test/*.test.mjs
# The connector's cost per request on workerd (docs/edge.md).
bench-edge: deps-edge $(BUILD_DIR)/.gitignore
	$(GO) build -o $(BUILD_DIR)/waitroom-edge ./server
	WAITROOM_SERVER=$(CURDIR)/$(BUILD_DIR)/waitroom-edge node clients/edge/bench/bench.mjs

# Queue micro-benchmarks, then the load scenarios into results/
# (make bench BENCH_ARGS=-quick for a run of seconds).
bench: deps-redis deps-bench
	$(GO) test -run '^$$' -bench . -benchtime 3s ./queue/
	@for s in $(BENCH); do $(GO) run ./bench $$s -out results $(BENCH_ARGS) || exit 1; done

clean:
	rm -rf waitroom results static/e2e/shots $(BUILD_DIR)

# ---- Deployment files: release, image, chart, rules, dashboard, systemd ----
#
# make test-deploy runs each check below on its own and names those that
# failed, so one missing tool does not hide the others' results.

# Release, chart and rules tools, built from the Go module proxy only when
# missing, into a cache outside the work tree, so reruns and later clones on
# the machine reuse them. The versions are pinned here: a bump changes the
# file name, so the next run builds the new one. nice keeps a first build
# (minutes each) from starving other work on the machine.
TOOLS_BIN         ?= $(HOME)/.cache/waitroom/bin
GORELEASER_VERSION = v2.15.1
HELM_VERSION       = v3.22.0
STATICCHECK_VERSION = v0.8.2
STATICCHECK       := $(TOOLS_BIN)/staticcheck-$(STATICCHECK_VERSION)
GOVULNCHECK_VERSION = v1.9.0
GOVULNCHECK       := $(TOOLS_BIN)/govulncheck-$(GOVULNCHECK_VERSION)
# The vulnerability database's source at a commit (its date is in the
# version); indexdb, from the same commit, turns its OSV files into the
# layout govulncheck -db file:// reads.
VULNDB_VERSION     = v0.0.0-20261105234957-e22db6528018
INDEXDB           := $(TOOLS_BIN)/indexdb-$(VULNDB_VERSION)
VULNDB            := $(TOOLS_BIN)/vulndb-$(VULNDB_VERSION)
GORELEASER        := $(TOOLS_BIN)/goreleaser-$(GORELEASER_VERSION)
HELM              := $(TOOLS_BIN)/helm-$(HELM_VERSION)
# promtool is Debian's (package prometheus), unpacked into $(TOOLS_BIN)
# rather than installed: installing the package would also start a
# Prometheus server on a machine that runs systemd.
PROMTOOL          := $(TOOLS_BIN)/promtool-debian

# $(call go-tool,PACKAGE@VERSION,TARGET FILE[,GO INSTALL FLAGS])
define go-tool
	@mkdir -p $(TOOLS_BIN)
	@echo "building $(notdir $(2)) from the Go module proxy (once per machine, cached in $(TOOLS_BIN))"
	@tmp=$$(mktemp -d) && start=$$(date +%s) && \
	  GOBIN=$$tmp CGO_ENABLED=0 GOFLAGS=-buildvcs=false nice -n 19 $(GO) install $(3) $(1) && \
	  mv $$tmp/* $(2) && rmdir $$tmp && \
	  echo "built $(notdir $(2)) in $$(( $$(date +%s) - start )) s"
endef

$(GORELEASER):
	$(call go-tool,github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION),$@)
$(HELM):
	$(call go-tool,helm.sh/helm/v3/cmd/helm@$(HELM_VERSION),$@)
$(STATICCHECK):
	$(call go-tool,honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION),$@)
$(GOVULNCHECK):
	$(call go-tool,golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION),$@)
$(INDEXDB):
	$(call go-tool,golang.org/x/vulndb/cmd/indexdb@$(VULNDB_VERSION),$@)
$(VULNDB): | $(INDEXDB)
	@echo "building the vulnerability database from golang.org/x/vulndb@$(VULNDB_VERSION) (once per machine)"
	@dir=$$(cd $(TOOLS_BIN) && GO111MODULE=on $(GO) mod download -json golang.org/x/vulndb@$(VULNDB_VERSION) | \
	  sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p') && test -d "$$dir/data/osv" && \
	  rm -rf $@.tmp && $(INDEXDB) -vulns $$dir/data/osv -out $@.tmp && mv $@.tmp $@
$(PROMTOOL):
	@$(MAKE) --no-print-directory $(APT_UPDATED)
	@mkdir -p $(TOOLS_BIN)
	@echo "unpacking promtool from Debian's prometheus package into $(TOOLS_BIN)"
	@tmp=$$(mktemp -d) && cd $$tmp && apt-get download -qq prometheus && \
	  dpkg-deb --fsys-tarfile prometheus_*.deb | tar -x ./usr/bin/promtool && \
	  mv usr/bin/promtool $@ && cd / && rm -rf $$tmp

tool-goreleaser: $(GORELEASER)
tool-helm: $(HELM)
tool-staticcheck: $(STATICCHECK)
tool-govulncheck: $(GOVULNCHECK) $(VULNDB)
tool-promtool: $(PROMTOOL)

# Build outputs (image context, release snapshot) live in BUILD_DIR, which
# ignores itself.
$(BUILD_DIR)/.gitignore:
	@mkdir -p $(BUILD_DIR) && echo '*' > $@

# The JS client as an npm package (clients/js, built from static/waitroom.js).
JS_VERSION := $(shell sed -n 's/^  "version": "\(.*\)",$$/\1/p' clients/js/package.json)
JS_TARBALL  = $(BUILD_DIR)/waitroom-client-$(JS_VERSION).tgz
pack-js: $(BUILD_DIR)/.gitignore
	@command -v npm >/dev/null 2>&1 || { \
	  $(MAKE) --no-print-directory $(APT_UPDATED) && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }
	npm pack --silent --pack-destination $(BUILD_DIR) ./clients/js >/dev/null
	@test -s $(JS_TARBALL) && echo "pack-js: $(JS_TARBALL)"

# The released binary's flags: static, no cgo, version and commit in
# package main.
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT     ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
VERSION_FLAGS = -X main.version=$(VERSION) -X main.commit=$(COMMIT)
LDFLAGS     = -s -w $(VERSION_FLAGS)

# goreleaser check, then a snapshot release offline: the four binaries,
# their archives and checksums.txt. --snapshot needs no tag and publishes
# nothing; the config has no hooks. (A superset of `goreleaser build
# --snapshot`: the same builds, then the archive and checksum steps.)
release-check: $(GORELEASER) $(BUILD_DIR)/.gitignore
	$(GORELEASER) check
	nice -n 19 $(GORELEASER) release --snapshot --clean
	@for p in linux_amd64 linux_arm64 darwin_amd64 darwin_arm64; do \
	  ls $(BUILD_DIR)/dist/waitroom_$${p}*/waitroom >/dev/null || exit 1; \
	  grep -q "waitroom_.*_$${p}.tar.gz" $(BUILD_DIR)/dist/checksums.txt || { echo "no $$p archive in checksums.txt"; exit 1; }; done
	@(cd $(BUILD_DIR)/dist && sha256sum --quiet -c checksums.txt) && echo "release-check: 4 binaries, archives and checksums.txt verified"

# The container image (Dockerfile: scratch, the host-built binary, the CA
# bundle). buildah comes from Debian; vfs storage and chroot isolation need
# no overlay mount and no user namespace, so it builds inside a container
# too. Nothing is pulled.
IMAGE         ?= localhost/waitroom:dev
BUILDAH       ?= buildah --storage-driver vfs
IMAGE_CONTEXT  = $(BUILD_DIR)/image

# buildah builds; the smoke test reads the image config with jq, checks
# the binary with readelf (binutils) and asks it with curl.
deps-image:
	@for p in buildah:buildah jq:jq readelf:binutils curl:curl; do \
	  command -v $${p%%:*} >/dev/null 2>&1 && continue; \
	  $(MAKE) --no-print-directory $(APT_UPDATED) && \
	  echo "installing $${p#*:}" && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $${p#*:} >/dev/null || exit 1; \
	  command -v $${p%%:*} >/dev/null || exit 1; done

# The static binary as released, into the image context (systemd-check
# uses it too). Phony: the go command decides what is stale.
static-binary: $(BUILD_DIR)/.gitignore
	@mkdir -p $(IMAGE_CONTEXT)
	CGO_ENABLED=0 nice -n 19 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(IMAGE_CONTEXT)/waitroom ./server

image: deps-image static-binary
	cp /etc/ssl/certs/ca-certificates.crt $(IMAGE_CONTEXT)/
	$(BUILDAH) bud --isolation chroot --layers=false -q -f Dockerfile -t $(IMAGE) $(IMAGE_CONTEXT) >/dev/null
	@-$(BUILDAH) rmi --prune >/dev/null 2>&1
	@echo "image $(IMAGE): $$($(BUILDAH) images --format '{{.Size}}' $(IMAGE))"

# Containers may not run here: the smoke test copies the image's root file
# system out of a created container's mount and runs the binary from it.
test-image: image
	deploy/image-smoke.sh "$(IMAGE)" "$(BUILDAH)"

# helm built by go install reports Kubernetes 1.20 unless told: render for
# the oldest version the chart supports (the preStop sleep needs 1.30).
KUBE_VERSION = 1.30.0

chart-check: $(HELM) deps-redis
	$(HELM) lint --strict deploy/helm/waitroom
	$(HELM) lint --strict deploy/helm/waitroom -f deploy/helm/values/sentinel.yaml
	$(HELM) lint --strict deploy/helm/waitroom -f deploy/helm/values/cluster.yaml
	@$(HELM) template shop deploy/helm/waitroom --kube-version $(KUBE_VERSION) >/dev/null
	@$(HELM) template shop deploy/helm/waitroom --kube-version $(KUBE_VERSION) -f deploy/helm/values/sentinel.yaml >/dev/null
	@$(HELM) template shop deploy/helm/waitroom --kube-version $(KUBE_VERSION) -f deploy/helm/values/cluster.yaml >/dev/null
	cd deploy && $(GO) vet -tags deploy ./helm/
	cd deploy && WAITROOM_HELM=$(HELM) $(GO) test -tags deploy,integration -count=1 ./helm/

rules-check: $(PROMTOOL)
	$(PROMTOOL) check rules deploy/prometheus/alerts.yaml
	cd deploy/prometheus && $(PROMTOOL) test rules alerts_test.yaml

# The rules' and the dashboard's metrics against a running server, the
# deploy guide's variables against the binary's flags, and the OpenAPI
# document against the binary's answers (TestOpenAPIResponses). These Go
# tests (and the chart's, run by chart-check: they need helm) sit behind
# the deploy build tag in the deploy module (deploy/go.mod), so the main
# module's go test ./... leaves them to make test-deploy. They run with the
# integration tag too: the chart's test starts a real redis-server, which
# internal/redistest skips without it.
test-deploy-go:
	cd deploy && $(GO) vet -tags deploy .
	cd deploy && $(GO) test -tags deploy,integration -count=1 -skip 'TestSystemdUnit' .

# systemd-analyze verify wants ExecStart to exist: it checks a copy of the
# unit whose ExecStart is the static binary; then the offline security
# audit, at most 2.0 ("OK") exposure; systemd-sysusers reads the user file
# (a dry run on an empty root); and the Go test replays the unit's install
# steps and runs the binary as an unprivileged user on the files they lay
# out (as root: CI is).
systemd-check: static-binary
	@command -v systemd-analyze >/dev/null 2>&1 || { \
	  $(MAKE) --no-print-directory $(APT_UPDATED) && \
	  echo "installing systemd (for systemd-analyze)" && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null; }
	@tmp=$$(mktemp -d) && \
	  sed 's|^ExecStart=/usr/local/bin/waitroom|ExecStart=$(CURDIR)/$(IMAGE_CONTEXT)/waitroom|' \
	    deploy/systemd/waitroom.service > $$tmp/waitroom.service && \
	  systemd-analyze verify $$tmp/waitroom.service && \
	  { systemd-analyze security --offline=yes --threshold=20 $$tmp/waitroom.service > $$tmp/security; \
	    s=$$?; tail -n 1 $$tmp/security; [ $$s = 0 ]; } && \
	  mkdir -p $$tmp/root/etc && \
	  systemd-sysusers --dry-run --root=$$tmp/root $(CURDIR)/deploy/systemd/waitroom.sysusers; \
	  rc=$$?; rm -rf $$tmp; exit $$rc
	cd deploy && $(GO) test -tags deploy,integration -count=1 -run 'TestSystemdUnit' .

DEPLOY_CHECKS = chart-check rules-check test-deploy-go systemd-check test-image

test-deploy:
	@failed=; for t in $(DEPLOY_CHECKS); do \
	  echo "== $$t"; $(MAKE) --no-print-directory $$t || failed="$$failed $$t"; done; \
	  if [ -n "$$failed" ]; then echo "test-deploy: failed:$$failed"; exit 1; fi; \
	  echo "test-deploy: all of $(DEPLOY_CHECKS) passed"
