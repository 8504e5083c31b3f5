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

// templateFormat renders with the GGUF's chat template.
type templateFormat struct {
	tmpl   *chattemplate.Template
	family toolcall.Family
	tools  bool // the template renders tools itself
}

func newFormat(source string) (format, error) {
	if strings.TrimSpace(source) == "" {
		source = fallbackTemplate
	}
	t, err := chattemplate.Parse(source)
	if err != nil {
		return nil, err
	}
	f := &templateFormat{tmpl: t, family: t.Family(), tools: t.SupportsTools()}
	if !f.tools {
		// Prompt-based calling: our <tools> block, Hermes-style calls.
		f.family = toolcall.FamilyHermes
	}
	return f, nil
}

func (f *templateFormat) render(req *engine.ChatRequest) (string, streamParser, error) {
	in := chattemplate.Input{
		Messages:            req.Messages,
		System:              req.System,
		AddGenerationPrompt: true,
		Now:                 time.Now(),
	}
	if len(req.Tools) > 0 {
		if f.tools {
			in.Tools = req.Tools
		} else {
			in.System = strings.TrimSpace(req.System + "\n\n" + toolcall.ToolsSystemPrompt(req.Tools))
		}
	}
	prompt, err := f.tmpl.Render(in)
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
