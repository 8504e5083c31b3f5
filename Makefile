# OpenClaw Edge — build, run and test. `make run` and `make test` do all set-up
# themselves on a machine with Go (≥ 1.26) installed.

GO        ?= go
BIN       ?= bin
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Benchmarks: BENCHTIME=2s make bench for steadier figures.
BENCHTIME ?= 1s

.PHONY: all build build-pure run test test-deps test-ui bench-local bench-llama release runner-variants bench-real eval-memory test-unit-filter test-crash test-short check bench fake-model deps fuzz test-load bench-import test-conversation image image-test clean

all: build

## deps: what building needs: the toolchain, modules and the headers the
## embedded llama.cpp needs (`make build` and `make run` stop here)
deps:
	@command -v $(GO) >/dev/null || { echo "Go is required: https://go.dev/dl/"; exit 1; }
	@$(GO) mod download
	@models/llamacpp/install-deps.sh

## test-deps: what only the tests need: dovecot for the e-mail channel's tests
## (apt/brew; its system service is not left running), iproute2 for the LAN
## pairing test's network namespaces, chromium for the dashboard's browser tests
test-deps: deps
	@engine/channel/email/emailtest/install-deps.sh
	@engine/pair/lan/install-deps.sh
	@appliance/dashboardtest/install-deps.sh

# RUNNER_VARIANT: the CPU variant of openclaw-runner built for this machine
# (models/llamacpp/variant.go: x86-64-v4 with AVX-512, x86-64-v3 with AVX2,
# x86-64; armv8.2-a-dotprod-fp16 for a Pi 5, armv8-a). Each variant's cgo
# flags compile llama.cpp once more (minutes), so build, test and bench all
# use this one; `make release` builds them all. RUNNER_VARIANT=x86-64 make
# build for a binary that runs on any x86-64.
# (Both are worked out once, on first use: `go run` of a small pure-Go helper.)
ifeq ($(origin RUNNER_VARIANT),undefined)
RUNNER_VARIANT = $(eval RUNNER_VARIANT := $$(firstword $$(shell GOOS= GOARCH= $(GO) run ./appliance/runnervariant host)))$(RUNNER_VARIANT)
endif
RUNNER_CFLAGS = $(eval RUNNER_CFLAGS := $$(shell GOOS= GOARCH= $(GO) run ./appliance/runnervariant flags $(RUNNER_VARIANT)))$(RUNNER_CFLAGS)
RUNNER_ENV    = CGO_CFLAGS="$(RUNNER_CFLAGS)" CGO_CXXFLAGS="$(RUNNER_CFLAGS)"

## build: bin/openclaw-gateway (pure Go), bin/openclaw-runner (llama.cpp, cgo, for this CPU) and bin/openclaw
# (with bin/openclaw-migrate beside it: `openclaw migrate` runs it, so the
# other commands do not link its SQLite and zstd readers)
# The gateway never links llama.cpp (docs/design.md §11: its idle RSS within 2 MB
# of the pure build's): local models run in openclaw-runner, which the
# gateway finds beside its own executable (or $OPENCLAW_RUNNER, or $PATH).
# (No -trimpath, no tags on the runner: they would change the build-cache key
# of the llama.cpp package and compile it once more.)
build: deps
	@echo "openclaw-runner: building the $(RUNNER_VARIANT) variant only ($(RUNNER_CFLAGS); this CPU's best unless RUNNER_VARIANT is set); make release builds every variant"
	$(RUNNER_ENV) $(GO) build -ldflags "$(LDFLAGS) -X main.variant=$(RUNNER_VARIANT)" -o $(BIN)/openclaw-runner ./appliance/runner
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/openclaw-gateway ./appliance
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/openclaw-memindex ./appliance/memindex
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/openclaw-whatsapp ./appliance/whatsapp
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/openclaw ./cli
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/openclaw-migrate ./cli/migrate/openclaw-migrate

## build-pure: the gateway alone, pure Go, no C compiler needed; cross-compiles (e.g. GOARCH=arm64)
# Since the runner became its own binary this is the gateway `make build`
# writes (the nollamacpp tag no longer changes it); kept for scripts that use
# it. Without openclaw-runner beside it, local models say how to install one.
build-pure:
	CGO_ENABLED=0 $(GO) build -tags nollamacpp -ldflags "$(LDFLAGS)" -o $(BIN)/openclaw-gateway-pure ./appliance

