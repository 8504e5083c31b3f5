//go:build !nollamacpp

package runner

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/models/llamacpp"
)

// sharedModel returns a file from ../shared/models, or skips.
func sharedModel(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "shared", "models", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("test model %s not found (../shared/models beside the repository): %v", name, err)
	}
	return p
}

func complete(t *testing.T, e Engine, session, prompt string, max int) (string, llamacpp.StopCause, llamacpp.RunUsage) {
	t.Helper()
	var b strings.Builder
	stop, u, err := e.Complete(context.Background(), &llamacpp.Request{Session: session, Prompt: prompt, MaxTokens: max, Temperature: 0}, func(s string) { b.WriteString(s) })
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), stop, u
}

func TestLlamaCompleteAndPrefixCache(t *testing.T) {
	e, err := loadLlama(Options{Model: sharedModel(t, "stories260K.gguf"), Threads: 1, ContextLen: 512, BatchSize: 64, Slots: 2, Mmap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	prompt := "Once upon a time, there was a little girl named Lily. She liked to play"
	out, stop, u := complete(t, e, "s1", prompt, 24)
	if out == "" || stop != llamacpp.StopLength || u.Generated != 24 {
		t.Fatalf("out=%q stop=%s usage=%+v", out, stop, u)
	}
	if u.Cached != 0 || u.Processed != u.Prompt {
		t.Fatalf("cold run usage %+v", u)
	}
	// Greedy decoding is deterministic; a follow-up turn reuses the cache.
	follow := prompt + out + " Then she saw a big dog."
	_, _, u2 := complete(t, e, "s1", follow, 8)
	if u2.Cached < u.Prompt || u2.Processed >= u2.Prompt-u.Prompt+2 {
		t.Fatalf("follow-up did not reuse the prefix: first %+v, second %+v", u, u2)
	}
	// Another session gets its own slot but borrows s1's prefix (the
	// prompt's shared start is not evaluated again); s1's cache survives.
	_, _, u3 := complete(t, e, "s2", prompt+" in the park.", 4)
	if u3.Cached < u.Prompt-2 || u3.Processed > u3.Prompt-u.Prompt+2 {
		t.Fatalf("new session did not borrow the shared prefix: first %+v, new %+v", u, u3)
	}
	_, _, u4 := complete(t, e, "s1", follow+" It", 2)
	if u4.Cached < u2.Prompt-1 {
		t.Fatalf("s1's cache was lost to s2: %+v", u4)
	}
	// Same session, same prompt: the same text again (greedy).
	again, _, _ := complete(t, e, "s3", prompt, 24)
	if again != out {
		t.Fatalf("greedy output changed: %q vs %q", again, out)
	}
}

// TestLlamaBorrowedPrefixIsExact: a session that borrows another slot's
// prefix (a copied KV stream, its tail dropped) generates exactly what it
// generates from a cold cache, and the slot it borrowed from still
// answers as before: the copy is right, not just fast.
func TestLlamaBorrowedPrefixIsExact(t *testing.T) {
	opts := Options{Model: sharedModel(t, "stories260K.gguf"), Threads: 1, ContextLen: 512, BatchSize: 16, Slots: 2, Mmap: true}
	shared := "Once upon a time, there was a little girl named Lily. She liked to play with her ball in the garden every day."
	cold := func(prompt string) string {
		e, err := loadLlama(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		out, _, _ := complete(t, e, "only", prompt, 16)
		return out
	}
	p1, p2 := shared+" One day", shared+" Her mom said"
	want1, want2 := cold(p1), cold(p2)

	e, err := loadLlama(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got, _, _ := complete(t, e, "a", p1, 16); got != want1 {
		t.Fatalf("a: %q, want %q", got, want1)
	}
	got2, _, u2 := complete(t, e, "b", p2, 16)
	if u2.Cached == 0 {
		t.Fatalf("b did not borrow a's prefix: %+v", u2)
	}
	if got2 != want2 {
		t.Fatalf("b from a borrowed prefix: %q, want %q (cold)", got2, want2)
	}
	// a's slot is untouched: its follow-up hits its own cache and says
	// what a cold run says.
	follow := p1 + want1 + " Then"
	want3 := cold(follow)
	got3, _, u3 := complete(t, e, "a", follow, 16)
	if u3.Cached < len(p1)/8 || got3 != want3 {
		t.Fatalf("a after b borrowed: %q (usage %+v), want %q", got3, u3, want3)
	}
}

func TestLlamaStopStringAndCancel(t *testing.T) {
	e, err := loadLlama(Options{Model: sharedModel(t, "stories260K.gguf"), Threads: 1, ContextLen: 512, BatchSize: 64, Slots: 1, Mmap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	prompt := "Once upon a time"
	full, _, _ := complete(t, e, "", prompt, 40)
	words := strings.Fields(full)
	if len(words) < 4 {
		t.Fatalf("too little text to test with: %q", full)
	}
	stopAt := " " + words[3]
	var b strings.Builder
	stop, u, err := e.Complete(context.Background(), &llamacpp.Request{Prompt: prompt, MaxTokens: 40, Stop: []string{stopAt}}, func(s string) { b.WriteString(s) })
	if err != nil || stop != llamacpp.StopString || u.Matched != stopAt || strings.Contains(b.String(), stopAt) {
		t.Fatalf("stop=%s matched=%q out=%q err=%v", stop, u.Matched, b.String(), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stop, _, err = e.Complete(ctx, &llamacpp.Request{Prompt: prompt, MaxTokens: 400}, func(string) { cancel() })
	if err != nil || stop != llamacpp.StopCancelled {
		t.Fatalf("cancel: stop=%s err=%v", stop, err)
	}
}

func TestLlamaContextOverflow(t *testing.T) {
	e, err := loadLlama(Options{Model: sharedModel(t, "stories260K.gguf"), Threads: 1, ContextLen: 256, BatchSize: 64, Slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, _, err = e.Complete(context.Background(), &llamacpp.Request{Prompt: strings.Repeat("Lily played in the park. ", 200), MaxTokens: 4}, func(string) {})
	if err == nil || !strings.Contains(err.Error(), "context overflow") {
		t.Fatalf("err = %v", err)
	}
}

func TestLlamaEmbeddings(t *testing.T) {
	e, err := loadLlama(Options{Model: sharedModel(t, "tiny-random-bert-bge-vocab.gguf"), Threads: 1, ContextLen: 512, BatchSize: 512, Slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	vecs, n, err := e.Embed(context.Background(), []string{"hello world", "the cat sat on the mat", "hello world"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 3 || n == 0 {
		t.Fatalf("%d vectors, %d tokens", len(vecs), n)
	}
	for i, v := range vecs {
		var sum float64
		for _, x := range v {
			sum += float64(x) * float64(x)
		}
		if len(v) != e.Info().NEmbd || math.Abs(sum-1) > 1e-3 {
			t.Fatalf("vector %d: len %d, norm² %f", i, len(v), sum)
		}
	}
	same := true
	for i := range vecs[0] {
		if math.Abs(float64(vecs[0][i]-vecs[2][i])) > 1e-5 {
			same = false
		}
	}
	if !same {
		t.Fatal("the same text embedded twice differs")
	}
}

func TestLlamaBadFile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.gguf")
	if err := os.WriteFile(bad, []byte("GGUF not really"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadLlama(Options{Model: bad, Threads: 1, ContextLen: 256, BatchSize: 32, Slots: 1}); err == nil {
		t.Fatal("a broken file loaded")
	}
}

// TestLlamaJSONSchemaConstraint: a model with random weights, constrained by
// a tool-call schema, still produces a valid call — the sampler is bound by
// the grammar, not by what the model "knows".
func TestLlamaJSONSchemaConstraint(t *testing.T) {
	e, err := loadLlama(Options{Model: sharedModel(t, "llama-2-tiny-random.gguf"), Threads: 1, ContextLen: 1024, BatchSize: 128, Slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	schema := `{"type":"object","properties":{"name":{"const":"read"},"arguments":{"type":"object","properties":{"path":{"type":"string","maxLength":12}},"required":["path"],"additionalProperties":false}},"required":["name","arguments"],"additionalProperties":false}`
	var b strings.Builder
	_, _, err = e.Complete(context.Background(), &llamacpp.Request{Prompt: "call a tool: ", MaxTokens: 200, JSONSchema: schema, Temperature: 0}, func(s string) { b.WriteString(s) })
	if err != nil {
		t.Fatal(err)
	}
	var call struct {
		Name      string `json:"name"`
		Arguments struct {
			Path *string `json:"path"`
		} `json:"arguments"`
	}
	if err := json.Unmarshal([]byte(b.String()), &call); err != nil || call.Name != "read" || call.Arguments.Path == nil {
		t.Fatalf("constrained output %q: %v", b.String(), err)
	}
}

// TestLogitsInPlace: the logits the Go sampler reads in place are the ones
// the binding's GetLogitsIth copies out (guards the binding's layout), and
// a greedy completion through the Go sampler picks their argmax.
func TestLogitsInPlace(t *testing.T) {
	eng, err := loadLlama(Options{Model: sharedModel(t, "stories260K.gguf"), Threads: 1, ContextLen: 256, BatchSize: 64, Slots: 1, Mmap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	e := eng.(*llamaEngine)
	toks, err := e.Tokenize("Once upon a time")
	if err != nil {
		t.Fatal(err)
	}
	idx, err := e.decode(context.Background(), 0, toks, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, want := e.logits(idx), e.ctx.GetLogitsIth(idx)
	if len(got) != len(want) || len(got) != e.info.NVocab {
		t.Fatalf("%d logits in place, %d copied, vocabulary %d", len(got), len(want), e.info.NVocab)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("logit %d: %v in place, %v copied", i, got[i], want[i])
		}
	}
	if tok := newSampler(40, 0.9, 0.05, 0, 1, 1).sample(got); tok != argmax(want) {
		t.Fatalf("greedy picked %d, argmax is %d", tok, argmax(want))
	}
}

// TestCompletePerTokenAllocs: once warm, a generated token costs no Go
// allocation in the runner's loop (sampling, token text, stop handling):
// 128 more tokens allocate only what growing buffers take (a few).
func TestCompletePerTokenAllocs(t *testing.T) {
	eng, err := loadLlama(Options{Model: sharedModel(t, "stories260K.gguf"), Threads: 1, ContextLen: 512, BatchSize: 64, Slots: 1, Mmap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	run := func(n int) float64 {
		req := &llamacpp.Request{Session: "a", Prompt: "Once upon a time", MaxTokens: n, IgnoreEOS: true,
			Temperature: 0.7, TopK: 40, TopP: 0.9, MinP: 0.05, Seed: 1, Stop: []string{"<|im_end|>"}}
		return testing.AllocsPerRun(3, func() {
			if _, u, err := eng.Complete(context.Background(), req, func(string) {}); err != nil || u.Generated != n {
				t.Fatalf("%+v %v", u, err)
			}
		})
	}
	short, long := run(16), run(144)
	if per := (long - short) / 128; per > 0.1 {
		t.Fatalf("%.0f allocations for 16 tokens, %.0f for 144: %.2f per token", short, long, per)
	}
	t.Logf("%.0f allocations for a 16-token completion, %.0f for 144", short, long)
}
