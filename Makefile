# driftpreview: see README.md. `make demo` and `make test` do all set-up themselves.
GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
BIN         := bin/driftpreview
# testenv.sh prints the directory holding kube-apiserver and etcd (built once, cached).
# Evaluated on first use only, so `make lint` never builds the test cluster.
TESTENV      = $(eval TESTENV := $$(shell fixtures/cluster/testenv.sh))$(TESTENV)
# Packages cheap enough to run under the race detector on every test run.
RACE_PKGS   ?= ./bot/... ./diffing/...

.PHONY: build testenv test test-race lint demo clean

build:
	$(GO) build -o $(BIN) ./cmd/driftpreview

## testenv: build the real kube-apiserver v1.37.2 and etcd v3.6.16 into the user cache (idempotent)
testenv:
	@fixtures/cluster/testenv.sh

## test: every test, against the real test cluster; the bot and diffing packages also under -race
test: testenv
	KUBEBUILDER_ASSETS="$(TESTENV)" $(GO) test -count=1 -timeout 30m ./...
	KUBEBUILDER_ASSETS="$(TESTENV)" $(GO) test -count=1 -race -timeout 30m $(RACE_PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

## demo: a real preview of a bundled repo against the cached test cluster
demo: testenv build
	KUBEBUILDER_ASSETS="$(TESTENV)" $(GO) run ./fixtures/demo

clean:
	rm -rf bin