## run: build, then run the gateway in the foreground (state in ~/.openclaw-edge or $OPENCLAW_STATE_DIR)
run: build
	$(BIN)/openclaw-gateway run

# LLAMA_PKGS: the packages that link (or test against) the embedded llama.cpp.
# Every distinct flag set (-race, tags) compiles llama.cpp again (minutes on
# 2 cores), so they are built once, with the flags `make build` uses; every
# package, these included, also runs under -race with llama.cpp left out.
# The gateway (./appliance) is not among them: it is pure Go, and its tests
# that need a real local model build openclaw-runner once with the flags
# `make build` uses (appliance/runner_test.go; skipped, saying why, where
# cgo is off) — so they run in the -race pass.
LLAMA_PKGS = $(shell $(GO) list -f '{{.ImportPath}}{{range .Deps}}{{if eq . "github.com/ollama/ollama/llama"}} L{{end}}{{end}}{{range .TestImports}}{{if eq . "github.com/ollama/ollama/llama"}} L{{end}}{{end}}{{range .XTestImports}}{{if eq . "github.com/ollama/ollama/llama"}} L{{end}}{{end}}' ./... | awk '$$2=="L"{print $$1}')

## test: vet (pure build, then the llama.cpp packages), every test with the race
## detector (llama.cpp left out), then the llama.cpp packages as `make build` builds them
#
# WA_PKGS: whatsmeow and its pure-Go SQLite (modernc) are large — minutes to
# compile on 2 cores for every flag set — so they are compiled once, as
# `make build` and the pure vet compile them (CGO_ENABLED=0), and their
# tests (the adapter's and the gateway's WhatsApp end-to-end test) run
# without -race; the -race pass leaves WhatsApp out (-tags nowhatsapp).
# `make check` runs the adapter under -race too.
WA_PKGS = $(shell $(GO) list ./engine/channel/whatsapp/...)
test: test-deps
	CGO_ENABLED=0 $(GO) vet -tags nollamacpp ./...
	$(RUNNER_ENV) $(GO) vet $(LLAMA_PKGS)
	RUNNER_VARIANT=$(RUNNER_VARIANT) $(GO) test -race -tags nollamacpp,nowhatsapp -count=1 -timeout 30m $$($(GO) list ./... | grep -v '/engine/channel/whatsapp')
	CGO_ENABLED=0 $(GO) test -tags nollamacpp -count=1 -timeout 20m $(WA_PKGS)
	CGO_ENABLED=0 $(GO) test -tags nollamacpp -count=1 -timeout 20m -run 'WhatsApp' ./appliance/
	CGO_ENABLED=0 $(GO) test -tags nollamacpp,crashtest -count=1 -timeout 10m -run 'TestCrashTelegram' ./appliance/
	$(RUNNER_ENV) $(GO) test -count=1 -timeout 20m $(LLAMA_PKGS)

## test-unit-filter: the exec sandbox's tests once under the hardening of
## systemd/openclaw-gateway.service (its SystemCallFilter= included), applied by
## systemd itself: the system manager where systemd is PID 1, else a private
## systemd user manager in a private mount namespace (root). Fails when a test
## fails or skips; then checks that plain @system-service does switch Landlock
## off (the control). Not part of `make test`: needs root or systemd.
test-unit-filter:
	GO=$(GO) systemd/test-unit-filter.sh

## test-crash: crash safety with a real gateway process (pure build, crashpoints
## tag): 200 turns SIGKILLed in every phase (before the model call, mid-stream,
## mid-tool, just before and after the reply+end commit, at random, during
## `sessions import`), bbolt Check after every kill, every acknowledged message
## answered exactly once; plus a gateway killed mid-turn on a full / read-only
## 4 MiB tmpfs (needs root for `unshare -m` and mount, else skipped) starts and
## answers status; plus the channel pipeline (e-mail against a real dovecot and
## SMTP sink, skipped without dovecot) SIGKILLed after the inbox write, after the
## reply+outbox commit and after the SMTP send: one reply Message-ID per mail;
## plus scheduled turns (cron reminders to a fake iMessage) SIGKILLed after the
## claim, the accept, before/after the reply commit, after the send and before
## the run is marked: every reminder once (CRASH_JOBS=n per crash point);
## plus Telegram killed between receiving an update and recording it, after
## recording it and after the reply commit, Telegram sending every
## unconfirmed update again: each answered once (`make test` runs this one too).
## Not part of `make test`: about 8–14 minutes on a loaded 2-core box
## (CRASH_TURNS=n, CRASH_MAILS=n per crash point for a shorter run).
test-crash:
	CGO_ENABLED=0 $(GO) test -tags nollamacpp,crashtest -count=1 -timeout 40m -v -run 'TestCrashTurns|TestFullDiskRestart|TestCrashChannelReplies|TestCrashScheduledTurns|TestCrashTelegram' ./appliance/

