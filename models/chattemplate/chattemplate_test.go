package chattemplate

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/toolcall"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// The shared test material lives beside the repository (docs/design.md §12).
const (
	chatTemplatesDir = "../../../shared/models/chat-templates"
	chatMLTools      = "../../../shared/models/tools/chatml-tools.jinja"
)

var fixedNow = time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)

var testTools = []engine.ToolSpec{
	{
		Name:        "get_weather",
		Description: "Get the current weather for a city.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"City name, e.g. Paris"},"unit":{"type":"string","enum":["celsius","fahrenheit"],"description":"Temperature unit"}},"required":["city"]}`),
	},
	{
		Name:        "read_file",
		Description: "Read a file from the workspace.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Path relative to the workspace"},"limit":{"type":"integer","description":"Maximum lines"}},"required":["path"]}`),
	},
	{
		// Arrays, maps and type unions exercise Hermes' recursive macro.
		Name:        "search_notes",
		Description: "Search notes by text and tags.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"Words to find"},"tags":{"type":"array","items":{"type":"string"},"description":"Tags, all required"},"weights":{"type":"object","additionalProperties":{"type":"number"},"description":"Per-field weights"},"since":{"type":["string","number"],"description":"ISO date or Unix time"}},"required":["query"]}`),
	},
}

func text(role engine.Role, s string) engine.Message {
	return engine.Message{Role: role, Content: []engine.Block{engine.TextBlock(s)}}
}

// chatConversation has no tools.
func chatConversation() Input {
	return Input{
		System: "You are a helpful assistant.",
		Messages: []engine.Message{
			text(engine.RoleUser, "Hello!"),
			{Role: engine.RoleAssistant, Content: []engine.Block{
				{Type: engine.BlockThinking, Thinking: "The user greets me."},
				engine.TextBlock("Hi! How can I help?"),
			}},
			{Role: engine.RoleUser, Content: []engine.Block{
				engine.TextBlock("What is in this picture?"),
				{Type: engine.BlockImage, Data: "aGk=", MimeType: "image/png"},
			}},
		},
		AddGenerationPrompt: true,
		BOSToken:            "<BOS>",
		EOSToken:            "<EOS>",
		Now:                 fixedNow,
	}
}

// toolConversation has a call, its result and a follow-up question.
func toolConversation() Input {
	call := engine.ToolCall{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris","unit":"celsius"}`)}
	return Input{
		System: "You are a helpful assistant.",
		Tools:  testTools,
		Messages: []engine.Message{
			text(engine.RoleUser, "What's the weather in Paris?"),
			{Role: engine.RoleAssistant, Content: []engine.Block{call.Block()}},
			engine.TextResult("18°C, sunny").Message(call),
			text(engine.RoleAssistant, "It is 18°C and sunny in Paris."),
			text(engine.RoleUser, "And in Tokyo?"),
		},
		AddGenerationPrompt: true,
		BOSToken:            "<BOS>",
		EOSToken:            "<EOS>",
		Now:                 fixedNow,
	}
}

type templateCase struct {
	name, path string
	tools      bool
	family     toolcall.Family
}

var templateCases = []templateCase{
	{"qwen2.5", "Qwen-Qwen2.5-7B-Instruct.jinja", true, toolcall.FamilyHermes},
	{"qwen3", "Qwen-Qwen3-0.6B.jinja", true, toolcall.FamilyHermes},
	{"smollm3", "HuggingFaceTB-SmolLM3-3B.jinja", false, toolcall.FamilyHermes},
	{"llama3.2", "meta-llama-Llama-3.2-3B-Instruct.jinja", true, toolcall.FamilyLlama3},
	{"hermes3", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", true, toolcall.FamilyHermes},
	{"granite3.3", "ibm-granite-granite-3.3-2B-Instruct.jinja", true, toolcall.FamilyGranite},
	{"gemma2", "google-gemma-2-2b-it.jinja", false, toolcall.FamilyNone},
	{"phi3.5", "microsoft-Phi-3.5-mini-instruct.jinja", false, toolcall.FamilyNone},
	{"chatml-tools", "", true, toolcall.FamilyHermes},
}

func (c templateCase) file() string {
	if c.path == "" {
		return chatMLTools
	}
	return filepath.Join(chatTemplatesDir, c.path)
}

func loadTemplate(t testing.TB, c templateCase) *Template {
	t.Helper()
	src, err := os.ReadFile(c.file())
	if os.IsNotExist(err) {
		t.Skipf("test material %s is absent (it lives in shared/models beside the repository)", c.file())
	}
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := Parse(string(src))
	if err != nil {
		t.Fatalf("Parse(%s): %v", c.path, err)
	}
	return tpl
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: rendering differs from the golden file\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

// TestGoldenTemplates renders every shared chat template with a plain chat
// and a tool conversation.
func TestGoldenTemplates(t *testing.T) {
	for _, c := range templateCases {
		t.Run(c.name, func(t *testing.T) {
			tpl := loadTemplate(t, c)
			if got := tpl.SupportsTools(); got != c.tools {
				t.Errorf("SupportsTools() = %v, want %v", got, c.tools)
			}
			if got := tpl.Family(); got != c.family {
				t.Errorf("Family() = %v, want %v", got, c.family)
			}
			for _, sc := range []struct {
				name string
				in   Input
			}{{"chat", chatConversation()}, {"tools", toolConversation()}} {
				out, err := tpl.Render(sc.in)
				if err != nil {
					t.Fatalf("Render(%s): %v", sc.name, err)
				}
				checkGolden(t, c.name+"."+sc.name, out)
				again, err := tpl.Render(sc.in)
				if err != nil || again != out {
					t.Errorf("Render(%s) is not deterministic", sc.name)
				}
				if strings.Contains(out, "The user greets me.") {
					t.Errorf("Render(%s) leaked a thinking block", sc.name)
				}
			}
		})
	}
}
