//go:build !nollamacpp

package llamacpp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/gguf/gguftest"
)

var bigVocab struct {
	once sync.Once
	path string
	err  error
}

// bigVocabModel returns the path of a llama GGUF with Qwen's vocabulary size
// (151,936 tokens) and random weights (gguftest.BigVocabLlama's defaults:
// one block, n_embd 128, about 40 MB): a model whose forward pass is cheap
// and whose per-vocabulary-entry costs (output projection, sampling) are
// those of a real Qwen. It is written once per test binary, in a temporary
// folder removed when the tests are done.
func bigVocabModel(t testing.TB) string {
	t.Helper()
	bigVocab.once.Do(func() {
		dir, err := os.MkdirTemp("", "bigvocab")
		if err != nil {
			bigVocab.err = err
			return
		}
		afterTests = append(afterTests, func() { os.RemoveAll(dir) })
		path := filepath.Join(dir, "bigvocab-llama.gguf")
		f, err := os.Create(path)
		if err != nil {
			bigVocab.err = err
			return
		}
		_, err = gguftest.BigVocabLlama(gguftest.BigVocabOptions{Seed: 1}).WriteTo(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		bigVocab.path, bigVocab.err = path, err
	})
	if bigVocab.err != nil {
		t.Fatal(bigVocab.err)
	}
	return bigVocab.path
}

// TestBigVocabLlama: the synthetic big-vocabulary model loads in the real
// runner, tokenizes English and generates a chat turn.
func TestBigVocabLlama(t *testing.T) {
	t0 := time.Now()
	path := bigVocabModel(t)
	written := time.Since(t0)

	pool := realPool(t)
	p := pool.Model("local", "bigvocab", path)
	const sentence = "Once upon a time there was a little girl named Lily. She liked the park."
	t0 = time.Now()
	toks, err := p.Tokenize(context.Background(), sentence)
	if err != nil {
		t.Fatal(err)
	}
	loaded := time.Since(t0)
	// Words are pieces of the vocabulary, not bytes.
	if len(toks) == 0 || len(toks) > len(sentence)/2 {
		t.Errorf("%q: %d tokens %v", sentence, len(toks), toks)
	}
	l := pool.Loaded()
	if len(l) != 1 || l[0].Info.NVocab < 150000 || l[0].Info.NEmbd != 128 {
		t.Fatalf("loaded: %+v", l)
	}
	fi, _ := os.Stat(path)
	t.Logf("%d bytes written in %v; runner ready in %v (load %d ms, n_vocab %d, RSS %d MB)",
		fi.Size(), written.Round(time.Millisecond), loaded.Round(time.Millisecond), l[0].Info.LoadMS, l[0].Info.NVocab, l[0].RSSBytes>>20)

	req := &engine.ChatRequest{SessionID: "s", MaxTokens: 20, System: "You are terse.", Messages: []engine.Message{engine.UserText("Tell me a story about a cat.")}}
	var out strings.Builder
	var u engine.Usage
	t0 = time.Now()
	err = p.Stream(context.Background(), req, func(ev engine.Event) {
		switch ev.Type {
		case engine.EventTextDelta:
			out.WriteString(ev.Text)
		case engine.EventMessageEnd:
			u = *ev.Usage
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if u.Output == 0 || u.Output > 20 || u.Input == 0 {
		t.Fatalf("usage %+v, text %q", u, out.String())
	}
	t.Logf("%d prompt tokens, %d generated in %v: %q", u.Input, u.Output, time.Since(t0).Round(time.Millisecond), out.String())
}
