package chattemplate

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/openclaw-edge/edge/engine"
)

// render parses src and renders it over a one-user-message conversation
// whose content is content.
func renderSrc(t *testing.T, src, content string) (string, error) {
	t.Helper()
	tpl, err := Parse(`{% if messages[0].content != "` + probeUser + `" %}` + src + `{% endif %}`)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return tpl.Render(Input{Messages: []engine.Message{text(engine.RoleUser, content)}, Now: fixedNow})
}

// TestHFLayer checks the Hugging Face globals, filters and Python methods
// the chat templates rely on.
func TestHFLayer(t *testing.T) {
	tests := []struct {
		name, src, content, want string
	}{
		{"replace two arguments", `{{ messages[0].content.replace("/think", "") }}`, "a /think b", "a  b"},
		{"replace with count", `{{ messages[0].content.replace("a", "b", 1) }}`, "aaa", "baa"},
		{"strip whitespace", `[{{ messages[0].content.strip() }}]`, " \n\tx \n", "[x]"},
		{"strip chars", `[{{ messages[0].content.strip("\n") }}]`, "\n x \n", "[ x ]"},
		{"lstrip rstrip", `[{{ messages[0].content.lstrip() }}|{{ messages[0].content.rstrip() }}]`, "  x  ", "[x  |  x]"},
		{"split whitespace", `{{ messages[0].content.split() | join(",") }}`, " a  b\nc ", "a,b,c"},
		{"split separator last", `{{ messages[0].content.split("</think>")[-1] }}`, "t</think>answer", "answer"},
		{"split maxsplit", `{{ messages[0].content.split(",", 1) | join("|") }}`, "a,b,c", "a|b,c"},
		{"rsplit", `{{ messages[0].content.rsplit(",", 1) | join("|") }}`, "a,b,c", "a,b|c"},
		{"startswith endswith", `{{ messages[0].content.startswith("<a>") }} {{ messages[0].content.endswith("</a>") }}`, "<a>x</a>", "True True"},
		{"startswith tuple", `{{ messages[0].content.startswith(("x", "<a")) }}`, "<a>", "True"},
		{"case", `{{ messages[0].content.upper() }} {{ messages[0].content.lower() }} {{ messages[0].content.title() }}`, "hello wORLD", "HELLO WORLD hello world Hello World"},
		{"raise_exception in untaken branch", `{% if false %}{{ raise_exception("no") }}{% endif %}ok`, "", "ok"},
		{"strftime_now", `{{ strftime_now("%d %b %Y") }} {{ strftime_now("%B %d, %Y %H:%M") }}`, "", "14 Mar 2025 March 14, 2025 09:26"},
		{"tojson python spacing", `{{ {"a": [1, 2.5, true, none], "b": "é<&>'"} | tojson }}`, "", `{"a": [1, 2.5, true, null], "b": "é<&>'"}`},
		{"tojson indent", `{{ {"a": [1], "b": {}} | tojson(indent=2) }}`, "", "{\n  \"a\": [\n    1\n  ],\n  \"b\": {}\n}"},
		{"tojson ensure_ascii", `{{ "é" | tojson(ensure_ascii=true) }}`, "", `"\u00e9"`},
		{"tojson sort_keys", `{{ {"b": 1, "a": 2} | tojson(sort_keys=true) }}`, "", `{"a": 2, "b": 1}`},
		{"tojson separators", `{{ {"b": 1, "a": [2, 3]} | tojson(separators=(",", ":")) }}`, "", `{"b":1,"a":[2,3]}`},
		{"tojson floats", `{{ [1.0, 0.00001, 1e20, 123.456] | tojson }}`, "", `[1.0, 1e-05, 1e+20, 123.456]`},
		{"items keeps order", `{% for k, v in {"z": 1, "a": 2, "m": 3} | items %}{{ k }}={{ v }} {% endfor %}`, "", "z=1 a=2 m=3 "},
		{"dict methods", `{% set d = {"z": 1, "a": 2} %}{{ d.get("a") }} {{ d.get("q", "def") }} {{ d.keys() | join(",") }} {% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %}`, "", "2 def z,a z1a2"},
		{"namespace", `{% set ns = namespace(n=0) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}`, "", "6"},
		{"loop controls", `{% for i in [1, 2, 3, 4] %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}`, "", "13"},
		{"range", `{% for i in range(3) %}{{ i }}{% endfor %}|{{ range(1, 7, 2) | join(",") }}|{{ range(5, 0, -2) | join(",") }}`, "", "012|1,3,5|5,3,1"},
		{"reverse slice", `{% for i in [1, 2, 3][::-1] %}{{ i }}{% endfor %}`, "", "321"},
		{"is false is true", `{{ false is false }} {{ none is false }} {{ true is true }} {{ 1 is true }}`, "", "True False True False"},
		{"trim_blocks", "{% if true %}\nx\n{% endif %}\n", "", "x\n"},
		{"lstrip_blocks", "\n  {% if true %}x{% endif %}", "", "x"},
		{"lstrip_blocks only at line start", `{{ "a" }} {% if true %}b{% endif %}`, "", "a b"},
		{"in mapping", `{{ "role" in messages[0] }} {{ "tool_calls" in messages[0] }}`, "", "True False"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := renderSrc(t, tt.src, tt.content)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRaiseException(t *testing.T) {
	_, err := renderSrc(t, `{{ raise_exception("Conversation roles must alternate") }}`, "x")
	var te *TemplateError
	if !errors.As(err, &te) || te.Message != "Conversation roles must alternate" {
		t.Fatalf("err = %v, want a *TemplateError with the template's message", err)
	}
}

// TestMessageMapping shows the HF message dicts templates receive.
func TestMessageMapping(t *testing.T) {
	tpl, err := Parse(`{# a template that renders tool_calls itself #}{{ messages | tojson }}{% if tools is defined %}|{{ tools | tojson }}{% endif %}`)
	if err != nil {
		t.Fatal(err)
	}
	in := toolConversation()
	in.Tools = in.Tools[:1]
	in.Messages = append(in.Messages, engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{
		{Type: engine.BlockThinking, Thinking: "hidden"},
		engine.TextBlock("Look:"),
		{Type: engine.BlockImage, Data: "aGk=", MimeType: "image/png"},
		engine.TextBlock("done"),
		{Type: engine.BlockToolCall, ID: "c9", Name: "bad_args", Arguments: json.RawMessage(`not json`)},
	}})
	got, err := tpl.Render(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"role": "system", "content": "You are a helpful assistant."}, ` +
		`{"role": "user", "content": "What's the weather in Paris?"}, ` +
		`{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "id": "call_1", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]}, ` +
		`{"role": "tool", "content": "18°C, sunny", "tool_call_id": "call_1", "name": "get_weather"}, ` +
		`{"role": "assistant", "content": "It is 18°C and sunny in Paris."}, ` +
		`{"role": "user", "content": "And in Tokyo?"}, ` +
		`{"role": "assistant", "content": "Look:\n[image]\ndone", "tool_calls": [{"type": "function", "id": "c9", "function": {"name": "bad_args", "arguments": "not json"}}]}]` +
		`|[{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather for a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name, e.g. Paris"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"}}, "required": ["city"]}}}]`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestSupportsTools(t *testing.T) {
	tests := []struct {
		src  string
		want bool
	}{
		{`{% for m in messages %}{{ m.content }}{% endfor %}`, false},
		{`{% if tools %}{{ tools | tojson }}{% endif %}{{ messages[0].content }}`, true},
		{`{{ messages[0].content }}{{ "tools are nice" }}`, false},
		{`{%- for t in custom_tools or tools %}{{ t }}{% endfor %}{{ messages[0].content }}`, true},
		{`{{ messages[0].content }} tools in plain text`, false},
		{`{{ messages[0].content }}{% if message is defined %}{{ message.tools_used }}{% endif %}`, false},
	}
	for _, tt := range tests {
		tpl, err := Parse(tt.src)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.src, err)
		}
		if got := tpl.SupportsTools(); got != tt.want {
			t.Errorf("SupportsTools(%q) = %v, want %v", tt.src, got, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"empty", "  ", "empty"},
		{"syntax", "{% if %}", "parse chat template"},
		{"unclosed", "{% for m in messages %}x", "parse chat template"},
		{"too large", strings.Repeat("x", MaxSourceBytes+1), "more than"},
		{"cannot render", `{{ raise_exception("nope") }}`, "cannot render"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestGuards: a hostile template in a model file errors out instead of
// crashing or exhausting memory.
func TestGuards(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"macro recursion", `{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}`, "recursion"},
		{"output size", `{% for i in range(65000) %}` + strings.Repeat("x", 80) + `{% endfor %}`, "output exceeds"},
		{"huge range", `{% for i in range(1000000000) %}x{% endfor %}`, "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := renderSrc(t, tt.src, "x")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestSystemFolding: Gemma-2 raises on a system message, so the system
// prompt goes into the first user message instead.
func TestSystemFolding(t *testing.T) {
	tpl, err := Parse(`{% for m in messages %}{% if m.role == "system" %}{{ raise_exception("System role not supported") }}{% endif %}[{{ m.role }}:{{ m.content }}]{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	if tpl.SupportsSystem() {
		t.Error("SupportsSystem() = true for a template that raises on system messages")
	}
	got, err := tpl.Render(Input{System: "Be brief.", Messages: []engine.Message{text(engine.RoleUser, "Hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "[user:Be brief.\n\nHi]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestRenderFallback: a tool template that raises on the input falls back
// to prompt-based tool calling instead of failing the turn.
func TestRenderFallback(t *testing.T) {
	c := templateCases[4] // hermes3: its type macro recurses forever on "null"
	tpl := loadTemplate(t, c)
	in := toolConversation()
	in.Tools = []engine.ToolSpec{{Name: "when", Description: "d", Parameters: json.RawMessage(`{"type":"object","properties":{"since":{"type":["string","null"]}}}`)}}
	if _, err := tpl.render(in, modeAdapt); err == nil {
		t.Fatal("expected Hermes-3's own rendering to fail on a null type")
	}
	out, err := tpl.Render(in)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	if !strings.Contains(out, "# Tools") || !strings.Contains(out, `"name": "when"`) {
		t.Errorf("fallback output lacks the prompt-based tools section:\n%s", out)
	}

	// Llama-3.2 raises on two calls in one message.
	tpl = loadTemplate(t, templateCases[3])
	a := engine.ToolCall{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}
	b := engine.ToolCall{ID: "call_2", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Rome"}`)}
	in = toolConversation()
	in.Messages = append(in.Messages,
		engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{a.Block(), b.Block()}},
		engine.TextResult("rain").Message(a), engine.TextResult("sun").Message(b))
	if _, err := tpl.render(in, modeAdapt); err == nil {
		t.Fatal("expected Llama-3.2's own rendering to fail on two calls in one message")
	}
	out, err = tpl.Render(in)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	if !strings.Contains(out, "<tool_response>\nrain\n</tool_response>") {
		t.Errorf("fallback output lacks the tool results as text:\n%s", out)
	}
}

func TestConcurrentRender(t *testing.T) {
	tpl := loadTemplate(t, templateCases[1])
	want, err := tpl.Render(toolConversation())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				got, err := tpl.Render(toolConversation())
				if err != nil || got != want {
					t.Errorf("concurrent render differs (err %v)", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestPromptStyleAlternation: for a template without tools, several tool
// results become one user turn, so Gemma-2's strict user/model alternation
// holds.
func TestPromptStyleAlternation(t *testing.T) {
	tpl := loadTemplate(t, templateCases[6]) // gemma2
	a := engine.ToolCall{ID: "call_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a"}`)}
	b := engine.ToolCall{ID: "call_2", Name: "read_file", Arguments: json.RawMessage(`{"path":"b"}`)}
	in := Input{
		System: "Be brief.",
		Tools:  testTools,
		Messages: []engine.Message{
			text(engine.RoleUser, "Compare a and b."),
			{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock("Reading both."), a.Block(), b.Block()}},
			engine.TextResult("A").Message(a),
			engine.ErrorResult("no such file").Message(b),
		},
		AddGenerationPrompt: true,
	}
	out, err := tpl.Render(in)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	for _, want := range []string{
		"<start_of_turn>model\nReading both.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}\n</tool_call><end_of_turn>\n",
		"<start_of_turn>user\n<tool_response>\nA\n</tool_response>\n\n<tool_response>\nno such file\n</tool_response><end_of_turn>\n<start_of_turn>model\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestEnableThinking(t *testing.T) {
	off := false
	tests := []struct {
		c    templateCase
		want string
	}{
		{templateCases[1], "<|im_start|>assistant\n<think>\n\n</think>\n\n"}, // qwen3
		{templateCases[2], "Reasoning Mode: /no_think"},                      // smollm3
	}
	for _, tt := range tests {
		tpl := loadTemplate(t, tt.c)
		in := chatConversation()
		in.EnableThinking = &off
		out, err := tpl.Render(in)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, tt.want) {
			t.Errorf("%s with thinking off lacks %q:\n%s", tt.c.name, tt.want, out)
		}
	}
}

func TestRenderBadTool(t *testing.T) {
	tpl := loadTemplate(t, templateCases[0])
	in := chatConversation()
	in.Tools = []engine.ToolSpec{{Name: "broken", Parameters: json.RawMessage(`{"type":`)}}
	_, err := tpl.Render(in)
	if err == nil || !strings.Contains(err.Error(), `tool "broken"`) {
		t.Fatalf("err = %v, want one naming the broken tool", err)
	}
}

func TestLstripBlocks(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a\n  {% if x %}", "a\n{% if x %}"},
		{"  {# c #}\n\t{%- y %}", "{# c #}\n{%- y %}"},
		{"a  {% if x %}", "a  {% if x %}"},
		{"  {{ v }}", "  {{ v }}"},
		{"  {%+ if x %}", "  {%+ if x %}"},
		{"{{ '\n  {% no' }}", "{{ '\n  {% no' }}"},
		{"{% raw %}\n  {% x %}\n  {% endraw %}", "{% raw %}\n  {% x %}\n{% endraw %}"},
		{"{% if x %}\n  ", "{% if x %}\n  "},
	}
	for _, tt := range tests {
		if got := lstripBlocks(tt.in); got != tt.want {
			t.Errorf("lstripBlocks(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
