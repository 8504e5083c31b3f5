// Command openclaw-runner serves one GGUF model to the gateway: llama.cpp
// (through cgo) loads the file, and completions, embeddings and tokenization
// are answered over JSON lines on stdin/stdout (package
// models/llamacpp/runner has the protocol and the engine).
//
//	openclaw-runner --model F [--threads N] [--ctx N] [--batch N] [--slots N] [--mmap=BOOL]
//	openclaw-runner --version
//
// It comes in CPU variants (openclaw-runner-x86-64-v3 etc., see
// models/llamacpp/variant.go); the gateway starts the best one this CPU
// supports.
//
// It is a binary of its own, not a subcommand of openclaw-gateway, so that
// the gateway never carries llama.cpp: the gateway is pure Go (built with
// CGO_ENABLED=0, its idle RSS the pure build's — docs/design.md §11), and only
// this process, one per loaded model, maps llama.cpp and the model. A
// llama.cpp abort or an out-of-memory kill ends this process only; the
// gateway fails the turn over and starts a fresh runner for the next one.
//
// The gateway finds it through $OPENCLAW_RUNNER, else beside its own
// executable (make build writes both to bin/; packages install both to
// /usr/bin), else on $PATH. It is started by the gateway, not by hand.
package main

import (
	"os"

	"github.com/openclaw-edge/edge/models/llamacpp/runner"
)

// Set by make build and make release (-X): the version, and the CPU
// variant this binary was compiled for (models/llamacpp.Variants), which
// it checks before loading anything.
var version, variant string

func main() {
	runner.Build.Version, runner.Build.Variant = version, variant
	os.Exit(runner.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
