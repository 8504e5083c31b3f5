//go:build !nollamacpp

package llamacpp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
)

// TestCountTokens: CountTokens equals the prompt tokens Stream reports for
// the same request (one phase: the model calls no tool), for a model
// without a chat template (fallback ChatML, tools in the system prompt)
// and one whose template renders tools.
func TestCountTokens(t *testing.T) {
	pool := realPool(t)
	tools := []engine.ToolSpec{
		{Name: "read", Description: "Read a file from the workspace.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"relative path"}},"required":["path"]}`)},
		{Name: "exec", Description: "Run a shell command.", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)},
	}
	tests := []struct {
		file    string
		trained int
	}{
		{"stories260K.gguf", 2048},
		{"llama-2-tiny-random-chatml-tools.gguf", 4096},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p := pool.Model("local", tt.file, sharedModel(t, tt.file))
			if got := p.TrainedContext(); got != tt.trained {
				t.Errorf("TrainedContext() = %d, want %d", got, tt.trained)
			}
			if got := p.ThinkingMechanism(); got != "none" {
				t.Errorf("ThinkingMechanism() = %q, want none", got)
			}
			req := &engine.ChatRequest{
				System: "You tell stories.", MaxTokens: 4, Thinking: engine.ThinkingOff,
				Messages: []engine.Message{
					engine.UserText("Once upon a time there was a girl named Lily."),
					{Role: engine.RoleAssistant, Content: []engine.Block{{Type: engine.BlockThinking, Thinking: "think"}, engine.TextBlock("She had a dog.")}},
					engine.UserText("And then?"),
				},
			}
			bare, err := p.CountTokens(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			req.Tools = tools
			n, err := p.CountTokens(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if n <= bare+20 {
				t.Errorf("with tools %d tokens, without %d: the tools were not counted", n, bare)
			}
			for i, r := range []*engine.ChatRequest{req, {System: req.System, Messages: req.Messages[:1], MaxTokens: 4}} {
				want, err := p.CountTokens(context.Background(), r)
				if err != nil {
					t.Fatal(err)
				}
				r.SessionID = fmt.Sprintf("count-%d", i) // a fresh slot: nothing cached
				var u *engine.Usage
				var calls int
				if err := p.Stream(context.Background(), r, func(ev engine.Event) {
					switch ev.Type {
					case engine.EventMessageEnd:
						u = ev.Usage
					case engine.EventToolCall:
						calls++
					}
				}); err != nil {
					t.Fatal(err)
				}
				if u == nil || calls > 0 {
					t.Fatalf("usage %v, %d calls: want one phase", u, calls)
				}
				if got := u.Input + u.CacheRead; got != want {
					t.Errorf("request %d: Stream used %d prompt tokens (%+v), CountTokens said %d", i, got, *u, want)
				}
			}
		})
	}
}

// BenchmarkCountTokens measures a count of a big prompt (about 22k tokens,
// 98 KB): rendering, the runner round trip and llama.cpp's tokenizer. The
// tokenizer dominates: 30–80 ms for this text in process on the shared
// 2-core x86 development machine, the JSON round trip adding a few ms.
func BenchmarkCountTokens(b *testing.B) {
	p := realPool(b).Model("local", "tiny", sharedModel(b, "llama-2-tiny-random-chatml-tools.gguf"))
	req := &engine.ChatRequest{System: strings.Repeat("The gateway keeps a session's prompt cache warm. ", 2000),
		Messages: []engine.Message{engine.UserText("hi")}}
	n, err := p.CountTokens(context.Background(), req)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := p.CountTokens(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n), "tokens")
}
