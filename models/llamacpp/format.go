package llamacpp

import (
	"strings"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/chattemplate"
	"github.com/openclaw-edge/edge/models/toolcall"
)

// format turns a chat request into the model's prompt text and parses its
// output back into events.
type format interface {
	render(req *engine.ChatRequest) (string, streamParser, error)
	// thinking is how the template turns thinking on and off.
	thinking() chattemplate.ThinkingSwitch
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
	// offBlock is what the template writes after the assistant header
	// when thinking is off; see keepOffBlocks.
	offBlock func() (header, block string)
}

func newFormat(source string) (format, error) {
	if strings.TrimSpace(source) == "" {
		source = fallbackTemplate
	}
	t, err := chattemplate.Parse(source)
	if err != nil {
		return nil, err
	}
	f := &templateFormat{tmpl: t, family: t.Family()}
	f.offBlock = sync.OnceValues(f.probeOffBlock)
	return f, nil
}

// probeOffBlock finds the assistant header and the empty thinking block
// the template's generation prompt adds with thinking off (Qwen3:
// "<|im_start|>assistant\n" and "<think>\n\n</think>\n\n"); "" when it
// has none.
func (f *templateFormat) probeOffBlock() (header, block string) {
	if f.tmpl.ThinkingSwitch() != chattemplate.ThinkingEnableVar {
		return "", ""
	}
	on, off := true, false
	msgs := []engine.Message{engine.UserText("x")}
	base, err1 := f.tmpl.Render(chattemplate.Input{Messages: msgs})
	withOn, err2 := f.tmpl.Render(chattemplate.Input{Messages: msgs, AddGenerationPrompt: true, EnableThinking: &on})
	withOff, err3 := f.tmpl.Render(chattemplate.Input{Messages: msgs, AddGenerationPrompt: true, EnableThinking: &off})
	if err1 != nil || err2 != nil || err3 != nil || !strings.HasPrefix(withOn, base) || !strings.HasPrefix(withOff, withOn) {
		return "", ""
	}
	header, block = withOn[len(base):], withOff[len(withOn):]
	if header == "" || !strings.HasPrefix(block, "<think>") {
		return "", ""
	}
	return header, block
}

// keepOffBlocks writes the empty thinking block back after every
// assistant header that lacks one. With thinking off, Qwen3's template
// opens the reply with an empty block, and the model writes its reply after
// it; but it renders earlier replies without it, so on the next turn the
// prompt differs from what the runner's cache holds right at the start of
// the last reply, and the whole reply (and everything after it) is
// evaluated again on every turn. With the block kept, the history is what
// the model saw and wrote.
func (f *templateFormat) keepOffBlocks(prompt string) string {
	header, block := f.offBlock()
	if header == "" {
		return prompt
	}
	var b strings.Builder
	for {
		i := strings.Index(prompt, header)
		if i < 0 {
			b.WriteString(prompt)
			return b.String()
		}
		b.WriteString(prompt[:i+len(header)])
		prompt = prompt[i+len(header):]
		if !strings.HasPrefix(prompt, "<think>") {
			b.WriteString(block)
		}
	}
}

func (f *templateFormat) callOpener() string {
	if f.family == toolcall.FamilyHermes || f.family == toolcall.FamilyNone {
		return "<tool_call>"
	}
	return ""
}

func (f *templateFormat) thinking() chattemplate.ThinkingSwitch { return f.tmpl.ThinkingSwitch() }

// render is the one place a request becomes prompt text: Stream generates
// from it and CountTokens counts it.
func (f *templateFormat) render(req *engine.ChatRequest) (string, streamParser, error) {
	in := chattemplate.Input{
		Messages:            defuseMessages(req.Messages), // special.go
		Tools:               req.Tools,
		System:              req.System,
		AddGenerationPrompt: true,
		Now:                 time.Now(),
	}
	prompt, ok, err := f.renderContinued(in, req.Thinking)
	if !ok && err == nil {
		applyThinking(&in, req.Thinking, f.tmpl.ThinkingSwitch())
		prompt, err = f.tmpl.Render(in)
	}
	if err != nil {
		return "", nil, err
	}
	if req.Thinking == engine.ThinkingOff {
		prompt = f.keepOffBlocks(prompt)
	}
	p := &parser{p: toolcall.NewParser(f.family)}
	if opensThinking(prompt) {
		p.state = thinkInside // the template opened the block for the model
	}
	return prompt, p, nil
}

// renderContinued renders a request whose reply was cut at the output
// limit and is being continued (the agent loop's [continue] rounds) as the
// later context will show it: the parts of the reply joined into one
// assistant message — here left open at the end, so the model goes on
// writing it. Asked with a [continue] user message instead, the model
// would see a conversation the next turn does not show (the transcript
// joins the parts), and the runner would evaluate every part after the
// first again on that turn: up to 3,000 tokens, over a minute on a Pi.
// ok is false when the request has no [continue] rounds, or when the
// template does not render the reply verbatim (then it is asked the
// ordinary way).
func (f *templateFormat) renderContinued(in chattemplate.Input, thinking engine.ThinkingLevel) (string, bool, error) {
	msgs, open := joinContinued(in.Messages)
	if msgs == nil {
		return "", false, nil
	}
	in.Messages = msgs
	in.AddGenerationPrompt = !open
	if !open {
		applyThinking(&in, thinking, f.tmpl.ThinkingSwitch())
		prompt, err := f.tmpl.Render(in)
		return prompt, err == nil, err
	}
	// The open turn ends where the reply so far ends: a marker appended to
	// it shows where, once the template has rendered it (found exactly
	// once, right after the reply's text, or the request is asked the
	// ordinary way).
	last := &in.Messages[len(in.Messages)-1]
	var text strings.Builder
	for _, b := range last.Content {
		if b.Type == engine.BlockText {
			text.WriteString(b.Text)
		}
	}
	t := text.String()
	if t == "" {
		return "", false, nil
	}
	last.Content = append(append([]engine.Block(nil), last.Content...), engine.TextBlock(continueMark))
	applyThinking(&in, thinking, f.tmpl.ThinkingSwitch())
	prompt, err := f.tmpl.Render(in)
	if err != nil {
		return "", false, err
	}
	i := strings.Index(prompt, continueMark)
	if i < 0 || strings.Count(prompt, continueMark) != 1 || !strings.HasSuffix(prompt[:i], t) {
		return "", false, nil
	}
	return prompt[:i], true, nil
}

