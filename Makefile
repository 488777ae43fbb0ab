# anamnesis — cross-machine memory for Claude Code.
# make install   build and install the CLI (go install ./cmd/anamnesis)
# make test      gofmt + go vet + staticcheck + go mod tidy and go generate unchanged + every unit and CLI test (what .ci/run runs)
# make race      every package's tests under the race detector (.ci/run runs it too)
# make e2e       tests against the real Claude Code CLI, MCP Inspector and tailscaled (.ci/run runs it too)
# make fuzz      a short run of every fuzz target (.ci/run runs it too)
# make stress    long fault and load runs (killed syncs, 8 concurrent processes, fuzzing)
# make bench     speed figures on synthetic stores (SIZES=10000,100000; LOCOMO=dir adds recall)
# make bench-startup  process start-up: nothing, --version, the hooks at 10,000 notes
# make bench-recall LOCOMO=dir   LoCoMo recall@k / MRR vs the grep baseline
# make bench-loop  what reaches the model across two machines (hit rate, precision, echoes)
# make bench-consolidate  a months-of-sessions project before and after `consolidate`
# make cross     build and go vet for every release platform (CGO_ENABLED=0; .ci/run runs it)
# make release   stripped binaries for every platform, SHA256SUMS and install.sh in dist/

GO      ?= go
BIN     ?= bin/anamnesis
SIZES   ?= 10000,100000
BENCHDIR ?= bench-out
# LoCoMo conversations (never committed): make bench LOCOMO=../shared/data/locomo
LOCOMO  ?=

.PHONY: all build install test tidy-check generate-check race release-test e2e fuzz stress vet lint fmt-check bench bench-scale bench-startup bench-recall bench-loop bench-consolidate cross release clean

all: build

# -buildvcs=true records the git commit for --version even where GOFLAGS
# turns it off. Every hook is a new process, so the binary is built for
# start-up: CGO_ENABLED=0 (static: no dynamic loader, no cgo runtime; the
# SQLite driver is pure Go) and urfave/cli without its man-page and
# markdown generators (their markdown parser's package initialisers ran in
# every process). Measured with make bench-startup.
BUILDTAGS ?= urfave_cli_no_docs
build install: export CGO_ENABLED = 0
build:
	$(GO) build -buildvcs=true -tags $(BUILDTAGS) -o $(BIN) ./cmd/anamnesis

install:
	$(GO) install -buildvcs=true -tags $(BUILDTAGS) ./cmd/anamnesis
	@echo "installed $$($(GO) env GOPATH)/bin/anamnesis"

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# staticcheck at a pinned version, fetched through the module proxy on
# first use (not a go.mod tool: its dependencies would move ours).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(STATICCHECK) -tags e2e ./e2e/
	$(GO) run $(STATICCHECK) -tags release ./cmd/anamnesis/

test: fmt-check vet lint tidy-check generate-check
	$(GO) test -count=1 ./...

# go.mod and go.sum as go mod tidy leaves them (Go 1.23+: -diff changes
# nothing and fails on a difference; downloads come from the module proxy).
tidy-check:
	$(GO) mod tidy -diff

# Generated files as go generate writes them: the FTS5 tokenizer's tables
# (internal/fts5token, probed from the linked SQLite; no network). The
# working tree before and after is compared, not HEAD, so uncommitted work
# elsewhere does not fail it; what generate changed stays for git diff.
generate-check:
	@before=$$(git diff; git ls-files -o --exclude-standard); \
	$(GO) generate ./... || exit 1; \
	after=$$(git diff; git ls-files -o --exclude-standard); \
	if [ "$$before" != "$$after" ]; then git status --short; echo "go generate changed files (see git diff): commit what it wrote"; exit 1; fi

# Every package's tests under the race detector (-short trims the long
# property and stress runs; the web UI and the MCP server share one Store
# across goroutines). .ci/run runs it after make test.
race:
	$(GO) test -race -short -count=1 ./...

# The release and install check (build tag release): builds a release
# binary with scripts/release.sh, serves it on loopback and installs it
# with install.sh. Minutes on a cold cache, so not in make test; .ci/run
# runs it.
release-test:
	$(GO) test -tags release -count=1 -run 'TestReleaseAndInstallScript|TestVersionOfACheckoutBuild' ./cmd/anamnesis/