## test-ui: the web dashboard in a real browser (Debian's chromium, headless,
## through chromedp) against bin/openclaw-gateway and `bin/openclaw dashboard`:
## chat with an exec approval clicked, a stranger's pairing approved, a model
## uploaded, a device revoked, a wrong Host and a cross-site POST refused.
## (`make test` runs it too, with binaries it builds itself.)
test-ui: build
	@appliance/dashboardtest/install-deps.sh
	OPENCLAW_UI_BIN=$(BIN) $(GO) test -count=1 -timeout 10m -v ./appliance/dashboardtest/

## test-short: the quick unit tests only
test-short:
	$(GO) test -short -count=1 ./...

## check: gofmt, vet, staticcheck, race tests
check: test-deps
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
# The iMessage adapters run on (or next to) a Mac: keep them and the
# gateway building for darwin (pure Go, no cgo) from any machine.
	GOOS=darwin CGO_ENABLED=0 $(GO) vet ./engine/channel/imessage/... ./engine/channel/bluebubbles/...
	GOOS=darwin CGO_ENABLED=0 $(GO) build -o /dev/null ./appliance
	$(GO) run $(STATICCHECK) ./...
	$(GO) test -race -count=1 ./...

## bench: benchmarks (pipeline overhead, store, parsers, the box table of
## BenchmarkBox), then bench-real; see docs/benchmarks.md
bench: test-deps
	$(RUNNER_ENV) $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...
	@$(MAKE) --no-print-directory bench-real

## bench-real: the box table's speed rows: tokens/s of openclaw-runner beside
## llama.cpp's llama-bench on the real-sized models (REAL_MODELS, generated
## shapes), with 1 thread and with every core, prompt and generation
## (bench-llama, so root; without root it says so and skips). A few minutes
## per model the first time (the shapes are written once into SHAPE_DIR).
REAL_MODELS ?= qwen3-0.6b-shape llama-3.2-1b-instruct-shape qwen3-1.7b-shape
bench-real: build
	@if [ "$$(id -u)" -ne 0 ]; then echo "bench-real: skipped: llama-bench runs in a Debian sid chroot, which needs root (sudo make bench-real)"; exit 0; fi; \
	threads="1"; [ "$$(nproc)" -gt 1 ] && threads="1 $$(nproc)"; \
	echo "box: tokens/s at real size, openclaw-runner vs llama-bench (prompt 128 tokens, 32 generated after them; best of 2 rounds × 3 runs a side)"; \
	for t in $$threads; do \
	  $(MAKE) --no-print-directory bench-llama MODEL="$(REAL_MODELS)" THREADS=$$t PROMPT=128 GEN=32 REPS=3 ROUNDS=2 >/dev/null || exit 1; \
	done

