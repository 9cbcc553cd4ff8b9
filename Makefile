# Collie for Linux. `make run` runs the bridge with a demo agent; `make test`
# runs every test (and installs the Debian packages the tests need, as root).

# One version source (R14): the top entry of debian/changelog, without the
# Debian revision.
VERSION := $(shell awk -F'[()]' 'NR==1 { split($$2, v, "-"); print v[1] }' debian/changelog)
PKG     := github.com/collie-linux/collie
LDFLAGS := -X $(PKG)/internal/cli/version.version=$(VERSION)
GO      ?= go
# Where build puts the binaries, and extra flags for go build and the
# linker (debian/rules sets them: -buildmode=pie, -B gobuildid).
# HOOKBUILDFLAGS are collie-hook's go build flags (see build).
BIN            ?= bin
GOBUILDFLAGS   ?=
GOLDFLAGS      ?=
HOOKBUILDFLAGS ?=
STATICCHECK_VERSION := v0.8.2

.PHONY: all build run test cross deps lint fuzz bench bench-ratios man completions deb version clean

all: build

# collie-hook, the program a coding agent's hook runs before every tool
# call, is built for a cheap start: without cgo (no dynamic loader, no
# libc) and position-dependent (no relocation of its data at each start):
# together a third of what its start costs. It has no C code to harden,
# so GOBUILDFLAGS (-buildmode=pie) are not its.
build:
	$(GO) build -trimpath $(GOBUILDFLAGS) -ldflags '$(LDFLAGS) $(GOLDFLAGS)' -o $(BIN)/ ./cmd/collie ./cmd/collie-agent
	CGO_ENABLED=0 $(GO) build -trimpath $(HOOKBUILDFLAGS) -ldflags '$(GOLDFLAGS)' -o $(BIN)/ ./cmd/collie-hook

# The version the binaries report (R14).
version:
	@echo $(VERSION)

# The Debian package, bin/collie_<version>_<arch>.deb: see
# packaging/build-deb.sh (modules fetched first, then an offline build).
deb:
	./packaging/build-deb.sh

run: build
	./bin/collie demo

# Tests that need real systemd run as root (CI runs as root); elsewhere they
# skip and say why. The tests that hold a page to a time budget run after the
# rest, alone: on a 2-core machine a budget in milliseconds means nothing
# beside a dozen test binaries and a user manager. TestCaddyInChromium_D6
# holds no budget but runs chromium and caddy: alone, it takes no CPU from
# the budgets of the rest. TestNotificationsInChromium_D6 waits for each
# notification, but under a full run's load headless chromium was seen to
# show none of a second round within two minutes (alone: 5 s), so it runs
# alone too. TestLatencyToolCallToCard holds collie mcp's
# tool call to card to its budget; TestLatencyClaudeHookToCard_D1 measures
# the real Claude Code's tool call to card through collie's hook, and
# TestHookCPU_NoQuestion the hook's CPU against a baseline.
ALONE := ^(TestHostileSnapshotKeepsPageResponsive_X6_D6|TestWebAppInChromium|TestCaddyInChromium_D6|TestNotificationsInChromium_D6|TestLatencyToolCallToCard|TestLatencyClaudeHookToCard_D1|TestHookCPU_NoQuestion)$$
# go test runs through internal/testkit/testsummary: go test's own output (each
# package's ok or FAIL line, a failed test's log), its exit status, and at
# the end the tests skipped in either run, by reason.
TESTSUMMARY := bin/.testsummary
test: deps lint cross
	@$(GO) build -o $(TESTSUMMARY) ./internal/testkit/testsummary
	@skips=$$(mktemp); trap 'rm -f $$skips' EXIT; \
	echo "$(GO) test -count=1 -timeout 30m -skip '$(ALONE)' ./..."; \
	$(TESTSUMMARY) -skips $$skips $(GO) test -count=1 -timeout 30m -skip '$(ALONE)' ./...; st=$$?; \
	if [ $$st -eq 0 ]; then \
		echo "$(GO) test -p 1 -count=1 -run '$(ALONE)' -v ./internal/bridge/device ./internal/agent/mcpserver ./internal/suite/e2e ./internal/agent/ask"; \
		$(TESTSUMMARY) -v -skips $$skips $(GO) test -p 1 -count=1 -run '$(ALONE)' -v ./internal/bridge/device ./internal/agent/mcpserver ./internal/suite/e2e ./internal/agent/ask; st=$$?; \
	fi; \
	$(TESTSUMMARY) -report $$skips; exit $$st

# The module builds for Windows and macOS too (T6): the socket transport
# refuses there, the token transport works.
cross:
	GOOS=windows GOARCH=amd64 $(GO) build ./...
	GOOS=darwin GOARCH=arm64 $(GO) build ./...

deps:
	@./.ci/deps