# A short run of every fuzz target (seeds are in the f.Add calls; go test
# runs them as ordinary tests too). Budgets are execution counts: a duration
# -fuzztime can fail with a spurious "context deadline exceeded" in Go 1.26's
# fuzz coordinator (golang/go#75804). Each target's wall time is printed; it
# includes building the package and everything it imports with coverage
# instrumentation, which is most of the time for targets whose package
# imports Tailscale (CONTRIBUTING lists measured times).
# FUZZ_SCALE=12 runs 12 times the executions; FUZZTIME=30s forces a duration.
FUZZ_SCALE ?= 1
FUZZTIME ?=
# Each new interesting input is minimized for at most this many runs
# (Go's default is 60 s each: FuzzPostingsEdits, whose runs are SQLite
# transactions, spent most of its four minutes there).
FUZZ_MINIMIZE ?= 200x
FUZZ_TARGETS = FuzzParse:./note:150000 FuzzParseTranscript:./claudecode:6000 FuzzMatchExpr:./index:80000 FuzzMerge3:./gitsync:120000 FuzzMergeNote:./gitsync:12000 FuzzEach:./internal/fts5token:15000 FuzzPostingsEdits:./index:2000 FuzzHTML:./internal/markdown:200000 FuzzIncoming:./gitsync:2000 FuzzRenderMemoryBlock:./claudecode:15000 FuzzPackScanner:./gitsync:100000 FuzzPackIndexer:./gitsync:20000 FuzzApplyDelta:./gitsync:100000 FuzzPackIdx:./gitsync:100000 FuzzVectorFile:./index:20000 FuzzRedactIdempotent:./claudecode:50000
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		name=$${t%%:*}; rest=$${t#*:}; pkg=$${rest%%:*}; n=$${rest#*:}; \
		budget="$(FUZZTIME)"; [ -n "$$budget" ] || budget=$$((n * $(FUZZ_SCALE)))x; \
		echo "fuzz $$name ($$pkg, $$budget)"; start=$$(date +%s); \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $$budget -fuzzminimizetime $(FUZZ_MINIMIZE) $$pkg || exit 1; \
		echo "fuzz $$name took $$(( $$(date +%s) - start )) s (instrumented build included)"; \
	done

# Heavy fault and load runs: 60 killed syncs, 60 s of 8 concurrent
# processes, many randomized convergence seeds, 2 minutes per fuzz target.
stress:
	ANAMNESIS_CRASH_RUNS=60 ANAMNESIS_STRESS_SECONDS=60 $(GO) test -count=1 -timeout 30m -run 'KilledSyncs|EightProcesses' -v ./cmd/anamnesis/
	for s in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do ANAMNESIS_SEED=$$s $(GO) test -count=1 -run Randomized ./gitsync/ || exit 1; done
	$(MAKE) fuzz FUZZ_SCALE=12

# End-to-end tests with real clients (Claude Code, MCP Inspector); they
# npm-install them into .cache/e2e on first use.
# They take about six minutes: each test's result is printed as it ends
# (go test -v, filtered), and the whole log when one fails.
e2e:
	@log=$$(mktemp); \
	$(GO) test -tags e2e -count=1 -timeout 20m -v ./e2e/... > $$log 2>&1 & pid=$$!; \
	tail -n +1 -f --pid=$$pid $$log | grep --line-buffered -E '^(--- |ok |FAIL|panic:)'; \
	wait $$pid; status=$$?; \
	if [ $$status -ne 0 ]; then grep -v '^=== ' $$log | tail -n 400; fi; \
	rm -f $$log; exit $$status

# Go micro-benchmarks (10,000-note store; ./webui/: every page of anamnesis ui),
# then the figures the issues name.
bench: build
	$(GO) test -run '^$$' -bench . -benchtime 20x . ./webui/
	@echo "vector leg at 10,000 and 100,000 notes of 768 dimensions (about two minutes to set up)"
	$(GO) test -run '^$$' -bench NearestVectors -benchtime 10x ./index/
	$(GO) run ./cmd/anamnesis-bench -sizes $(SIZES) -scale-sizes $(SCALE_SIZES) -bin $(BIN) -dir $(BENCHDIR) $(if $(LOCOMO),-locomo $(LOCOMO))

# Start-up figures only (about a minute; the 10k store is reused): a Go
# process that does nothing, --version, and the session-start and prompt
# hooks at 10,000 notes, p50 of 41 processes each. BENCH_BINS=a,b compares
# binaries with their runs interleaved.
BENCH_BINS ?= $(BIN)
# What grows with the store (issue 29), each figure a process of $(BIN) with
# its peak RSS: write, hook session-end, no-change sync and reindex, pulls of
# 100 and 1,000 notes, first syncs, full reindex.
SCALE_SIZES ?= 1000,10000,100000
# The release before, comma-separated before $(BIN), runs interleaved with it:
# make bench-scale SCALE_BINS=/tmp/anamnesis-prev,bin/anamnesis
SCALE_BINS ?= $(BIN)
SCALE_ROUNDS ?= 1
bench-scale: build
	$(GO) run ./cmd/anamnesis-bench -sizes '' -scale-sizes $(SCALE_SIZES) -scale-rounds $(SCALE_ROUNDS) -bin $(SCALE_BINS) -dir $(BENCHDIR)

bench-startup: build
	$(GO) run ./cmd/anamnesis-bench -startup -bin $(BENCH_BINS) -dir $(BENCHDIR)

# Recall on LoCoMo only: make bench-recall LOCOMO=../shared/data/locomo
# With a semantic leg: EMBEDDER=ollama,http://127.0.0.1:11434,nomic-embed-text
# (MODE=hybrid by default then, or vec; an API key comes from
# ANAMNESIS_EMBED_API_KEY).
bench-recall:
	@test -n "$(LOCOMO)" || { echo "usage: make bench-recall LOCOMO=path/to/locomo"; exit 2; }
	$(GO) run ./cmd/anamnesis-bench -recall-only -locomo $(LOCOMO) -dir $(BENCHDIR) $(if $(EMBEDDER),-embedder $(EMBEDDER)) $(if $(MODE),-mode $(MODE))

# Memory in the loop: two machines and a hub, scripted sessions through the
# real hooks and MCP server, probe prompts on the other machine; prints the
# hit rate, prompt precision, echo rate, characters injected and the hooks'
# p50 at 10,000 notes (about a minute; the 10k store is reused).
bench-loop: build
	$(GO) run ./cmd/anamnesis-bench -loop -bin $(BIN) -dir $(BENCHDIR)

# Consolidation on three months of one project's sessions (a scripted model
# that distils one note per recurring topic): live notes, SessionStart's
# characters and the session outcomes it carries, recall@8, before and after.
bench-consolidate:
	ANAMNESIS_BENCH_CONSOLIDATE=1 $(GO) test -count=1 -v -run TestConsolidateMonthsOfSessions .

# The platforms a release ships for; Claude Code runs on all of them.
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64

# Cross-compile the CLI and vet every package (tests included) for each
# platform, so code behind build tags is type-checked where it cannot
# run. CGO_ENABLED=0 and -trimpath as in a release (the SQLite driver is
# pure Go), which also warms the build cache for make release.
cross:
	@for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; start=$$(date +%s); \
		GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GO) build -trimpath -tags $(BUILDTAGS) -o /dev/null ./cmd/anamnesis || exit 1; \
		GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GO) vet ./... || exit 1; \
		echo "cross $$p: build and vet took $$(( $$(date +%s) - start )) s"; \
	done

# make release VERSION=v0.1.0: stripped, static binaries for PLATFORMS in
# dist/ (anamnesis_<version>_<os>_<arch>[.exe]), SHA256SUMS and
# install.sh (scripts/release.sh). The version defaults to the nearest
# v* tag (git describe), the commit and build date are stamped for
# --version.
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || echo v0.0.0-dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILT   ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
DIST    ?= dist
release:
	VERSION=$(VERSION) COMMIT=$(COMMIT) BUILT=$(BUILT) DIST=$(DIST) PLATFORMS="$(PLATFORMS)" TAGS=$(BUILDTAGS) GO=$(GO) sh scripts/release.sh
	@ls -l $(DIST)

clean:
	rm -rf bin dist $(BENCHDIR)