## bench-local: local generation and prompt speed of openclaw-runner (the variant
## the gateway would start), one JSON line per model:
## {"model","variant","threads","promptTokens","genTokPerSec","promptTokPerSec",…}.
## MODEL=path.gguf (default: the shared stories260K and chat-template test
## models, and a synthetic one with Qwen's 151,936-token vocabulary), or a
## catalog name with -shape (qwen3-0.6b-shape, qwen3-1.7b-shape,
## llama-3.2-1b-instruct-shape): the real model's exact shape and Q4_K_M
## layout with random weights, written once into SHAPE_DIR (default
## ~/.cache/openclaw-edge/shapes) by models/gguf/gguftest/cmd/ggufshape; THREADS=1,
## PROMPT=366 tokens, GEN=200 tokens, REPS=10 runs per round, ROUNDS=1 (the
## best run of all, and the median; bench-llama: 5 rounds, the two sides taking turns),
## FA=off|on|auto (flash attention, models.local.flashAttention; bench-llama
## gives llama-bench the same; FA=both: llama-bench's better of the two).
THREADS ?= 1
PROMPT  ?= 366
GEN     ?= 200
REPS    ?= 10
FA      ?= off
BENCH_MODELS = $(or $(MODEL),$(wildcard ../shared/models/stories260K.gguf) $(wildcard ../shared/models/llama-2-tiny-random-chatml-tools.gguf))
# BENCH_FILES (shell): $$files, BENCH_MODELS in order with each NAME-shape
# replaced by the path of its generated file.
BENCH_FILES = files=""; for m in $(BENCH_MODELS); do \
	  case "$$m" in *-shape) f=$$($(GO) run ./models/gguf/gguftest/cmd/ggufshape $(if $(SHAPE_DIR),-dir $(SHAPE_DIR)) "$$m") || exit 1;; *) f=$$m;; esac; \
	  files="$$files $$f"; done
bench-local: build
	@$(BENCH_FILES); \
	$(GO) run ./appliance/benchlocal -runner $(BIN)/openclaw-runner -threads $(THREADS) -prompt $(PROMPT) -gen $(GEN) -reps $(REPS) -rounds $(or $(ROUNDS),1) -fa $(FA) -bigvocab $$files

## bench-llama: llama.cpp's own llama-bench (Debian sid's llama.cpp-tools, in a
## throw-away root made with mmdebstrap and cached in LLAMA_ROOT, a few minutes
## the first time) on the same models and threads, beside bench-local's
## figures and the ratios. Needs root (chroot). Not part of make test.
## MODEL=NAME-shape as for bench-local (under sudo the cache is root's:
## SHAPE_DIR=… to share one with bench-local).
LLAMA_ROOT ?= /var/cache/openclaw-edge/llama-sid
bench-llama: build
	@$(BENCH_FILES); \
	BIN=$(BIN) GO=$(GO) LLAMA_ROOT=$(LLAMA_ROOT) THREADS=$(THREADS) PROMPT=$(PROMPT) GEN=$(GEN) REPS=$(REPS) ROUNDS=$(or $(ROUNDS),5) FA=$(FA) \
	  models/llamacpp/bench-llama.sh $$files

## release: dist/linux-amd64 and dist/linux-arm64, each with the gateway, the
## CLI and every CPU variant of openclaw-runner (openclaw-runner is the
## baseline; openclaw-runner-<variant> beside it), arm64 with Debian's
## aarch64-linux-gnu cross compiler. One llama.cpp compile per variant; see
## docs/benchmarks.md ("Local speed") for the durations.
DIST ?= dist
release: deps
	@image/install-deps.sh --cross-runner
	@set -e; for arch in amd64 arm64; do \
	  out=$(DIST)/linux-$$arch; mkdir -p $$out; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -ldflags "$(LDFLAGS)" -o $$out/openclaw-gateway ./appliance; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -ldflags "$(LDFLAGS)" -o $$out/openclaw-memindex ./appliance/memindex; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -ldflags "$(LDFLAGS)" -o $$out/openclaw-whatsapp ./appliance/whatsapp; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -ldflags "$(LDFLAGS)" -o $$out/openclaw ./cli; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -ldflags "$(LDFLAGS)" -o $$out/openclaw-migrate ./cli/migrate/openclaw-migrate; \
	  $(MAKE) --no-print-directory runner-variants GOARCH=$$arch OUT=$$out; \
	done

# runner-variants GOARCH=… OUT=dir: every CPU variant of openclaw-runner for
# GOARCH into OUT (the last, the baseline, as plain openclaw-runner), each
# timed. arm64 from an x86 host goes through aarch64-linux-gnu-gcc.
runner-variants:
	@set -e; cross=""; \
	if [ "$(GOARCH)" = arm64 ] && [ "$$($(GO) env GOHOSTARCH)" != arm64 ]; then cross="CC=aarch64-linux-gnu-gcc CXX=aarch64-linux-gnu-g++ CGO_CPPFLAGS=-idirafter/usr/local/include"; fi; \
	names="$$(GOOS= GOARCH= $(GO) run ./appliance/runnervariant list $(GOARCH))"; base="$${names##* }"; \
	for v in $$names; do \
	  f=openclaw-runner-$$v; [ "$$v" = "$$base" ] && f=openclaw-runner; \
	  flags="$$(GOOS= GOARCH= $(GO) run ./appliance/runnervariant flags $$v)"; start=$$(date +%s); \
	  env CGO_ENABLED=1 GOOS=linux GOARCH=$(GOARCH) $$cross CGO_CFLAGS="$$flags" CGO_CXXFLAGS="$$flags" \
	    $(GO) build -ldflags "$(LDFLAGS) -X main.variant=$$v" -o $(OUT)/$$f ./appliance/runner; \
	  echo "runner-variants: $(OUT)/$$f ($$v: $$flags) in $$(( $$(date +%s) - start ))s"; \
	done

