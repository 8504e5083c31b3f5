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
// With -rounds N the two take turns N times (-reps runs each, the first
// side alternating): this VM's speed swings up to 10× from one second to
// the next, and a quiet stretch must count for both. Besides best against
// best, the line carries the median of each round's ratio ("paired").
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
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
	reps := flag.Int("reps", 5, "runs per model and round (the best of all rounds is printed, and the median)")
	rounds := flag.Int("rounds", 1, "rounds: with -llama-root, the runner and llama-bench take turns this many times (-reps runs each per turn, the order alternating), so both sides see the same quiet and busy stretches of a shared machine")
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
		opts := llamacpp.BenchOptions{Model: model, Threads: *threads, PromptTokens: *prompt, GenTokens: *gen, Reps: *reps, FlashAttn: runnerFA(*fa)}
		if *llamaRoot == "" {
			var res llamacpp.BenchResult
			for range max(*rounds, 1) {
				r, err := llamacpp.SpeedTest(ctx, opts)
				if err != nil {
					fmt.Fprintf(os.Stderr, "benchlocal: %s: %v\n", model, err)
					return 1
				}
				res = mergeOurs(res, r)
			}
			_ = enc.Encode(res)
			continue
		}
		c, err := compare(ctx, opts, *llamaRoot, max(*rounds, 1), *fa)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchlocal: %s: %v\n", model, err)
			return 1
		}
		_ = enc.Encode(c)
		fmt.Fprintf(os.Stderr, "%-40s %-10s gen %8.0f vs %8.0f tok/s (%.2f×, paired %.2f×)   prompt %8.0f vs %8.0f tok/s (%.2f×, paired %.2f×)   [%d rounds, ours %s, llama.cpp %s]\n",
			filepath.Base(model), fmt.Sprintf("t=%d p=%d", *threads, c.Ours.PromptTokens), c.Ours.GenTokPerSec, c.Llama.GenTokPerSec, c.GenRatio, c.PairedGenRatio,
			c.Ours.PromptTokPerSec, c.Llama.PromptTokPerSec, c.PromptRatio, c.PairedPromptRatio, c.Rounds, c.Ours.Variant, c.Llama.Backend)
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

// compare measures one model through the runner and through llama-bench,
// in rounds turns, the first side alternating.
func compare(ctx context.Context, opts llamacpp.BenchOptions, root string, rounds int, fa string) (comparison, error) {
	c := comparison{Model: opts.Model, Rounds: rounds}
	var genRatios, promptRatios []float64
	for round := range rounds {
		var ours llamacpp.BenchResult
		var theirs llamaResult
		runOurs := func() (err error) {
			ours, err = llamacpp.SpeedTest(ctx, opts)
			return err
		}
		runTheirs := func() (err error) {
			prompt := cmp.Or(ours.PromptTokens, c.Ours.PromptTokens)
			if prompt == 0 {
				// llama-bench goes first in odd rounds only, so the
				// runner has said by then how long the prompt is.
				return errors.New("no prompt length yet")
			}
			theirs, err = llamaBench(ctx, root, opts.Model, opts.Threads, prompt, opts.GenTokens, opts.Reps, fa)
			if err != nil {
				return fmt.Errorf("llama-bench: %w", err)
			}
			return nil
		}
		steps := []func() error{runOurs, runTheirs}
		if round%2 == 1 {
			steps[0], steps[1] = runTheirs, runOurs
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return c, err
			}
		}
		genRatios = append(genRatios, ours.GenTokPerSec/theirs.GenTokPerSec)
		promptRatios = append(promptRatios, ours.PromptTokPerSec/theirs.PromptTokPerSec)
		c.Ours = mergeOurs(c.Ours, ours)
		c.Llama = c.Llama.merge(theirs)
	}
	c.GenRatio = c.Ours.GenTokPerSec / c.Llama.GenTokPerSec
	c.PromptRatio = c.Ours.PromptTokPerSec / c.Llama.PromptTokPerSec
	c.PairedGenRatio, c.PairedPromptRatio = llamacpp.Median(genRatios), llamacpp.Median(promptRatios)
	return c, nil
}

// runnerFA is the runner's --flash-attn for -fa ("both" compares
// llama-bench's better setting with the runner's default).
func runnerFA(fa string) string {
	if fa == "both" {
		return "off"
	}
	return fa
}
