//go:build !nollamacpp

package llamacpp_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/llama"
	"github.com/ollama/ollama/ml"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/llamacpp"
)

// benchModel is the GGUF the local-model benchmarks run on:
// $OPENCLAW_BENCH_MODEL, else the shared stories260K.gguf (a real, tiny,
// trained llama: its tokens are so cheap that per-token overhead shows up
// far more than it would on a real 1–3B model).
func benchModel(b *testing.B) string {
	if p := os.Getenv("OPENCLAW_BENCH_MODEL"); p != "" {
		return p
	}
	p := sharedModel(b, "stories260K.gguf")
	if _, err := os.Stat(p); err != nil {
		b.Skipf("no bench model: %v", err)
	}
	return p
}

const benchThreads = 1 // DESIGN/shared README: compare ratios on one thread

var benchBudgetMB = 1

// directTokensPerSec is a minimal generation loop straight over the
// binding, in this process: the upper bound for our runner.
func directTokensPerSec(b *testing.B, path string, prompt string, n int) float64 {
	llama.BackendInit()
	m, err := llama.LoadModelFromFile(path, llama.ModelParams{UseMmap: true})
	if err != nil {
		b.Fatal(err)
	}
	defer llama.FreeModel(m)
	ctx, err := llama.NewContextWithModel(m, llama.NewContextParams(2048, 512, 1, benchThreads, ml.FlashAttentionDisabled, ""))
	if err != nil {
		b.Fatal(err)
	}
	batch, err := llama.NewBatch(512, 1, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer batch.Free()
	toks, err := m.Tokenize(prompt, true, true)
	if err != nil {
		b.Fatal(err)
	}
	for i, t := range toks {
		batch.Add(t, nil, i, i == len(toks)-1, 0)
	}
	if err := ctx.Decode(batch); err != nil {
		b.Fatal(err)
	}
	// The same sampler chain the runner uses for a greedy request, so the
	// comparison measures the runner's own overhead, not a cheaper sampler.
	sc, err := llama.NewSamplingContext(m, llama.SamplingParams{TopK: 40, TopP: 0.9, MinP: 0.05, Temp: 0, Seed: 1, RepeatLastN: 64, PenaltyRepeat: 1.0})
	if err != nil {
		b.Fatal(err)
	}
	pos, idx := len(toks), batch.NumTokens()-1
	start := time.Now()
	var sb strings.Builder
	for range n {
		t := sc.Sample(ctx, idx)
		sc.Accept(t, true)
		sb.WriteString(m.TokenToPiece(t))
		batch.Clear()
		batch.Add(t, nil, pos, true, 0)
		pos++
		idx = 0
		if err := ctx.Decode(batch); err != nil {
			b.Fatal(err)
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

// BenchmarkLocalGeneration reports, on the same GGUF and thread count:
// tokens/s through our runner process vs the direct loop (goal ≥ 0.9),
// prompt tokens/s, time to first token of a cold turn vs a follow-up turn
// of the same session (prefix cache), and runner start/unload times.
func BenchmarkLocalGeneration(b *testing.B) {
	path := benchModel(b)
	const gen = 200
	prompt := strings.Repeat("Once upon a time, there was a little girl named Lily who loved to play in the park. ", 12)

	var runnerTPS, directTPS, promptTPS, coldTTFT, warmTTFT, startMS, unloadMS float64
	for range b.N {
		// The runner renders the model's chat template (ChatML here, the
		// file has none); the direct loop gets the same text, so both
		// generate at the same context positions.
		directTPS += directTokensPerSec(b, path, "<|im_start|>user\n"+prompt+"<|im_end|>\n<|im_start|>assistant\n", gen)

		pool := llamacpp.NewPool(llamacpp.Config{Command: testCommand("real"), KeepAlive: -1, Greedy: true, CacheBudgetMB: benchBudgetMB,
			Runner: llamacpp.RunnerOptions{Threads: benchThreads, ContextLen: 2048, BatchSize: 512, Mmap: true}})
		p := pool.Model("local", "bench", path)
		t0 := time.Now()
		if _, err := p.Tokenize(context.Background(), "x"); err != nil { // load the model
			b.Fatal(err)
		}
		startMS += float64(time.Since(t0).Microseconds()) / 1000

		session := fmt.Sprint("s", time.Now().UnixNano())
		msgs := []engine.Message{engine.UserText(prompt)}
		run := func(msgs []engine.Message, max int) (ttft time.Duration, u engine.Usage, text string, total time.Duration) {
			start := time.Now()
			var sb strings.Builder
			err := p.Stream(context.Background(), &engine.ChatRequest{SessionID: session, MaxTokens: max, Messages: msgs}, func(ev engine.Event) {
				switch ev.Type {
				case engine.EventTextDelta:
					if ttft == 0 {
						ttft = time.Since(start)
					}
					sb.WriteString(ev.Text)
				case engine.EventMessageEnd:
					u = *ev.Usage
				}
			})
			if err != nil {
				b.Fatal(err)
			}
			return ttft, u, sb.String(), time.Since(start)
		}
		ttft, u, text, _ := run(msgs, 1)
		coldTTFT += float64(ttft.Microseconds()) / 1000
		promptTPS += float64(u.Input) / ttft.Seconds()

		msgs = append(msgs, engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock(text)}}, engine.UserText("What happened next?"))
		ttft, u2, _, _ := run(msgs, 1)
		warmTTFT += float64(ttft.Microseconds()) / 1000
		if u2.CacheRead == 0 {
			b.Fatalf("follow-up turn missed the prefix cache: %+v", u2)
		}

		// Generation speed: time from the first token to the last, in a
		// fresh session with the direct loop's prompt, so both generate at
		// the same context positions (attention cost grows with them).
		session = fmt.Sprint("g", time.Now().UnixNano())
		first, u3, _, total := run([]engine.Message{engine.UserText(prompt)}, gen)
		runnerTPS += float64(u3.Output-1) / (total - first).Seconds()

		t0 = time.Now()
		p.Unload()
		unloadMS += float64(time.Since(t0).Microseconds()) / 1000
		pool.Close()
	}
	n := float64(b.N)
	b.ReportMetric(runnerTPS/n, "runner-tok/s")
	b.ReportMetric(directTPS/n, "direct-tok/s")
	b.ReportMetric(runnerTPS/directTPS, "runner/direct")
	b.ReportMetric(promptTPS/n, "prompt-tok/s")
	b.ReportMetric(coldTTFT/n, "cold-ttft-ms")
	b.ReportMetric(warmTTFT/n, "followup-ttft-ms")
	b.ReportMetric(startMS/n, "runner-start-ms")
	b.ReportMetric(unloadMS/n, "unload-ms")
}
