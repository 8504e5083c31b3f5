// Package chattemplate renders a model's own chat template (the Jinja source
// in a GGUF's tokenizer.chat_template) into the prompt text the local runner
// tokenizes, the way Hugging Face's apply_chat_template does.
//
// Rendering uses github.com/nikolalohinski/gonja/v2 with a small
// Hugging Face–compatible layer (see env.go): the raise_exception and
// strftime_now globals, tojson with HF's arguments and Python's json.dumps
// output, order-preserving |items and dict methods, and Python's str methods
// where gonja's differ. Choices made where the spec is silent:
//
//   - Values reach the template as Python's json.loads would build them:
//     objects are ordered dicts, so tool schemas and arguments keep their key
//     order in tojson output, and rendering is deterministic.
//   - Engine messages map to HF message dicts: {role: system|user|assistant|
//     tool, content: string, tool_calls: [{type: "function", id, function:
//     {name, arguments (a dict)}}], tool_call_id, name}. Thinking blocks are
//     dropped from history; images become the text "[image]".
//   - A template that does not render tools (SupportsTools false) still gets
//     tool calling: Render appends toolcall.ToolsSystemPrompt to the system
//     prompt, writes past calls as <tool_call> blocks in the assistant text
//     and past results as <tool_response> blocks in user turns (merging
//     consecutive user turns, since some templates demand alternation).
//   - A template that rejects a system message (Gemma-2 raises "System role
//     not supported") gets the system prompt prepended to the first user
//     message; Parse finds this out with one probe render.
//   - Templates are outside input: source size, output size and macro
//     recursion depth are bounded, and a panic inside the engine becomes an
//     error.
package chattemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"

	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
	"github.com/nikolalohinski/gonja/v2/nodes"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/toolcall"
)

// Limits on what a template from a model file may do.
const (
	// MaxSourceBytes bounds the template source (real ones are < 20 KB).
	MaxSourceBytes = 256 << 10
	// MaxOutputBytes bounds one rendered prompt.
	MaxOutputBytes = 4 << 20
	// maxMacroDepth bounds macro recursion: Go cannot recover from a stack
	// overflow, and Hermes' json_to_python_type recurses legitimately.
	maxMacroDepth = 64
)

// Probe texts for Parse's test renders.
const (
	probeUser   = "probe-user-4f1c"
	probeSystem = "probe-system-9b2e"
)

// Template is a compiled chat template. It is safe for concurrent use.
type Template struct {
	source         string
	tpl            *exec.Template
	supportsTools  bool
	supportsSystem bool
	rendersCalls   bool // the template reads messages' tool_calls
	family         toolcall.Family
	thinking       ThinkingSwitch
}

// Input is one conversation to render.
type Input struct {
	Messages []engine.Message
	Tools    []engine.ToolSpec
	// System becomes the first message (role system).
	System string
	// AddGenerationPrompt ends the prompt with the assistant header.
	AddGenerationPrompt bool
	// BOSToken and EOSToken are the vocabulary's special token texts
	// (bos_token, eos_token in the template).
	BOSToken, EOSToken string
	// Now is what strftime_now formats; zero means time.Now().
	Now time.Time
	// EnableThinking, when set, is passed as enable_thinking (Qwen3,
	// SmolLM3) and thinking (Granite); nil leaves both undefined, the
	// template's default. See ThinkingSwitch.
	EnableThinking *bool
}

// nameRef matches a use of the variable name in a Jinja expression: not an
// attribute (x.name), not part of a longer identifier.
func nameRef(name string) *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[^A-Za-z0-9_.'"])` + name + `(?:[^A-Za-z0-9_'"]|$)`)
}

var toolsRef = sync.OnceValue(func() *regexp.Regexp { return nameRef("tools") })

