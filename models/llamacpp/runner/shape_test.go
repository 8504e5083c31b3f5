//go:build !nollamacpp

package runner

import (
	"context"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/openclaw-edge/edge/models/gguf/gguftest"
)

// TestLlamaRunsQwen3Shape: the real llama.cpp engine loads a file with
// Qwen3-0.6B's exact shape (gguftest.WriteShape: 28 layers, Q4_K_M, the
// 151,936-token vocabulary, Q/K norms) and runs it: a ChatML prompt
// tokenizes with its special tokens whole, the logits are finite, and
// greedy decoding produces text. This is what makes `make bench-local
// MODEL=qwen3-0.6b-shape` a measurement of the real model's speed.
//
// The 395 MB file is kept in the shape cache (the one ggufshape and make
// bench-local use), so only the first run writes it.
func TestLlamaRunsQwen3Shape(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and loads a 395 MB model")
	}
	dir, err := gguftest.DefaultShapeDir()
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		t.Logf("shape cache: %v; writing to a temporary directory", err)
		dir = t.TempDir()
	}
	path, err := gguftest.WriteShape("qwen3-0.6b", dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := loadLlama(Options{Model: path, Threads: 2, ContextLen: 512, BatchSize: 64, Slots: 1, Mmap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	e := eng.(*llamaEngine)
	if info := e.Info(); info.NVocab != 151936 || info.NEmbd != 1024 {
		t.Fatalf("vocabulary %d, n_embd %d; want 151936, 1024", info.NVocab, info.NEmbd)
	}

	const imStart, imEnd = 151644, 151645
	prompt := "<|im_start|>user\nHello, how are you today?<|im_end|>\n<|im_start|>assistant\n"
	toks, err := e.Tokenize(prompt)
	if err != nil {
		t.Fatal(err)
	}
	// Qwen adds no BOS: the prompt starts with <|im_start|>, once per turn,
	// and the words are words, not bytes.
	starts, ends := 0, 0
	for _, tok := range toks {
		switch tok {
		case imStart:
			starts++
		case imEnd:
			ends++
		}
	}
	if len(toks) == 0 || toks[0] != imStart || starts != 2 || ends != 1 || len(toks) > 24 {
		t.Fatalf("ChatML prompt tokenized to %d tokens %v", len(toks), toks)
	}

	idx, err := e.decode(context.Background(), 0, toks, 0)
	if err != nil {
		t.Fatal(err)
	}
	logits := e.logits(idx)
	if len(logits) != 151936 {
		t.Fatalf("%d logits", len(logits))
	}
	if i := slices.IndexFunc(logits, func(v float32) bool { return math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) }); i >= 0 {
		t.Fatalf("logit %d is %v", i, logits[i])
	}
	if slices.Min(logits) == slices.Max(logits) {
		t.Fatalf("all logits are %v: the weights did nothing", logits[0])
	}
	e.ctx.KvCacheSeqRm(0, 0, -1)

	out, _, u := complete(t, eng, "shape", prompt, 8)
	if u.Generated != 8 || out == "" {
		t.Fatalf("generated %d tokens, text %q (usage %+v)", u.Generated, out, u)
	}
	t.Logf("%d prompt tokens %v; 8 tokens: %q; prompt %.0f ms, generation %.0f ms", len(toks), toks, out, u.PromptMS, u.GenerateMS)
}
