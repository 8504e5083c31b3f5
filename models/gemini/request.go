package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openclaw-edge/edge/engine"
)

// The request body of streamGenerateContent (the fields we send).
type generateRequest struct {
	SystemInstruction *content          `json:"systemInstruction,omitempty"`
	Contents          []content         `json:"contents"`
	Tools             []tool            `json:"tools,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

// part holds exactly one of text, inlineData, functionCall and
// functionResponse (thought and thoughtSignature qualify it).
type part struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
	InlineData       *blob             `json:"inlineData,omitempty"`
	FunctionCall     *functionCall     `json:"functionCall,omitempty"`
	FunctionResponse *functionResponse `json:"functionResponse,omitempty"`
}

type blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type functionResponse struct {
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

type tool struct {
	FunctionDeclarations []functionDeclaration `json:"functionDeclarations"`
}

type functionDeclaration struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

type generationConfig struct {
	MaxOutputTokens int             `json:"maxOutputTokens,omitempty"`
	ThinkingConfig  *thinkingConfig `json:"thinkingConfig,omitempty"`
}

type thinkingConfig struct {
	ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
}

// skipSignature is the placeholder Gemini documents for function calls
// whose thought signature is unknown (history from another model).
const skipSignature = "skip_thought_signature_validator"

// Thinking budgets in tokens for the levels, on models that take budgets.
var budgets = map[engine.ThinkingLevel]int{
	engine.ThinkingLow:    1024,
	engine.ThinkingMedium: 8192,
	engine.ThinkingHigh:   24576,
}

// request maps req to a generateContent request.
func (p *Provider) request(req *engine.ChatRequest) (*generateRequest, error) {
	r := &generateRequest{Contents: contents(req.Model, req.Messages)}
	if req.System != "" {
		r.SystemInstruction = &content{Parts: []part{{Text: req.System}}}
	}
	var decls []functionDeclaration
	for _, t := range req.Tools {
		params, err := toolSchema(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool %s: parameters: %w", t.Name, err)
		}
		decls = append(decls, functionDeclaration{Name: t.Name, Description: t.Description, Parameters: params})
	}
	if len(decls) > 0 {
		r.Tools = []tool{{FunctionDeclarations: decls}}
	}
	gc := &generationConfig{MaxOutputTokens: req.MaxTokens, ThinkingConfig: thinking(req.Model, req.Thinking)}
	if gc.MaxOutputTokens <= 0 {
		gc.MaxOutputTokens = p.cfg.MaxTokens
	}
	if gc.MaxOutputTokens > 0 || gc.ThinkingConfig != nil {
		r.GenerationConfig = gc
	}
	return r, nil
}

// thinking maps a thinking level to a thinkingConfig; see the package doc.
func thinking(model string, level engine.ThinkingLevel) *thinkingConfig {
	if level == "" {
		return nil
	}
	m := strings.ToLower(model)
	if strings.Contains(m, "gemini-3") {
		switch level {
		case engine.ThinkingOff:
			return &thinkingConfig{ThinkingLevel: "low"}
		case engine.ThinkingLow:
			return &thinkingConfig{ThinkingLevel: "low", IncludeThoughts: true}
		}
		return &thinkingConfig{ThinkingLevel: "high", IncludeThoughts: true}
	}
	if level == engine.ThinkingOff {
		if strings.Contains(m, "-pro") {
			return nil
		}
		zero := 0
		return &thinkingConfig{ThinkingBudget: &zero}
	}
	b, ok := budgets[level]
	if !ok {
		b = budgets[engine.ThinkingMedium]
	}
	return &thinkingConfig{ThinkingBudget: &b, IncludeThoughts: true}
}

// blamesThinking reports whether a 400's message is about the thinking
// config, so the call can be repeated without it.
func blamesThinking(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "thinking") || strings.Contains(m, "budget")
}

// contents maps the conversation to alternating user and model contents.
func contents(model string, msgs []engine.Message) []content {
	var out []content
	add := func(role string, parts ...part) {
		if len(parts) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Parts = append(out[n-1].Parts, parts...)
			return
		}
		out = append(out, content{Role: role, Parts: parts})
	}
	var toolImages []part // images of the current run of tool results
	flush := func() {
		add("user", toolImages...)
		toolImages = nil
	}
	names := map[string]string{} // call id → name, for results without one
	signatures := strings.Contains(strings.ToLower(model), "gemini-3")
	for _, m := range msgs {
		if m.Role != engine.RoleToolResult {
			flush()
		}
		switch m.Role {
		case engine.RoleUser:
			add("user", userParts(m.Content)...)
		case engine.RoleAssistant:
			for _, b := range m.Content {
				if b.Type == engine.BlockToolCall {
					names[b.ID] = b.Name
				}
			}
			add("model", modelParts(m, signatures)...)
		case engine.RoleToolResult:
			var text []string
			for _, b := range m.Content {
				switch b.Type {
				case engine.BlockText:
					text = append(text, b.Text)
				case engine.BlockImage:
					toolImages = append(toolImages, imagePart(b))
				}
			}
			result := strings.Join(text, "\n")
			if result == "" && len(toolImages) > 0 {
				result = "(see attached image)"
			}
			key := "content"
			if m.IsError {
				key = "error"
			}
			name := m.ToolName
			if name == "" {
				name = names[m.ToolCallID]
			}
			add("user", part{FunctionResponse: &functionResponse{Name: name, Response: map[string]any{key: result}}})
		}
	}
	flush()
	return out
}

func userParts(blocks []engine.Block) []part {
	var parts []part
	for _, b := range blocks {
		switch b.Type {
		case engine.BlockText:
			if b.Text != "" {
				parts = append(parts, part{Text: b.Text})
			}
		case engine.BlockImage:
			parts = append(parts, imagePart(b))
		}
	}
	return parts
}

func imagePart(b engine.Block) part {
	mime := b.MimeType
	if mime == "" {
		mime = "image/png"
	}
	return part{InlineData: &blob{MimeType: mime, Data: b.Data}}
}

// modelParts sends text and calls back, each thought signature on the
// part after its thinking block. Signatures are Gemini's only when the
// message came from this API; with needSig (gemini-3) the first call gets
// the placeholder when it has none.
func modelParts(m engine.Message, needSig bool) []part {
	ours := m.API == API
	var parts []part
	sig := ""
	firstCall := -1
	for _, b := range m.Content {
		switch b.Type {
		case engine.BlockThinking:
			if ours && b.ThinkingSignature != "" {
				sig = b.ThinkingSignature
			}
		case engine.BlockText:
			if b.Text != "" {
				parts = append(parts, part{Text: b.Text, ThoughtSignature: sig})
				sig = ""
			}
		case engine.BlockToolCall:
			if firstCall < 0 {
				firstCall = len(parts)
			}
			parts = append(parts, part{FunctionCall: &functionCall{Name: b.Name, Args: objectArgs(b.Arguments)}, ThoughtSignature: sig})
			sig = ""
		}
	}
	if needSig && firstCall >= 0 && parts[firstCall].ThoughtSignature == "" {
		parts[firstCall].ThoughtSignature = skipSignature
	}
	return parts
}

// objectArgs returns a call's arguments as the object Gemini wants;
// anything else (a broken call kept as text) becomes {}.
func objectArgs(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' && json.Compact(&b, t) == nil {
		return b.Bytes()
	}
	return json.RawMessage("{}")
}

// marshal encodes v without escaping <, > and & (tool results are full of
// them, and the escapes only cost bytes).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
