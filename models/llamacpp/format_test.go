package llamacpp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/chattemplate"
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

const chatTemplatesDir = "../../../shared/models/chat-templates"

// qwen3Trimmed is Qwen3's template without its enable_thinking block, as
// some GGUF files carry it: only the soft switch reaches the model.
func qwen3Trimmed(src string) string {
	return strings.Replace(src, "\n    {%- if enable_thinking is defined and enable_thinking is false %}\n        {{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- endif %}", "", 1)
}

// thinkingRequest has a system prompt, tools, two user turns and an
// assistant reply with a thinking block.
func thinkingRequest(level engine.ThinkingLevel) *engine.ChatRequest {
	return &engine.ChatRequest{
		System:   "You are a helpful assistant.",
		Thinking: level,
		Tools:    []engine.ToolSpec{{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}},
		Messages: []engine.Message{
			engine.UserText("Hello!"),
			{Role: engine.RoleAssistant, Content: []engine.Block{
				{Type: engine.BlockThinking, Thinking: "SECRET-THOUGHT"},
				engine.TextBlock("Hi! How can I help?"),
			}},
			engine.UserText("What is 2+2?"),
		},
	}
}

// TestThinkingPerTemplate: how each shared chat template receives a /think
// level, and that templates without a switch render the same prompt at
// every level.
func TestThinkingPerTemplate(t *testing.T) {
	qwen3, err := os.ReadFile(filepath.Join(chatTemplatesDir, "Qwen-Qwen3-0.6B.jinja"))
	if os.IsNotExist(err) {
		t.Skip("test material is absent (it lives in shared/models beside the repository)")
	}
	if err != nil {
		t.Fatal(err)
	}
	if qwen3Trimmed(string(qwen3)) == string(qwen3) {
		t.Fatal("Qwen3's template no longer has the expected enable_thinking block")
	}
	read := func(name string) string {
		src, err := os.ReadFile(filepath.Join(chatTemplatesDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(src)
	}
	tests := []struct {
		name, src string
		mechanism chattemplate.ThinkingSwitch
		off, on   string // what the prompt ends with (off, on); "" = no check
	}{
		{"qwen3", string(qwen3), chattemplate.ThinkingEnableVar,
			"<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
			"<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"},
		{"qwen3 trimmed", qwen3Trimmed(string(qwen3)), chattemplate.ThinkingSoftSwitch,
			"<|im_start|>user\nWhat is 2+2? /no_think<|im_end|>\n<|im_start|>assistant\n",
			"<|im_start|>user\nWhat is 2+2? /think<|im_end|>\n<|im_start|>assistant\n"},
		{"smollm3", read("HuggingFaceTB-SmolLM3-3B.jinja"), chattemplate.ThinkingEnableVar,
			"<|im_start|>assistant\n<think>\n\n</think>\n", "What is 2+2?<|im_end|>\n<|im_start|>assistant\n"},
		{"granite3.3", read("ibm-granite-granite-3.3-2B-Instruct.jinja"), chattemplate.ThinkingVar, "", ""},
		{"qwen2.5", read("Qwen-Qwen2.5-7B-Instruct.jinja"), chattemplate.ThinkingNone, "", ""},
		{"llama3.2", read("meta-llama-Llama-3.2-3B-Instruct.jinja"), chattemplate.ThinkingNone, "", ""},
		{"hermes3", read("NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja"), chattemplate.ThinkingNone, "", ""},
		{"gemma2", read("google-gemma-2-2b-it.jinja"), chattemplate.ThinkingNone, "", ""},
		{"phi3.5", read("microsoft-Phi-3.5-mini-instruct.jinja"), chattemplate.ThinkingNone, "", ""},
		{"fallback chatml", "", chattemplate.ThinkingNone, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := newFormat(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.thinking(); got != tt.mechanism {
				t.Fatalf("mechanism %q, want %q", got, tt.mechanism)
			}
			prompts := map[engine.ThinkingLevel]string{}
			for _, level := range []engine.ThinkingLevel{"", engine.ThinkingOff, engine.ThinkingLow, engine.ThinkingMedium, engine.ThinkingHigh} {
				req := thinkingRequest(level)
				prompt, _, err := f.render(req)
				if err != nil {
					t.Fatalf("%q: %v", level, err)
				}
				if strings.Contains(prompt, "SECRET-THOUGHT") {
					t.Errorf("%q: a thinking block reached the prompt", level)
				}
				if len(req.Messages[1].Content) != 2 || len(req.Messages[2].Content) != 1 {
					t.Errorf("%q: render changed the request's messages", level)
				}
				prompts[level] = prompt
			}
			if prompts[engine.ThinkingLow] != prompts[engine.ThinkingHigh] || prompts[engine.ThinkingMedium] != prompts[engine.ThinkingHigh] {
				t.Error("low, medium and high render differently")
			}
			switch tt.mechanism {
			case chattemplate.ThinkingNone:
				for level, p := range prompts {
					if p != prompts[""] {
						t.Errorf("%q renders differently from the default on a template without a switch", level)
					}
				}
			case chattemplate.ThinkingSoftSwitch:
				if strings.Contains(prompts[""], "/think") || strings.Contains(prompts[""], "/no_think") {
					t.Error("the default level wrote a soft switch")
				}
				// Every user turn carries it, so the history renders the
				// same next turn (prefix cache).
				if n := strings.Count(prompts[engine.ThinkingOff], " /no_think<|im_end|>"); n != 2 {
					t.Errorf("off: %d user turns carry /no_think, want 2:\n%s", n, prompts[engine.ThinkingOff])
				}
			}
			if tt.off != "" && !strings.HasSuffix(prompts[engine.ThinkingOff], tt.off) {
				t.Errorf("off prompt does not end with %q:\n%s", tt.off, prompts[engine.ThinkingOff])
			}
			if tt.on != "" && !strings.HasSuffix(prompts[engine.ThinkingHigh], tt.on) {
				t.Errorf("high prompt does not end with %q:\n%s", tt.on, prompts[engine.ThinkingHigh])
			}
			if tt.name == "qwen3" && prompts[""] != prompts[engine.ThinkingHigh] {
				t.Error("qwen3: the default must be the template's own (thinking on)")
			}
		})
	}
}

// TestOpenedThinkBlock: a template whose generation prompt opens the think
// block (QwQ, Qwen3-Thinking) gets a parser that starts inside it.
func TestOpenedThinkBlock(t *testing.T) {
	f, err := newFormat(`{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n<think>\n' }}{% endif %}`)
	if err != nil {
		t.Fatal(err)
	}
	_, sp, err := f.render(&engine.ChatRequest{Messages: []engine.Message{engine.UserText("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	var thinking, text string
	for _, ev := range append(sp.write("reasoning here\n</think>\n\nThe answer."), func() []engine.Event { evs, _ := sp.close(); return evs }()...) {
		switch ev.Type {
		case engine.EventThinkingDelta:
			thinking += ev.Text
		case engine.EventTextDelta:
			text += ev.Text
		}
	}
	if thinking != "reasoning here\n" || text != "The answer." {
		t.Errorf("thinking %q, text %q", thinking, text)
	}
}

func TestWithoutThinking(t *testing.T) {
	msgs := thinkingRequest("").Messages
	out := withoutThinking(msgs)
	if len(out) != 3 || len(out[1].Content) != 1 || out[1].Content[0].Text != "Hi! How can I help?" {
		t.Fatalf("got %+v", out)
	}
	if len(msgs[1].Content) != 2 {
		t.Error("the input was changed")
	}
	plain := msgs[:1]
	if got := withoutThinking(plain); &got[0] != &plain[0] {
		t.Error("a history without thinking blocks was copied")
	}
}

// TestContinuedReplyRendersAsTheNextTurnShowsIt: a reply cut at the
// output limit is continued from the open assistant turn, its parts
// joined — the text the next turn's context renders (the transcript joins
// the parts) — so the runner's cache holds what the next turn sends.
func TestContinuedReplyRendersAsTheNextTurnShowsIt(t *testing.T) {
	f, err := newFormat("")
	if err != nil {
		t.Fatal(err)
	}
	user := engine.UserText("Tell me a long story.")
	part := func(s string) engine.Message {
		return engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock(s)}, StopReason: engine.StopLength}
	}
	cont := engine.UserText(engine.ContinuePrompt)
	render := func(msgs ...engine.Message) string {
		p, _, err := f.render(&engine.ChatRequest{System: "sys", Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	head := "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nTell me a long story.<|im_end|>\n<|im_start|>assistant\n"
	if got := render(user, part("Once upon"), cont); got != head+"Once upon" {
		t.Errorf("first continuation:\n%q\nwant\n%q", got, head+"Once upon")
	}
	if got := render(user, part("Once upon"), cont, part(" a time"), cont); got != head+"Once upon a time" {
		t.Errorf("second continuation:\n%q", got)
	}
	next := engine.UserText("And then?")
	whole := engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock("Once upon"), engine.TextBlock(" a time.")}}
	if got, want := render(user, part("Once upon"), cont, part(" a time."), next), render(user, whole, next); got != want {
		t.Errorf("joined in a request:\n%q\nthe next turn's context:\n%q", got, want)
	}
	// A [continue] that follows a tool call is the user's words.
	call := engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{{Type: engine.BlockToolCall, ID: "c1", Name: "x", Arguments: []byte(`{}`)}}}
	if got := render(user, call, cont); !strings.HasSuffix(got, "<|im_start|>assistant\n") || !strings.Contains(got, "[continue]") {
		t.Errorf("after a tool call: %q", got)
	}
}
