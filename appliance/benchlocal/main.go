// Command benchlocal measures local inference speed through openclaw-runner
// (`make bench-local`): for each GGUF file, one JSON line
//
//	{"model","variant","threads","promptTokens","genTokPerSec","promptTokPerSec",…}
//
// with generation measured after a prompt of promptTokens tokens and prompt
// processing as the runner timed its decode calls (no IPC, chat template or
// model load), so the figures sit beside `llama-bench -p N -n 0` and
// `llama-bench -n 200 -d N` (models/llamacpp/bench-llama.sh does that).
// The runner is the variant the gateway would start on this CPU
// ($OPENCLAW_RUNNER_VARIANT picks another); each figure is the best of
// -reps runs (noise on a shared machine only slows runs down), the median
// beside it.
//
// With -llama-root DIR (a Debian root holding llama.cpp-tools, see
// bench-llama.sh), llama.cpp's own llama-bench runs on the same models,
// threads and token counts, through chroot, and each line becomes
//
//	{"model","ours":{…},"llama":{"backend","genTokPerSec","promptTokPerSec",…},"genRatio","promptRatio"}
//
// llama-bench runs with the runner's flash-attention setting (-fa), and
// with the best CPU backend it has for this CPU (it loads that itself).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/openclaw-edge/edge/models/gguf/gguftest"
	"github.com/openclaw-edge/edge/models/llamacpp"
)

func main() { os.Exit(run()) }

// run is main with its deferred clean-ups run before the exit.
func run() int {
	runner := flag.String("runner", "bin/openclaw-runner", "the openclaw-runner binary (its variants beside it are used)")
	threads := flag.Int("threads", 1, "CPU threads")
	prompt := flag.Int("prompt", 366, "prompt tokens")
	gen := flag.Int("gen", 200, "generated tokens")
	fa := flag.String("fa", "off", "flash attention: off, on or auto in the runner, llama-bench with the same (auto is on for the CPU in both); both: the runner's default (off) against llama-bench's better setting")
	reps := flag.Int("reps", 5, "runs per model (the best is printed, and the median)")
	llamaRoot := flag.String("llama-root", "", "a root directory with llama-bench (Debian's llama.cpp-tools): compare with it")
	bigVocab := flag.Bool("bigvocab", false, "also measure a synthetic llama with Qwen's 151,936-token vocabulary (n_embd 128, 1 layer, F16), written to a temporary file: the sampler's share of generation time")
	flag.Parse()
	models := flag.Args()
	if *bigVocab {
		path, cleanup, err := writeBigVocab()
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchlocal: the big-vocabulary model:", err)
			return 1
		}
		defer cleanup()
		models = append(models, path)
	}
	if len(models) == 0 {
		fmt.Fprintln(os.Stderr, "benchlocal: name at least one GGUF file (make bench-local MODEL=path.gguf)")
		return 2
	}
	abs, err := filepath.Abs(*runner)
	if err == nil {
		err = os.Setenv(llamacpp.RunnerEnv, abs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchlocal:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	enc := json.NewEncoder(os.Stdout)
	for _, model := range models {
		res, err := llamacpp.SpeedTest(ctx, llamacpp.BenchOptions{Model: model, Threads: *threads, PromptTokens: *prompt, GenTokens: *gen, Reps: *reps, FlashAttn: runnerFA(*fa)})
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchlocal: %s: %v\n", model, err)
			return 1

		}
		if *llamaRoot == "" {
			_ = enc.Encode(res)
			continue
		}
		lb, err := llamaBench(ctx, *llamaRoot, model, *threads, res.PromptTokens, *gen, *reps, *fa)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchlocal: llama-bench on %s: %v\n", model, err)
			return 1
		}
		c := comparison{Model: model, Ours: res, Llama: lb, GenRatio: res.GenTokPerSec / lb.GenTokPerSec, PromptRatio: res.PromptTokPerSec / lb.PromptTokPerSec}
		_ = enc.Encode(c)
		fmt.Fprintf(os.Stderr, "%-40s %-10s gen %8.0f vs %8.0f tok/s (%.2f×)   prompt %8.0f vs %8.0f tok/s (%.2f×)   [ours %s, llama.cpp %s]\n",
			filepath.Base(model), fmt.Sprintf("t=%d p=%d", *threads, res.PromptTokens), res.GenTokPerSec, lb.GenTokPerSec, c.GenRatio,
			res.PromptTokPerSec, lb.PromptTokPerSec, c.PromptRatio, res.Variant, lb.Backend)
	}
	return 0
}

// writeBigVocab writes gguftest's Qwen-vocabulary llama to a temporary
// file (43 MB).
func writeBigVocab() (string, func(), error) {
	dir, err := os.MkdirTemp("", "benchlocal")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	path := filepath.Join(dir, "bigvocab-151936.gguf")
	f, err := os.Create(path)
	if err == nil {
		_, err = gguftest.BigVocabLlama(gguftest.BigVocabOptions{Seed: 1}).WriteTo(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return path, cleanup, nil
}

// runnerFA is the runner's --flash-attn for -fa ("both" compares
// llama-bench's better setting with the runner's default).
func runnerFA(fa string) string {
	if fa == "both" {
		return "off"
	}
	return fa
}