// Parse compiles a chat template. It fails on a syntax error and when the
// template cannot render a plain one-user-message conversation.
func Parse(source string) (t *Template, err error) {
	if len(source) > MaxSourceBytes {
		return nil, fmt.Errorf("chat template is %d bytes, more than the %d allowed", len(source), MaxSourceBytes)
	}
	if strings.TrimSpace(source) == "" {
		return nil, errors.New("chat template is empty")
	}
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("parse chat template: template engine panicked: %v", r)
		}
	}()
	const id = "/chat_template"
	loader, err := loaders.NewMemoryLoader(map[string]string{id: lstripBlocks(source)})
	if err != nil {
		return nil, fmt.Errorf("parse chat template: %w", err)
	}
	// Hugging Face compiles chat templates with trim_blocks and
	// lstrip_blocks; the latter is applied by lstripBlocks.
	cfg := config.New()
	cfg.TrimBlocks = true
	tpl, err := exec.NewTemplate(id, cfg, loader, environment())
	if err != nil {
		return nil, fmt.Errorf("parse chat template: %s", cleanError(err))
	}
	t = &Template{
		source:        source,
		tpl:           tpl,
		supportsTools: references(source, toolsRef()),
		rendersCalls:  strings.Contains(source, "tool_calls"),
		family:        toolcall.DetectFamily(source),
		thinking:      detectThinking(source),
	}

	probe := Input{Messages: []engine.Message{{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock(probeUser)}}}, AddGenerationPrompt: true}
	if _, err := t.render(probe, modeRaw); err != nil {
		return nil, fmt.Errorf("chat template cannot render a one-message conversation: %w", err)
	}
	probe.System = probeSystem
	out, err := t.render(probe, modeRaw)
	t.supportsSystem = err == nil && strings.Contains(out, probeSystem)
	return t, nil
}

// references reports whether a {{ }} or {% %} block of the source uses the
// variable ref matches (outside string literals).
func references(source string, ref *regexp.Regexp) bool {
	for _, open := range []string{"{{", "{%"} {
		closer := map[string]string{"{{": "}}", "{%": "%}"}[open]
		rest := source
		for {
			i := strings.Index(rest, open)
			if i < 0 {
				break
			}
			rest = rest[i+2:]
			j := strings.Index(rest, closer)
			if j < 0 {
				j = len(rest)
			}
			if ref.MatchString(stripStrings(rest[:j])) {
				return true
			}
			rest = rest[j:]
		}
	}
	return false
}

