package chattemplate

import (
	"os"
	"strings"
	"testing"
)

// qwen3GenerationSwitch is the part of Qwen3's template that reads
// enable_thinking; without it the template is a Qwen3 one that only the
// soft switch reaches (as in GGUF files with a trimmed template).
const qwen3GenerationSwitch = `
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}`

func qwen3WithoutVariable(t testing.TB) string {
	t.Helper()
	src, err := os.ReadFile(templateCases[1].file())
	if os.IsNotExist(err) {
		t.Skip("test material is absent (it lives in shared/models beside the repository)")
	}
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), qwen3GenerationSwitch) {
		t.Fatal("Qwen3's template no longer has the expected enable_thinking block")
	}
	return strings.Replace(string(src), qwen3GenerationSwitch, "", 1)
}

// TestThinkingSwitch: the mechanism detected for every shared template and
// for the variants that matter.
func TestThinkingSwitch(t *testing.T) {
	want := map[string]ThinkingSwitch{
		"qwen2.5":      ThinkingNone,
		"qwen3":        ThinkingEnableVar,
		"smollm3":      ThinkingEnableVar,
		"llama3.2":     ThinkingNone,
		"hermes3":      ThinkingNone,
		"granite3.3":   ThinkingVar,
		"gemma2":       ThinkingNone,
		"phi3.5":       ThinkingNone,
		"chatml-tools": ThinkingNone,
	}
	for _, c := range templateCases {
		if got := loadTemplate(t, c).ThinkingSwitch(); got != want[c.name] {
			t.Errorf("%s: ThinkingSwitch() = %q, want %q", c.name, got, want[c.name])
		}
	}

	qwen3 := qwen3WithoutVariable(t)
	tests := []struct {
		name, src string
		want      ThinkingSwitch
	}{
		{"qwen3 without enable_thinking", qwen3, ThinkingSoftSwitch},
		{"qwen3 opening the think block (QwQ, Qwen3-Thinking)",
			qwen3 + `{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n<think>\n' }}{%- endif %}`, ThinkingNone},
		{"thinking as a local", `{% set thinking = true %}{% if thinking %}t{% endif %}{{ messages[0].content }}`, ThinkingNone},
		{"thinking as a loop variable", `{% for thinking in [1] %}{{ thinking }}{% endfor %}{{ messages[0].content }}`, ThinkingNone},
		{"thinking with a default", `{% if thinking is not defined %}{% set thinking = false %}{% endif %}{{ messages[0].content }}`, ThinkingVar},
		{"thinking as an attribute", `{% for m in messages %}{{ m.thinking }}{{ m.content }}{% endfor %}`, ThinkingNone},
		{"thinking in a string", `{{ messages[0].content }}{{ "thinking" }}{{ '</think>' }}`, ThinkingNone},
		{"enable_thinking", `{% if enable_thinking is defined and not enable_thinking %}x{% endif %}{{ messages[0].content }}`, ThinkingEnableVar},
		{"chatml with think but no qwen3 markers", `<|im_start|>{% for m in messages %}{{ m.content.split('</think>')[-1] }}{% endfor %}`, ThinkingNone},
	}
	for _, tt := range tests {
		tpl, err := Parse(tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := tpl.ThinkingSwitch(); got != tt.want {
			t.Errorf("%s: ThinkingSwitch() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestGoldenThinking renders the templates that read a thinking variable
// with it set false and true (testdata/<name>.think-off|think-on.golden).
func TestGoldenThinking(t *testing.T) {
	for _, c := range templateCases {
		tpl := loadTemplate(t, c)
		if s := tpl.ThinkingSwitch(); s != ThinkingEnableVar && s != ThinkingVar {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			outs := map[bool]string{}
			for _, on := range []bool{false, true} {
				in := chatConversation()
				in.EnableThinking = &on
				out, err := tpl.Render(in)
				if err != nil {
					t.Fatal(err)
				}
				outs[on] = out
				name := c.name + ".think-off"
				if on {
					name = c.name + ".think-on"
				}
				checkGolden(t, name, out)
			}
			def, err := tpl.Render(chatConversation())
			if err != nil {
				t.Fatal(err)
			}
			switch c.name {
			case "qwen3": // thinks unless told not to
				if def != outs[true] || !strings.HasSuffix(outs[false], "<|im_start|>assistant\n<think>\n\n</think>\n\n") {
					t.Errorf("qwen3: default must equal on, and off must end with the empty think block")
				}
			case "smollm3":
				if def != outs[true] || !strings.Contains(outs[false], "Reasoning Mode: /no_think") ||
					!strings.HasSuffix(outs[false], "<|im_start|>assistant\n<think>\n\n</think>\n") {
					t.Errorf("smollm3: default must equal on, and off must switch to /no_think with an empty think block")
				}
			case "granite3.3":
				// Granite reads thinking only when it writes its own
				// system message: with ours the switch changes nothing.
				if outs[false] != outs[true] || def != outs[false] {
					t.Errorf("granite3.3: with a system prompt the rendering must not depend on thinking")
				}
				in := chatConversation()
				in.System = ""
				on := true
				in.EnableThinking = &on
				out, err := tpl.Render(in)
				if err != nil || !strings.Contains(out, "You can write down your thoughts") {
					t.Errorf("granite3.3: thinking without a system prompt lacks the reasoning instruction (err %v):\n%s", err, out)
				}
			}
		})
	}
}
