package chattemplate

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/openclaw-edge/edge/engine"
)

// benchInput is a 20-message conversation with 10 tools.
func benchInput() Input {
	var tools []engine.ToolSpec
	for i := range 10 {
		tools = append(tools, engine.ToolSpec{
			Name:        fmt.Sprintf("tool_%d", i),
			Description: "A tool that does something useful with a path and options.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Workspace path"},"recursive":{"type":"boolean"},"depth":{"type":"integer","minimum":0},"tags":{"type":"array","items":{"type":"string"}}},"required":["path"]}`),
		})
	}
	var msgs []engine.Message
	for i := 0; len(msgs) < 20; i++ {
		call := engine.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "tool_1", Arguments: json.RawMessage(`{"path":"notes/today.md","recursive":false}`)}
		msgs = append(msgs,
			text(engine.RoleUser, "Please look at my notes for today and summarise what I still have to do."),
			engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock("Let me read them."), call.Block()}},
			engine.TextResult("- buy milk\n- call the plumber\n- finish the report").Message(call),
			text(engine.RoleAssistant, "You still have to buy milk, call the plumber and finish the report."),
		)
	}
	return Input{System: "You are a helpful assistant.", Tools: tools, Messages: msgs[:20], AddGenerationPrompt: true, Now: fixedNow}
}

func BenchmarkRender(b *testing.B) {
	for _, c := range []templateCase{templateCases[1], templateCases[3], templateCases[7]} { // qwen3, llama3.2, phi3.5
		b.Run(c.name, func(b *testing.B) {
			tpl := loadTemplate(b, c)
			in := benchInput()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tpl.Render(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzTemplate: templates come from model files, so Parse and Render must
// never panic or hang on a bad one; they return errors instead.
func FuzzTemplate(f *testing.F) {
	for _, c := range templateCases {
		if src, err := os.ReadFile(c.file()); err == nil {
			f.Add(string(src))
		}
	}
	for _, s := range []string{
		`{{ messages[0].content }}`,
		`{% for m in messages %}{{ m.role }}{% endfor %}{{ tools | tojson(indent=2) }}`,
		`{% macro f(x) %}{{ f(x) }}{% endmacro %}{{ f(1) }}`,
		`{{ messages[0].content.split()[-1] }}{{ {"a": 1} | items | list }}`,
		`{% raw %}  {% x %}{% endraw %}`,
		`{{ "{%" }}{% if true %}  {# c #}{% endif %}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 {
			return
		}
		tpl, err := Parse(src)
		if err != nil {
			return
		}
		in := chatConversation()
		in.Tools = testTools[:1]
		_, _ = tpl.Render(in)
	})
}
