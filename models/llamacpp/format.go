package llamacpp

import (
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/chattemplate"
	"github.com/openclaw-edge/edge/models/toolcall"
)

// format turns a chat request into the model's prompt text and parses its
// output back into events.
type format interface {
	render(req *engine.ChatRequest) (string, streamParser, error)
	// callOpener is the text that starts a tool call in this format when
	// the call can be grammar-constrained ("" when it cannot).
	callOpener() string
}

// streamParser turns generated pieces into events: visible text as soon as
// it is known not to be tool-call markup, tool calls at the end.
type streamParser interface {
	write(piece string) []engine.Event
	close() (evs []engine.Event, calls int)
}

// fallbackTemplate is used for GGUF files without a chat template: ChatML,
// the format most small instruct models were tuned on.
const fallbackTemplate = `{%- for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}{%- endfor %}{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{%- endif %}`

// templateFormat renders with the GGUF's chat template. A template that
// cannot render tools gets prompt-based calling from Render itself.
type templateFormat struct {
	tmpl   *chattemplate.Template
	family toolcall.Family
}

func newFormat(source string) (format, error) {
	if strings.TrimSpace(source) == "" {
		source = fallbackTemplate
	}
	t, err := chattemplate.Parse(source)
	if err != nil {
		return nil, err
	}
	return &templateFormat{tmpl: t, family: t.Family()}, nil
}

func (f *templateFormat) callOpener() string {
	if f.family == toolcall.FamilyHermes || f.family == toolcall.FamilyNone {
		return "<tool_call>"
	}
	return ""
}

func (f *templateFormat) render(req *engine.ChatRequest) (string, streamParser, error) {
	prompt, err := f.tmpl.Render(chattemplate.Input{
		Messages:            req.Messages,
		Tools:               req.Tools,
		System:              req.System,
		AddGenerationPrompt: true,
		Now:                 time.Now(),
	})
	if err != nil {
		return "", nil, err
	}
	return prompt, &parser{p: toolcall.NewParser(f.family)}, nil
}

// parser adapts toolcall's incremental parser to events.
type parser struct{ p *toolcall.Parser }

func (p *parser) write(piece string) []engine.Event {
	if s := p.p.Write(piece); s != "" {
		return []engine.Event{{Type: engine.EventTextDelta, Text: s}}
	}
	return nil
}

func (p *parser) close() ([]engine.Event, int) {
	text, calls := p.p.Close()
	var evs []engine.Event
	if text != "" {
		evs = append(evs, engine.Event{Type: engine.EventTextDelta, Text: text})
	}
	for i := range calls {
		evs = append(evs, engine.Event{Type: engine.EventToolCall, ToolCall: &calls[i]})
	}
	return evs, len(calls)
}
