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

// TestLlamaRunsShapes: the real llama.cpp engine loads files with the exact
// shape of catalog models (gguftest.WriteShape: Qwen3-0.6B's 28 layers,
// Q/K norms and 151,936-token vocabulary; Llama 3.2 1B's 16 layers, rope
// frequency factors and 128,256 tokens; both Q4_K_M) and runs them: the
// vocabulary is the real size, a chat prompt tokenizes with its special
// tokens whole and its words as words, the logits are finite and not all
// equal, and decoding produces text. This is what makes `make bench-local
// MODEL=qwen3-0.6b-shape` a measurement of the real model's speed.
//
// The files (395 and 804 MB) are kept in the shape cache that ggufshape
// and make bench-local use, so only the first run writes them.
func TestLlamaRunsShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and loads a 0.4 GB model (0.8 GB more with OPENCLAW_SHAPES=all)")
	}
	dir, err := gguftest.DefaultShapeDir()
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		t.Logf("shape cache: %v; writing to a temporary directory", err)
		dir = t.TempDir()
	}
	for _, tc := range []struct {
		shape       string
		vocab, embd int
		prompt      string
		// first is the prompt's first token; special counts the special
		// tokens it must hold (each one token); most bounds its length
		// (the real tokenizers give 15 and 16).
		first   int
		special map[int]int
		most    int
	}{
		{
			shape: "qwen3-0.6b", vocab: 151936, embd: 1024,
			prompt: "<|im_start|>user\nHello, how are you today?<|im_end|>\n<|im_start|>assistant\n",
			// Qwen adds no BOS: <|im_start|> twice, <|im_end|> once.
			first: 151644, special: map[int]int{151644: 2, 151645: 1}, most: 20,
		},
		{
			shape: "llama-3.2-1b-instruct", vocab: 128256, embd: 2048,
			prompt: "<|start_header_id|>user<|end_header_id|>\n\nHello, how are you today?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
			// <|begin_of_text|> added, then the headers and <|eot_id|>.
			first: 128000, special: map[int]int{128000: 1, 128006: 2, 128007: 2, 128009: 1}, most: 21,
		},
	} {
		t.Run(tc.shape, func(t *testing.T) {
			if tc.shape != "qwen3-0.6b" && os.Getenv("OPENCLAW_SHAPES") != "all" {
				t.Skip("one shape in make test (0.4 GB written once to the cache); OPENCLAW_SHAPES=all runs every one")
			}
			path, err := gguftest.WriteShape(tc.shape, dir, 1)
			if err != nil {
				t.Fatal(err)
			}
			eng, err := loadLlama(Options{Model: path, Threads: 2, ContextLen: 512, BatchSize: 64, Slots: 1, Mmap: true})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			e := eng.(*llamaEngine)
			if info := e.Info(); info.NVocab != tc.vocab || info.NEmbd != tc.embd {
				t.Fatalf("vocabulary %d, n_embd %d; want %d, %d", info.NVocab, info.NEmbd, tc.vocab, tc.embd)
			}

			toks, err := e.Tokenize(tc.prompt)
			if err != nil {
				t.Fatal(err)
			}
			counts := map[int]int{}
			for _, tok := range toks {
				if _, ok := tc.special[tok]; ok {
					counts[tok]++
				}
			}
			if len(toks) == 0 || toks[0] != tc.first || len(toks) > tc.most || len(counts) != len(tc.special) {
				t.Fatalf("chat prompt tokenized to %d tokens %v", len(toks), toks)
			}
			for tok, n := range tc.special {
				if counts[tok] != n {
					t.Fatalf("token %d %d times in %v, want %d", tok, counts[tok], toks, n)
				}
			}

			idx, err := e.decode(context.Background(), 0, toks, 0)
			if err != nil {
				t.Fatal(err)
			}
			logits := e.logits(idx)
			if len(logits) != tc.vocab {
				t.Fatalf("%d logits", len(logits))
			}
			if i := slices.IndexFunc(logits, func(v float32) bool { return math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) }); i >= 0 {
				t.Fatalf("logit %d is %v", i, logits[i])
			}
			if slices.Min(logits) == slices.Max(logits) {
				t.Fatalf("all logits are %v: the weights did nothing", logits[0])
			}
			e.ctx.KvCacheSeqRm(0, 0, -1)

			out, _, u := complete(t, eng, "shape", tc.prompt, 8)
			if u.Generated != 8 || out == "" {
				t.Fatalf("generated %d tokens, text %q (usage %+v)", u.Generated, out, u)
			}
			t.Logf("%d prompt tokens %v; 8 tokens: %q; prompt %.0f ms, generation %.0f ms", len(toks), toks, out, u.PromptMS, u.GenerateMS)
		})
	}
}
