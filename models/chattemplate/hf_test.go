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
		{"output size", `{% for i in range(70000) %}` + strings.Repeat("x", 64) + `{% endfor %}`, "output exceeds"},
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
