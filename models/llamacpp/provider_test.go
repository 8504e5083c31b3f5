//go:build !nollamacpp

package llamacpp_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/llamacpp"
)

func sharedModel(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("../../../shared/models", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func realPool(t testing.TB) *llamacpp.Pool {
	pool := llamacpp.NewPool(llamacpp.Config{
		Command: testCommand("real"), KeepAlive: -1, Greedy: true,
		Runner: llamacpp.RunnerOptions{Threads: 1, ContextLen: 1024, BatchSize: 128, Mmap: true},
	})
	t.Cleanup(pool.Close)
	return pool
}

// TestStreamPrefixCache: a real GGUF through the real runner process; the
// follow-up turn of a session processes only its new tokens.
func TestStreamPrefixCache(t *testing.T) {
	p := realPool(t).Model("local", "stories", sharedModel(t, "stories260K.gguf"))
	msgs := []engine.Message{engine.UserText("Once upon a time there was a girl named Lily.")}
	req := &engine.ChatRequest{SessionID: "s", MaxTokens: 16, System: "You tell stories.", Messages: msgs}
	var out strings.Builder
	var u1 engine.Usage
	err := p.Stream(context.Background(), req, func(ev engine.Event) {
		if ev.Type == engine.EventTextDelta {
			out.WriteString(ev.Text)
		}
		if ev.Type == engine.EventMessageEnd {
			u1 = *ev.Usage
			if ev.StopReason != engine.StopLength {
				t.Errorf("stop = %s", ev.StopReason)
			}
		}
	})
	if err != nil || out.Len() == 0 {
		t.Fatalf("%q %v", out.String(), err)
	}
	if u1.CacheRead != 0 || u1.Input == 0 || u1.Output != 16 {
		t.Fatalf("cold usage %+v", u1)
	}
	req.Messages = append(msgs, engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock(out.String())}}, engine.UserText("And then?"))
	var u2 engine.Usage
	if err := p.Stream(context.Background(), req, func(ev engine.Event) {
		if ev.Type == engine.EventMessageEnd {
			u2 = *ev.Usage
		}
	}); err != nil {
		t.Fatal(err)
	}
	if u2.CacheRead < u1.Input/2 || u2.Input >= u1.Input {
		t.Fatalf("follow-up did not reuse the cache: cold %+v, follow-up %+v", u1, u2)
	}
}

// TestToolTemplate renders tools through a GGUF's own chat template (the
// tiny random model cannot call tools meaningfully: only the plumbing is
// checked).
func TestToolTemplate(t *testing.T) {
	p := realPool(t).Model("local", "tools", sharedModel(t, "llama-2-tiny-random-chatml-tools.gguf"))
	req := &engine.ChatRequest{MaxTokens: 8, Messages: []engine.Message{engine.UserText("hi")},
		Tools: []engine.ToolSpec{{Name: "read", Description: "read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}}
	ended := false
	if err := p.Stream(context.Background(), req, func(ev engine.Event) { ended = ended || ev.Type == engine.EventMessageEnd }); err != nil || !ended {
		t.Fatalf("ended=%v err=%v", ended, err)
	}
}

func TestEmbed(t *testing.T) {
	p := realPool(t).Model("local", "bert", sharedModel(t, "tiny-random-bert-bge-vocab.gguf"))
	vecs, err := p.Embed(context.Background(), []string{"hello", "world"})
	if err != nil || len(vecs) != 2 || len(vecs[0]) != 16 {
		t.Fatalf("%d vectors, err %v", len(vecs), err)
	}
}
