# driftpreview: see README.md. `make demo` and `make test` do all set-up themselves.
SHELL       := /bin/bash
GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
BIN         := bin/driftpreview
# testenv.sh prints the directory holding kube-apiserver and etcd (built once, cached).
# Evaluated on first use only, so `make lint` never builds the test cluster.
TESTENV      = $(eval TESTENV := $$(shell fixtures/cluster/testenv.sh))$(TESTENV)
# The race detector runs where there is concurrency to check (the bot service, the
# live reader); the rest runs without it. Together they are ./... (lint checks that).
# bot/preview runs without it: every render there re-executes the test binary as its
# render child (render/child.go), and a race-instrumented child per render makes the
# package take longer than the whole suite's budget.
RACE_PKGS   ?= $(shell $(GO) list ./bot/... ./diffing/... | grep -v '/bot/preview$$')
PLAIN_PKGS  ?= ./cmd/... ./render/... ./deploy/... ./fixtures/... ./bot/preview

.PHONY: build image testenv testdeps test lint demo bench bench-watch clean

VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT      ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# The same stamp .goreleaser.yaml and the Dockerfile use.
LDFLAGS     := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

# Static, as the release (.goreleaser.yaml) and the image build it: a binary
# linked against libc pays the dynamic loader at every start, about 2.5 ms of
# CPU for the CLI and for each render process it starts (issue 25).
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/driftpreview

IMAGE       ?= ghcr.io/driftpreview/driftpreview:$(VERSION)

## image: the container image from the Dockerfile, with the first of docker, podman or
## buildah that can build here; skipped with a message when none can (e.g. a docker
## client without a daemon). BuildKit (docker's default builder since 23.0) and
## buildah skip the Dockerfile's unused prebuilt stage.
image:
	@builder=""; \
	for b in docker podman buildah; do \
	  command -v $$b >/dev/null 2>&1 || continue; \
	  if [ $$b = buildah ] || $$b info >/dev/null 2>&1; then builder=$$b; break; fi; \
	  echo "make image: $$b is installed but cannot build here ($$b info failed; is its daemon running?)"; \
	done; \
	if [ -z "$$builder" ]; then \
	  echo "make image: skipped: no working container builder (docker, podman or buildah) on this machine; releases build the image with .goreleaser.yaml"; \
	  exit 0; \
	fi; \
	echo "make image: building $(IMAGE) with $$builder"; \
	DOCKER_BUILDKIT=1 $$builder build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE) .

## testenv: build the real kube-apiserver v1.37.2 and etcd v3.6.16 into the user cache (idempotent)
testenv:
	@fixtures/cluster/testenv.sh

## testdeps: Debian's PostgreSQL for the shared-queue test and Debian's Chromium for
## the report page's browser test (each installed when missing)
testdeps:
	@fixtures/cluster/postgres.sh
	@fixtures/cluster/chromium.sh

## test: every test, against the real test cluster; bot and diffing under -race
test: testenv testdeps
	DRIFTPREVIEW_CHECK_SOURCE_MARKERS=1 KUBEBUILDER_ASSETS="$(TESTENV)" $(GO) test -count=1 -timeout 30m $(PLAIN_PKGS)
	DRIFTPREVIEW_CHECK_SOURCE_MARKERS=1 KUBEBUILDER_ASSETS="$(TESTENV)" $(GO) test -count=1 -race -timeout 30m $(RACE_PKGS)

lint:
	@missing=$$(comm -13 <($(GO) list $(RACE_PKGS) $(PLAIN_PKGS) | sort) <($(GO) list ./... | sort)); \
	  if [ -n "$$missing" ]; then echo "packages make test would not run: $$missing"; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

## demo: a real preview of a bundled repo against the cached test cluster, in the
## CLI's default format (text on a terminal, else markdown); DEMO_FORMAT=text|markdown|json chooses
DEMO_FORMAT ?=
demo: testenv build
	KUBEBUILDER_ASSETS="$(TESTENV)" $(GO) run ./fixtures/demo $(if $(DEMO_FORMAT),-format $(DEMO_FORMAT))

## bench: one report (issue 25): the goals met or missed, preview against flate on three real
## Flux repositories (the peer table), and against the kubectl pipeline on a generated monorepo
## (fixtures/bench); printed and written into BENCHMARKS.md. Not part of make test. Quick run:
## make bench BENCH_SCALES=50 BENCH_COUNT=1 BENCH_PEER_COUNT=1 BENCH_FLUX=0
BENCH_SCALES ?= 50,200
BENCH_COUNT  ?= 5
BENCH_KUBECTL_COUNT ?= 1
BENCH_PRS    ?= small,base,wide
BENCH_FLUX   ?= 200
# paired rounds per cell of the peer table (0 skips it); the field-trial bundles it clones
# (test data outside the project, read by path); the flate binary (default: installed once
# by fixtures/bench/flate.sh with Go 1.27 from the module proxy; empty skips the peer table)
BENCH_PEER_COUNT ?= 5
BENCH_PEER_REPOS ?= ../shared/field-trial/repos
BENCH_FLATE  ?= $(eval BENCH_FLATE := $$(if $$(filter 0,$$(BENCH_PEER_COUNT)),,$$(shell fixtures/bench/flate.sh)))$(BENCH_FLATE)
BENCH_ARGS   ?=
# kubectl.sh builds the upstream kubectl v1.37.2 next to the test cluster (once, cached).
KUBECTL       = $(eval KUBECTL := $$(shell fixtures/cluster/kubectl.sh))$(KUBECTL)
bench: testenv build
	KUBEBUILDER_ASSETS="$(TESTENV)" $(GO) run ./fixtures/bench/run -bin $(BIN) -kubectl "$(KUBECTL)" \
	  -scales $(BENCH_SCALES) -count $(BENCH_COUNT) -kubectl-count $(BENCH_KUBECTL_COUNT) -prs $(BENCH_PRS) -flux-scale $(BENCH_FLUX) \
	  -peer-count $(BENCH_PEER_COUNT) -peer-repos "$(BENCH_PEER_REPOS)" -flate "$(BENCH_FLATE)" $(BENCH_ARGS)

## bench-watch: serve with BENCH_WATCH_PRS open pull requests on one cluster of fixtures/bench
## T=200 (5,000 objects): time to preview them, API requests per minute and RSS at rest, time from
## a kubectl edit to the updated comment (issue 26); results into BENCHMARKS.md. Not part of make test.
BENCH_WATCH_PRS   ?= 200
BENCH_WATCH_REST  ?= 60s
BENCH_WATCH_EDITS ?= 5
bench-watch: testenv
	KUBEBUILDER_ASSETS="$(TESTENV)" DRIFTPREVIEW_BENCH_WATCH="$(CURDIR)/BENCHMARKS.md" BENCH_WATCH_PRS=$(BENCH_WATCH_PRS) \
	  BENCH_WATCH_REST=$(BENCH_WATCH_REST) BENCH_WATCH_EDITS=$(BENCH_WATCH_EDITS) \
	  $(GO) test ./bot/server/e2e -run '^TestWatchBench$$' -count 1 -timeout 3h -v $(BENCH_ARGS)

clean:
	rm -rf bin