lint:
	@out=$$(gofmt -l cmd internal); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# A short run of every fuzz target; the seed corpora live in testdata/.
# FUZZTIME is a time (20s) or a count of executions (50000x).
FUZZTIME ?= 20s
# Every Fuzz function under internal/, found rather than listed (a new
# one cannot be left out): package:FuzzName.
FUZZ_TARGETS := $(shell grep -r --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]*' internal | sed -E 's|^internal/(.*)/[^/]*:func (Fuzz.*)$$|\1:\2|' | sort)
# A finding is a failure with a reproducer written to the target's
# testdata/fuzz/FuzzName/. Go 1.26's fuzz coordinator can end a timed run
# with a bare "context deadline exceeded" and no reproducer (a race at the
# end of -fuzztime, golang/go#75804, fixed in Go 1.27): that is said, and
# is not a failure. Any other failure (a seed that fails, a build error)
# is one.
fuzz:
	@found=0; races=0; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; corpus=internal/$$pkg/testdata/fuzz/$$fn; \
		echo "fuzz $$fn in internal/$$pkg"; \
		before=$$(ls $$corpus 2>/dev/null); \
		log=$$(mktemp); \
		{ $(GO) test -run='^$$' -fuzz="^$$fn\$$" -fuzztime=$(FUZZTIME) ./internal/$$pkg 2>&1; echo "exit $$?" >>$$log.st; } | tee $$log; \
		st=$$(cat $$log.st); out=$$(cat $$log); rm -f $$log $$log.st; \
		[ "$$st" = "exit 0" ] && continue; \
		new=$$(ls $$corpus 2>/dev/null | grep -vxF "$$before"); \
		if [ -z "$$new" ] && echo "$$out" | grep -qx '    context deadline exceeded' && ! echo "$$out" | grep -q 'Failing input written'; then \
			echo "fuzz: $$fn ended with Go's fuzz-coordinator race (context deadline exceeded, no reproducer written; golang/go#75804): not a finding"; \
			races=$$((races+1)); continue; \
		fi; \
		if [ -n "$$new" ]; then echo "fuzz: $$fn found a failing input: $$corpus/$$new (go test -run=$$fn/$$new ./internal/$$pkg replays it)"; fi; \
		found=$$((found+1)); \
	done; \
	echo "fuzz: $(words $(FUZZ_TARGETS)) targets run: $$found failed, $$races cut short by Go's coordinator race"; \
	[ $$found -eq 0 ]

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./internal/protocol/sanitize ./internal/protocol/wire ./internal/linux/sockpath ./internal/bridge/upstream ./internal/agent/callercheck ./internal/bridge/audit
	$(GO) test -run='^$$' -bench='^(BenchmarkQuestionLatency|BenchmarkLoadThousand|BenchmarkStreamingAgent)$$' -benchtime=1x -timeout=30m ./internal/bridge
	$(GO) test -run='^$$' -bench='^BenchmarkStreamingAgent$$' -benchtime=1x ./internal/bridge -args -stream.page
	$(GO) test -run='^$$' -bench='^BenchmarkLoadThousand$$' -benchtime=1x ./internal/bridge -args -load.transport https

# The speed figures alone, each a ratio measured side by side in one run
# (the machine may be shared; each side's fastest run counts): a 4 MiB
# snapshot's DecodeSnapshot against encoding/json.Unmarshal (x_unmarshal,
# budget 1.5) and Block on 64 KiB of mixed text against the cleaner before it was made fast
# (new_MB/s, legacy_MB/s, x_legacy) and the one before the byte automaton (x_oracle;
# on mixed scripts new_GB/s, oracle_GB/s), each with the load. `make bench` prints them too.
bench-ratios:
	$(GO) test -run='^$$' -bench='^(BenchmarkSnapshotVsUnmarshal|BenchmarkMixedVsLegacy|BenchmarkMultilingualVsOracle|BenchmarkKeptAliveVsBare|BenchmarkGuardVsPoll|BenchmarkDeltaVsWhole)$$' -benchtime=3s ./internal/protocol/wire ./internal/protocol/sanitize ./internal/bridge/upstream ./internal/bridge/push/guard

# Man pages: Markdown sources in man/, roff generated and checked in.
MD2MAN := $(GO) run github.com/cpuguy83/go-md2man/v2@v2.0.7
MANPAGES := man/collie.1 man/collie-agent.1 man/collie.toml.5 man/collie-durable.7
man: $(MANPAGES)
man/%: man/%.md
	$(MD2MAN) -in $< -out $@

# Shell completions: generated from collie's command table, checked in;
# TestCompletionsGenerated_L4 fails until they are regenerated.
completions:
	$(GO) test -count=1 ./cmd/collie -run '^TestCompletionsGenerated_L4$$' -update

clean:
	rm -rf bin