// stripStrings blanks quoted string literals in a Jinja expression so a
// literal mentioning "tools" does not count.
func stripStrings(expr string) string {
	var b strings.Builder
	var quote byte
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		switch {
		case quote != 0 && c == '\\':
			i++
		case quote != 0 && c == quote:
			quote = 0
			b.WriteByte(' ')
		case quote != 0:
		case c == '"' || c == '\'':
			quote = c
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// SupportsTools reports whether the template references `tools`, i.e.
// renders the tool list itself. When it does not, Render falls back to
// prompt-based tool calling.
func (t *Template) SupportsTools() bool { return t.supportsTools }

// SupportsSystem reports whether the template accepts a system message.
func (t *Template) SupportsSystem() bool { return t.supportsSystem }

// Family is the tool-call dialect the template teaches (toolcall.DetectFamily);
// pass it to toolcall.Parse or toolcall.NewParser for the model's output.
func (t *Template) Family() toolcall.Family { return t.family }

// Source returns the template text.
func (t *Template) Source() string { return t.source }

// Render renders in into prompt text. When a template that renders tools
// fails on this input (Hermes-3's raises on a "null" in a type union,
// Llama-3.2's on several calls in one message), Render retries with
// prompt-based tool calling, as for a template without tools, so the turn
// still works; the output then asks for <tool_call> blocks, which Parse
// accepts in every family.
func (t *Template) Render(in Input) (string, error) {
	for _, tool := range in.Tools {
		if len(tool.Parameters) > 0 && !json.Valid(tool.Parameters) {
			return "", fmt.Errorf("render chat template: tool %q: parameters are not valid JSON", tool.Name)
		}
	}
	out, err := t.render(in, modeAdapt)
	if err != nil && t.supportsTools {
		if alt, altErr := t.render(in, modePromptTools); altErr == nil {
			return alt, nil
		}
	}
	return out, err
}

// Render modes: raw (Parse's probes: input as is), adapt (Render: fit the
// input to what the template supports), promptTools (adapt, and treat the
// template as one without tools).
const (
	modeRaw = iota
	modeAdapt
	modePromptTools
)

func (t *Template) render(in Input, mode int) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("render chat template: template engine panicked: %v", r)
		}
	}()
	adapt := mode != modeRaw
	promptStyle := mode == modePromptTools || (adapt && !t.supportsTools)
	promptTools := promptStyle && len(in.Tools) > 0
	system := in.System
	if promptTools {
		system = joinNonEmpty(system, toolcall.ToolsSystemPrompt(in.Tools), "\n\n")
	}
	family := t.family
	if promptStyle {
		family = toolcall.FamilyHermes // what ToolsSystemPrompt teaches
	}
	messages := mapMessages(in.Messages, promptStyle, promptStyle || (adapt && !t.rendersCalls), family)
	if system != "" {
		if !adapt || t.supportsSystem {
			messages = append([]*exec.Dict{newDict("role", "system", "content", system)}, messages...)
		} else {
			messages = prependToFirstUser(messages, system)
		}
	}
	list := make([]any, len(messages))
	for i, m := range messages {
		list[i] = m
	}

	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	var raised *TemplateError
	data := map[string]any{
		// raise_exception is per render so its message survives gonja's
		// error wrapping, which keeps only text.
		"raise_exception": func(va *exec.VarArgs) (*exec.Value, error) {
			msg := "raise_exception called"
			if len(va.Args) > 0 {
				msg = va.Args[0].String()
			}
			raised = &TemplateError{Message: msg}
			return nil, raised
		},
		"messages":              list,
		"add_generation_prompt": in.AddGenerationPrompt,
		"bos_token":             in.BOSToken,
		"eos_token":             in.EOSToken,
		"strftime_now": func(va *exec.VarArgs) (string, error) {
			if len(va.Args) != 1 || !va.Args[0].IsString() {
				return "", errors.New("strftime_now takes one format string")
			}
			return strftime(now, va.Args[0].String()), nil
		},
	}
	if len(in.Tools) > 0 && !promptTools {
		tools, err := toolList(in.Tools)
		if err != nil {
			return "", err
		}
		data["tools"] = tools
	}
	if in.EnableThinking != nil {
		data["enable_thinking"] = *in.EnableThinking
		data["thinking"] = *in.EnableThinking
	}

	var b strings.Builder
	w := &limitWriter{w: &b, n: MaxOutputBytes}
	if err := t.tpl.Execute(w, exec.NewContext(data)); err != nil {
		if raised != nil {
			return "", raised
		}
		if w.exceeded {
			return "", fmt.Errorf("render chat template: output exceeds %d bytes", MaxOutputBytes)
		}
		return "", fmt.Errorf("render chat template: %s", cleanError(err))
	}
	return b.String(), nil
}

// cleanError shortens gonja's errors, which quote the whole template source.
func cleanError(err error) string {
	s := err.Error()
	if len(s) > 800 {
		s = s[:400] + " … " + s[len(s)-400:]
	}
	return s
}

type limitWriter struct {
	w        io.Writer
	n        int
	exceeded bool
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if len(p) > l.n {
		l.exceeded = true
		return 0, errors.New("output limit exceeded")
	}
	l.n -= len(p)
	return l.w.Write(p)
}

func joinNonEmpty(a, b, sep string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + sep + b
}

// toolList builds HF's tool dicts: {type: "function", function: {name,
// description, parameters}}.
func toolList(specs []engine.ToolSpec) ([]any, error) {
	tools := make([]any, 0, len(specs))
	for _, s := range specs {
		var params any = newDict("type", "object", "properties", newDict())
		if len(s.Parameters) > 0 && string(s.Parameters) != "null" {
			p, err := decodeOrdered(s.Parameters)
			if err != nil {
				return nil, fmt.Errorf("tool %q: parameters are not valid JSON: %w", s.Name, err)
			}
			params = p
		}
		fn := newDict("name", s.Name, "description", s.Description, "parameters", params)
		tools = append(tools, newDict("type", "function", "function", fn))
	}
	return tools, nil
}

