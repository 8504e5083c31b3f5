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

// parser adapts toolcall's incremental parser to events. A reply that opens
// with <think>…</think> (Qwen3, DeepSeek-R1 style) streams that part as
// thinking: never shown as text, never parsed for tool calls.
type parser struct {
	p     *toolcall.Parser
	state thinkState
	held  string // undecided text: a possible <think> or </think> in progress
}

type thinkState int

const (
	thinkUnknown thinkState = iota // nothing but whitespace seen yet
	thinkInside
	thinkDone
)

const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

func (p *parser) write(piece string) []engine.Event {
	var evs []engine.Event
	text := func(s string) {
		if v := p.p.Write(s); v != "" {
			evs = append(evs, engine.Event{Type: engine.EventTextDelta, Text: v})
		}
	}
	p.held += piece
	for {
		switch p.state {
		case thinkUnknown:
			t := strings.TrimLeft(p.held, " \t\r\n")
			switch {
			case strings.HasPrefix(t, thinkOpen):
				p.held, p.state = t[len(thinkOpen):], thinkInside
				continue
			case strings.HasPrefix(thinkOpen, t):
				return evs // could still become <think>
			}
			p.state = thinkDone
			continue
		case thinkInside:
			if i := strings.Index(p.held, thinkClose); i >= 0 {
				if i > 0 {
					evs = append(evs, engine.Event{Type: engine.EventThinkingDelta, Text: p.held[:i]})
				}
				p.held, p.state = strings.TrimLeft(p.held[i+len(thinkClose):], "\r\n"), thinkDone
				continue
			}
			keep := partialSuffix(p.held, thinkClose)
			if out := p.held[:len(p.held)-keep]; out != "" {
				evs = append(evs, engine.Event{Type: engine.EventThinkingDelta, Text: out})
			}
			p.held = p.held[len(p.held)-keep:]
			return evs
		default:
			if p.held != "" {
				text(p.held)
				p.held = ""
			}
			return evs
		}
	}
}

// partialSuffix is the length of the longest suffix of s that is a proper
// prefix of tag.
func partialSuffix(s, tag string) int {
	for n := min(len(tag)-1, len(s)); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}

func (p *parser) close() ([]engine.Event, int) {
	var evs []engine.Event
	if p.held != "" {
		if p.state == thinkInside {
			evs = append(evs, engine.Event{Type: engine.EventThinkingDelta, Text: p.held})
		} else if v := p.p.Write(p.held); v != "" {
			evs = append(evs, engine.Event{Type: engine.EventTextDelta, Text: v})
		}
		p.held = ""
	}
	text, calls := p.p.Close()
	if text != "" {
		evs = append(evs, engine.Event{Type: engine.EventTextDelta, Text: text})
	}
	for i := range calls {
		evs = append(evs, engine.Event{Type: engine.EventToolCall, ToolCall: &calls[i]})
	}
	return evs, len(calls)
}