## eval-memory: retrieval quality of the memory index on LoCoMo (../shared/bench/locomo-dev):
## recall@1/5/10/20, hit@5 and MRR for BM25, vector and hybrid (weighted, RRF); builds
## openclaw-runner for the embeddings. EMBED_MODEL=path.gguf for a real embedding model (default:
## the shared random test model, which shows the path, not quality); EVAL_FLAGS=-markdown etc.
eval-memory: build
	OPENCLAW_RUNNER=$(CURDIR)/$(BIN)/openclaw-runner EMBED_MODEL=$(EMBED_MODEL) $(GO) run ./appliance/evalmemory $(EVAL_FLAGS)

## fuzz: every Fuzz* function in the repo, FUZZTIME each (default 10s), one at a time; stops at the first crasher (not part of `make test`)
# Functions are found by grep, so fuzzers added anywhere are picked up; a
# crasher is saved by go test under <pkg>/testdata/fuzz/<FuzzX>/ — fix it and
# commit that file so it stays a regression test. The engine's own "context
# deadline exceeded" at the end of -fuzztime (no input written: a loaded
# machine) is retried once rather than reported as a crasher.
FUZZTIME ?= 10s
fuzz:
	@set -e; n=0; start=$$(date +%s); log=$$(mktemp); trap 'rm -f $$log' EXIT; \
	for f in $$(grep -rlE --include='*_test.go' --exclude-dir=.git --exclude-dir=shared '^func Fuzz[A-Za-z0-9_]*\(' . | sort); do \
	  dir=$$(dirname $$f); \
	  for fn in $$(sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/p' $$f); do \
	    echo "== $$dir $$fn ($(FUZZTIME))"; \
	    for try in 1 2; do \
	      if $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $$dir >$$log 2>&1; then cat $$log; break; fi; \
	      cat $$log; \
	      if [ $$try = 1 ] && ! grep -q 'Failing input written' $$log && grep -q 'context deadline exceeded' $$log; then \
	        echo "fuzz: $$fn: the fuzzing engine timed out (a loaded machine), no crasher; once more"; continue; fi; \
	      echo "fuzz: $$dir $$fn FAILED after $$n passed; a crasher, if any, is in $$dir/testdata/fuzz/$$fn/"; exit 1; \
	    done; \
	    n=$$((n+1)); \
	  done; \
	done; \
	echo "fuzz: all $$n fuzz functions passed, $(FUZZTIME) each, in $$(( $$(date +%s) - start ))s"

## fake-model: a loopback OpenAI-compatible server that echoes (try the gateway without an API key)
fake-model:
	$(GO) run ./models/openai/openaitest/fakeopenai -addr 127.0.0.1:8089

## test-load: 50 sessions × 20 messages at once through a real pure-Go gateway
## process with a zero-latency fake model: all answered, per-session order
## kept, no entry in the wrong session; logs p50/p99 latency, peak RSS and the
## duration. Not part of `make test`.
test-load:
	CGO_ENABLED=0 $(GO) test -tags 'loadtest nollamacpp' -count=1 -timeout 20m -v -run TestLoad ./appliance/

## test-conversation: the 30-turn conversations of issue 8 on both test models
## (a real openclaw-runner, the shipped defaults with tools on): every turn
## answered, at least one compaction, no error reply, the export holds the
## compaction entry. make test runs 8-turn versions. Not part of make test:
## about 10–25 minutes on 2 cores.
test-conversation:
	OPENCLAW_LONG_TESTS=1 $(GO) test -count=1 -timeout 60m -v -run 'TestScripts/conversation_.*_30' ./appliance/

## bench-import: stream a generated 50 MB OpenClaw v3 transcript into a real
## pure-Go gateway; logs the import time and the gateway's peak RSS (VmHWM),
## fails over the 150 MB bar (docs/design.md §11). OPENCLAW_IMPORT_MB=n for another size.
bench-import:
	CGO_ENABLED=0 $(GO) test -tags 'importrss nollamacpp' -count=1 -timeout 20m -v -run TestImportRSS ./appliance/

# The Raspberry Pi image (image/README.md). IMAGE_OUT is git-ignored (/build/).
IMAGE_OUT ?= build/image
MODEL     ?=
MIRROR    ?=
# RUNNER=1: also cross-compile openclaw-runner (llama.cpp, cgo) for arm64 with
# Debian's aarch64-linux-gnu toolchain; on by default when MODEL is given.
RUNNER    ?= $(if $(MODEL),1,0)
IMAGE_GOFLAGS := CGO_ENABLED=0 GOOS=linux GOARCH=arm64

## image: build/image/openclaw-edge-arm64.img, a Debian trixie arm64 image for
## Raspberry Pi 4 and 5 (mmdebstrap + qemu-user-static, raspi-firmware,
## linux-image-arm64, genimage): the pure-Go gateway and CLI cross-compiled,
## the unit, first-boot setup, state on its own partition; MODEL=file.gguf
## ships a model (and builds openclaw-runner in both Pi variants: armv8-a for
## the Pi 4, armv8.2-a+dotprod+fp16 for the Pi 5). Needs root; installs its tools
## with apt and registers qemu-aarch64 with binfmt_misc. The root filesystem
## (qemu-user emulation) took 125 minutes on a loaded 2-core machine; see
## image/README.md. Not part of make test.
image:
	@image/install-deps.sh $(if $(filter 1,$(RUNNER)),--runner)
	@models/llamacpp/install-deps.sh
	$(IMAGE_GOFLAGS) $(GO) build -ldflags "$(LDFLAGS)" -o $(IMAGE_OUT)/bin/openclaw-gateway ./appliance
	$(IMAGE_GOFLAGS) $(GO) build -ldflags "$(LDFLAGS)" -o $(IMAGE_OUT)/bin/openclaw-memindex ./appliance/memindex
	$(IMAGE_GOFLAGS) $(GO) build -ldflags "$(LDFLAGS)" -o $(IMAGE_OUT)/bin/openclaw-whatsapp ./appliance/whatsapp
	$(IMAGE_GOFLAGS) $(GO) build -ldflags "$(LDFLAGS)" -o $(IMAGE_OUT)/bin/openclaw ./cli
	$(IMAGE_GOFLAGS) $(GO) build -ldflags "$(LDFLAGS)" -o $(IMAGE_OUT)/bin/openclaw-migrate ./cli/migrate/openclaw-migrate
	@rm -f $(IMAGE_OUT)/bin/openclaw-runner*
ifeq ($(RUNNER),1)
	$(MAKE) --no-print-directory runner-variants GOARCH=arm64 OUT=$(IMAGE_OUT)/bin
endif
	OUT=$(IMAGE_OUT) MODEL="$(MODEL)" MIRROR="$(MIRROR)" image/build.sh

## image-test: static check of the image (Pi firmware, DTBs, config.txt,
## first-boot files), then boots it under qemu-system-aarch64 -M virt, waits
## for the gateway's READY and pairs with it from the host through a port
## forward. Builds the image first when there is none. About 2 minutes on 2
## idle cores, 4 on a busy machine (boot-to-READY 64-66 s, 235 s busy, under
## TCG emulation). With a runner on the image
## (make image MODEL=…) it also checks the runner builds, the variant chosen for
## the emulated CPU (QEMU_CPU=cortex-a72, a Pi 4; cortex-a76, a Pi 5) and one
## answer from the shipped model. Not part of make test.
image-test:
	@image/install-deps.sh
	@[ -f $(IMAGE_OUT)/openclaw-edge-arm64.img ] || $(MAKE) image
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(IMAGE_OUT)/host/openclaw ./cli
	OUT=$(IMAGE_OUT) OPENCLAW=$(IMAGE_OUT)/host/openclaw image/test.sh

clean:
	rm -rf $(BIN)