// continueMark marks the end of a reply being continued (renderContinued):
// no message holds it (it is built from a private-use character).
const continueMark = "\ue000openclaw-continue\ue000"

// joinContinued joins each assistant message followed by a [continue]
// user message and the next assistant message into one; open says the
// messages ended with a [continue] (the last assistant message is being
// continued). nil when there is nothing to join.
func joinContinued(msgs []engine.Message) (out []engine.Message, open bool) {
	isContinue := func(m *engine.Message) bool {
		return m.Role == engine.RoleUser && m.Text() == engine.ContinuePrompt
	}
	found := false
	for i := range msgs {
		if isContinue(&msgs[i]) && i > 0 && msgs[i-1].Role == engine.RoleAssistant && len(msgs[i-1].ToolCalls()) == 0 {
			found = true
			break
		}
	}
	if !found {
		return nil, false
	}
	out = make([]engine.Message, 0, len(msgs))
	joinNext := false
	for i := range msgs {
		m := msgs[i]
		switch {
		case isContinue(&m) && len(out) > 0 && out[len(out)-1].Role == engine.RoleAssistant && len(out[len(out)-1].ToolCalls()) == 0:
			joinNext, open = true, i == len(msgs)-1
		case joinNext && m.Role == engine.RoleAssistant:
			prev := &out[len(out)-1]
			prev.Content = append(append([]engine.Block(nil), prev.Content...), m.Content...)
			prev.StopReason = m.StopReason
			joinNext = false
		default:
			joinNext = false
			out = append(out, m)
		}
	}
	return out, open
}

// applyThinking passes a /think level to the template by the mechanism it
// has (chattemplate.ThinkingSwitch):
//
//   - enable_thinking (Qwen3, SmolLM3) and thinking (Granite): the variable
//     is false for off, true for low, medium and high, undefined (the
//     template's default) for "". Local models have no effort setting:
//     low, medium and high all mean on.
//   - no_think (a Qwen3 template without the variable): " /no_think" or
//     " /think" is appended to every user message of the prompt (not only
//     the last), so the rendered history stays the same from turn to turn
//     and the runner's prefix cache keeps matching; Qwen3 obeys the most
//     recent switch. The session's transcript is not changed.
//   - none: the prompt is the same at every level.
//
// With thinking off, thinking blocks are dropped from the history given to
// the template, whatever the mechanism: they cost context and can lead the
// model back into thinking. (chattemplate leaves them out of the
// messages' text today anyway; this keeps off meaning off if it ever
// passes them on, e.g. as Qwen3's reasoning_content.)
func applyThinking(in *chattemplate.Input, level engine.ThinkingLevel, sw chattemplate.ThinkingSwitch) {
	var on bool
	switch level {
	case engine.ThinkingOff:
		in.Messages = withoutThinking(in.Messages)
	case engine.ThinkingLow, engine.ThinkingMedium, engine.ThinkingHigh:
		on = true
	default: // "" or unknown: the template's default
		return
	}
	switch sw {
	case chattemplate.ThinkingEnableVar, chattemplate.ThinkingVar:
		in.EnableThinking = &on
	case chattemplate.ThinkingSoftSwitch:
		in.Messages = withSoftSwitch(in.Messages, chattemplate.SoftSwitch(on))
	}
}

// withoutThinking returns msgs without thinking blocks, copying only what
// changes.
func withoutThinking(msgs []engine.Message) []engine.Message {
	var out []engine.Message
	for i, m := range msgs {
		if !hasThinking(m.Content) {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = append(make([]engine.Message, 0, len(msgs)), msgs[:i]...)
		}
		kept := make([]engine.Block, 0, len(m.Content))
		for _, b := range m.Content {
			if b.Type != engine.BlockThinking {
				kept = append(kept, b)
			}
		}
		m.Content = kept
		out = append(out, m)
	}
	if out == nil {
		return msgs
	}
	return out
}

func hasThinking(blocks []engine.Block) bool {
	for _, b := range blocks {
		if b.Type == engine.BlockThinking {
			return true
		}
	}
	return false
}

// withSoftSwitch appends text to every user message (a copy).
func withSoftSwitch(msgs []engine.Message, text string) []engine.Message {
	out := make([]engine.Message, len(msgs))
	for i, m := range msgs {
		if m.Role == engine.RoleUser {
			m.Content = append(m.Content[:len(m.Content):len(m.Content)], engine.TextBlock(text))
		}
		out[i] = m
	}
	return out
}

// opensThinking reports a prompt that ends inside an open think block
// (templates of always-thinking models such as QwQ end with
// "<think>\n"): the model's output starts with thinking, without the tag.
func opensThinking(prompt string) bool {
	return strings.HasSuffix(strings.TrimRight(prompt, " \n"), thinkOpen)
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