// mapMessages turns engine messages into HF message dicts. In promptStyle
// (the template has no tool support) calls become <tool_call> text and
// results <tool_response> text in user turns; callsAsText writes calls in
// family's form for templates that render tools but not tool_calls.
func mapMessages(msgs []engine.Message, promptStyle, callsAsText bool, family toolcall.Family) []*exec.Dict {
	out := make([]*exec.Dict, 0, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case engine.RoleUser:
			out = appendUser(out, contentText(m.Content), promptStyle)
		case engine.RoleAssistant:
			text := contentText(m.Content)
			calls := m.ToolCalls()
			if callsAsText {
				text = joinNonEmpty(text, toolcall.FormatCalls(family, calls), "\n")
				out = append(out, newDict("role", "assistant", "content", text))
				continue
			}
			d := newDict("role", "assistant", "content", text)
			if len(calls) > 0 {
				list := make([]any, len(calls))
				for j, c := range calls {
					list[j] = newDict("type", "function", "id", c.ID,
						"function", newDict("name", c.Name, "arguments", argumentsValue(c.Arguments)))
				}
				dictSet(d, "tool_calls", list)
			}
			out = append(out, d)
		case engine.RoleToolResult:
			text := contentText(m.Content)
			if promptStyle {
				out = appendUser(out, "<tool_response>\n"+text+"\n</tool_response>", true)
				continue
			}
			out = append(out, newDict("role", "tool", "content", text, "tool_call_id", m.ToolCallID, "name", m.ToolName))
		}
	}
	return out
}

// appendUser adds a user turn, merged into a preceding user turn when
// merge is set.
func appendUser(out []*exec.Dict, text string, merge bool) []*exec.Dict {
	if merge && len(out) > 0 {
		last := out[len(out)-1]
		if role, _ := dictGet(last, "role"); role == "user" {
			prev, _ := dictGet(last, "content")
			dictSet(last, "content", joinNonEmpty(prev, text, "\n\n"))
			return out
		}
	}
	return append(out, newDict("role", "user", "content", text))
}

func dictGet(d *exec.Dict, key string) (string, bool) {
	for _, p := range d.Pairs {
		if p.Key.String() == key {
			return p.Value.String(), true
		}
	}
	return "", false
}

// prependToFirstUser folds the system prompt into the first user message
// (or a new one at the front when there is none).
func prependToFirstUser(msgs []*exec.Dict, system string) []*exec.Dict {
	for _, m := range msgs {
		if role, _ := dictGet(m, "role"); role == "user" {
			content, _ := dictGet(m, "content")
			dictSet(m, "content", joinNonEmpty(system, content, "\n\n"))
			return msgs
		}
	}
	return append([]*exec.Dict{newDict("role", "user", "content", system)}, msgs...)
}

// contentText flattens content blocks: text as is, images as "[image]" on
// their own line, thinking and tool calls left out.
func contentText(blocks []engine.Block) string {
	var b strings.Builder
	prevImage := false
	for _, c := range blocks {
		switch c.Type {
		case engine.BlockText:
			if prevImage && c.Text != "" && !strings.HasPrefix(c.Text, "\n") {
				b.WriteByte('\n')
			}
			b.WriteString(c.Text)
			prevImage = false
		case engine.BlockImage:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
				b.WriteByte('\n')
			}
			b.WriteString("[image]")
			prevImage = true
		}
	}
	return b.String()
}

// argumentsValue is a call's arguments as a dict when they are a JSON
// object (what templates expect), else the raw text.
func argumentsValue(raw json.RawMessage) any {
	if len(raw) == 0 {
		return newDict()
	}
	v, err := decodeOrdered(raw)
	if err != nil {
		return string(raw)
	}
	return v
}

// limitedMacro registers its macro wrapped in a recursion-depth guard.
type limitedMacro struct {
	*controlStructures.MacroControlStructure
}

func (m *limitedMacro) Execute(r *exec.Renderer, tag *nodes.ControlStructureBlock) error {
	macro, err := exec.MacroNodeToFunc(m.Macro, r)
	if err != nil {
		return fmt.Errorf("macro %s: %w", m.Name, err)
	}
	depth := 0
	guarded := exec.Macro(func(params *exec.VarArgs) *exec.Value {
		if depth >= maxMacroDepth {
			return exec.AsValue(fmt.Errorf("macro %s: recursion deeper than %d", m.Name, maxMacroDepth))
		}
		depth++
		defer func() { depth-- }()
		return macro(params)
	})
	r.Environment.Context.Set(m.Name, guarded)
	return nil
}
