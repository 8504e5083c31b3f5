package llamacpp

import (
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/toolcall"
)

// TestParserThinking: a <think> block streams as thinking, however the
// output is split into pieces; the rest is text and tool calls.
func TestParserThinking(t *testing.T) {
	tests := []struct {
		out, thinking, text string
		calls               int
	}{
		{out: "<think>\nplan it\n</think>\n\nHello!", thinking: "\nplan it\n", text: "Hello!"},
		{out: "Hello <think>not a block</think>", text: "Hello <think>not a block</think>"},
		{out: "  <think>x</think><tool_call>{\"name\":\"read\",\"arguments\":{}}</tool_call>", thinking: "x", calls: 1},
		{out: "<think>never closed", thinking: "never closed"},
		{out: "<thin", text: "<thin"},
		{out: "plain answer", text: "plain answer"},
	}
	for _, tt := range tests {
		for size := 1; size <= len(tt.out); size++ {
			p := &parser{p: toolcall.NewParser(toolcall.FamilyHermes)}
			var thinking, text strings.Builder
			collect := func(evs []engine.Event) {
				for _, ev := range evs {
					switch ev.Type {
					case engine.EventThinkingDelta:
						thinking.WriteString(ev.Text)
					case engine.EventTextDelta:
						text.WriteString(ev.Text)
					}
				}
			}
			for i := 0; i < len(tt.out); i += size {
				collect(p.write(tt.out[i:min(i+size, len(tt.out))]))
			}
			evs, calls := p.close()
			collect(evs)
			if thinking.String() != tt.thinking || strings.TrimSpace(text.String()) != tt.text || calls != tt.calls {
				t.Fatalf("%q in pieces of %d: thinking %q, text %q, %d calls", tt.out, size, thinking.String(), text.String(), calls)
			}
		}
	}
}
