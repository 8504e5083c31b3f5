package anthropic

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/openclaw-edge/edge/engine"
)

// The request body of POST /v1/messages (the fields we send).
type messagesRequest struct {
	Model     string      `json:"model"`
	MaxTokens int         `json:"max_tokens"`
	System    []block     `json:"system,omitempty"`
	Messages  []message   `json:"messages"`
	Tools     []tool      `json:"tools,omitempty"`
	Thinking  *thinkingOn `json:"thinking,omitempty"`
	Stream    bool        `json:"stream"`
}

type message struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

// block is any content block; only the fields of its Type are set.
type block struct {
	Type string `json:"type"`

	Text string `json:"text,omitempty"` // text

	Thinking  string `json:"thinking,omitempty"` // thinking
	Signature string `json:"signature,omitempty"`

	Source *imageSource `json:"source,omitempty"` // image

	ID    string          `json:"id,omitempty"` // tool_use
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`

	ToolUseID string  `json:"tool_use_id,omitempty"` // tool_result
	Content   []block `json:"content,omitempty"`
	IsError   bool    `json:"is_error,omitempty"`

	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type cacheControl struct {
	Type string `json:"type"`
}

var ephemeral = &cacheControl{Type: "ephemeral"}

type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type thinkingOn struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

// thinkingBudget is the budget_tokens of each thinking level.
var thinkingBudget = map[engine.ThinkingLevel]int{
	engine.ThinkingLow:    1024,
	engine.ThinkingMedium: 4096,
	engine.ThinkingHigh:   16384,
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// requestBody maps req to the JSON body of a streaming Messages call.
func (p *Provider) requestBody(req *engine.ChatRequest) ([]byte, error) {
	r := messagesRequest{
		Model:     req.Model,
		MaxTokens: req.MaxTokens,
		System:    systemBlocks(req.System, req.CacheBoundary),
		Messages:  mapMessages(req.Messages),
		Stream:    true,
	}
	if r.MaxTokens <= 0 {
		r.MaxTokens = p.cfg.MaxTokens
	}
	if req.CacheBoundary > 0 && len(r.Messages) > 0 {
		last := r.Messages[len(r.Messages)-1].Content
		if b := &last[len(last)-1]; b.Type != "thinking" {
			b.CacheControl = ephemeral
		}
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(schema) == 0 || string(schema) == "null" {
			schema = emptySchema
		}
		r.Tools = append(r.Tools, tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	if budget, ok := thinkingBudget[req.Thinking]; ok && !unsignedContinuation(r.Messages) {
		r.Thinking = &thinkingOn{Type: "enabled", BudgetTokens: budget}
		if r.MaxTokens <= budget {
			r.MaxTokens = budget + DefaultMaxTokens
		}
	}
	return json.Marshal(r)
}

// systemBlocks splits the system prompt at the cache boundary; the stable
// first part is marked cacheable.
func systemBlocks(system string, boundary int) []block {
	if system == "" {
		return nil
	}
	if boundary <= 0 {
		return []block{{Type: "text", Text: system}}
	}
	if boundary >= len(system) {
		return []block{{Type: "text", Text: system, CacheControl: ephemeral}}
	}
	for boundary > 0 && !utf8.RuneStart(system[boundary]) {
		boundary-- // never split a character
	}
	stable, volatile := system[:boundary], system[boundary:]
	if stable == "" {
		return []block{{Type: "text", Text: volatile}}
	}
	return []block{{Type: "text", Text: stable, CacheControl: ephemeral}, {Type: "text", Text: volatile}}
}

// mapMessages turns the conversation into Messages API messages, merging
// consecutive messages of one role.
//
// Tool-use ids must be unique in a request: local models number their calls
// call_1, call_2… again on every turn, and a session that fails over to
// Anthropic would be refused. The agent loop rewrites such ids when it
// records a message; this is the defence for histories recorded before
// (and for ids that only collide once sanitized): a repeated id gets a
// fresh one, and the results after it follow its call.
func mapMessages(msgs []engine.Message) []message {
	var (
		out  []message
		used = map[string]bool{} // tool_use ids sent so far
		// The ids sent for the calls of the last assistant message, by
		// original id, in call order: its results follow in that order,
		// even when one message repeats an id.
		pending map[string][]string
	)
	callID := func(id string) string {
		sent := toolID(id)
		for n := 2; used[sent]; n++ {
			sent = toolID(id) + "_" + strconv.Itoa(n)
		}
		used[sent] = true
		pending[id] = append(pending[id], sent)
		return sent
	}
	resultID := func(id string) string {
		if q := pending[id]; len(q) > 0 {
			pending[id] = q[1:]
			return q[0]
		}
		return toolID(id)
	}
	add := func(role string, blocks []block) {
		if len(blocks) == 0 {
			return // the API refuses empty content
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, message{Role: role, Content: blocks})
	}
	for _, m := range msgs {
		switch m.Role {
		case engine.RoleUser:
			add("user", contentBlocks(m.Content))
		case engine.RoleAssistant:
			pending = map[string][]string{}
			add("assistant", assistantBlocks(m.Content, callID))
		case engine.RoleToolResult:
			res := block{Type: "tool_result", ToolUseID: resultID(m.ToolCallID), Content: contentBlocks(m.Content), IsError: m.IsError}
			add("user", []block{res})
		}
	}
	return out
}

// contentBlocks maps user and tool-result content: text (empty text is
// refused by the API) and images.
func contentBlocks(in []engine.Block) []block {
	var out []block
	for _, b := range in {
		switch b.Type {
		case engine.BlockText:
			if strings.TrimSpace(b.Text) != "" { // the API refuses blank text
				out = append(out, block{Type: "text", Text: b.Text})
			}
		case engine.BlockImage:
			mime := b.MimeType
			if mime == "" {
				mime = "image/png"
			}
			out = append(out, block{Type: "image", Source: &imageSource{Type: "base64", MediaType: mime, Data: b.Data}})
		}
	}
	return out
}

// assistantBlocks sends text, tool calls and signed thinking back; callID
// gives each tool call the id it is sent with.
func assistantBlocks(in []engine.Block, callID func(string) string) []block {
	var out []block
	for _, b := range in {
		switch b.Type {
		case engine.BlockText:
			if strings.TrimSpace(b.Text) != "" { // the API refuses blank text
				out = append(out, block{Type: "text", Text: b.Text})
			}
		case engine.BlockThinking:
			if b.ThinkingSignature != "" && b.Thinking != "" {
				out = append(out, block{Type: "thinking", Thinking: b.Thinking, Signature: b.ThinkingSignature})
			}
		case engine.BlockToolCall:
			out = append(out, block{Type: "tool_use", ID: callID(b.ID), Name: b.Name, Input: inputObject(b.Arguments)})
		}
	}
	return out
}

// inputObject is the tool_use input, which must be an object. Arguments
// that were not one (a model's invalid JSON, kept as a string) go back as
// {}: the tool result already told the model what was wrong.
func inputObject(args json.RawMessage) json.RawMessage {
	a := bytes.TrimSpace(args)
	if len(a) > 0 && a[0] == '{' && json.Valid(a) {
		return a
	}
	return json.RawMessage("{}")
}

// toolID makes id match ^[a-zA-Z0-9_-]+$.
func toolID(id string) string {
	if id == "" {
		return "_"
	}
	b := []byte(id)
	changed := false
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
			changed = true
		}
	}
	if !changed {
		return id
	}
	return string(b)
}

// unsignedContinuation reports whether msgs continue a tool loop (they end
// with a user message holding tool results) whose assistant message does not
// start with a thinking block: the API refuses thinking for such a request.
func unsignedContinuation(msgs []message) bool {
	n := len(msgs)
	if n < 2 || msgs[n-1].Role != "user" || msgs[n-2].Role != "assistant" {
		return false
	}
	hasResult := false
	for _, b := range msgs[n-1].Content {
		if b.Type == "tool_result" {
			hasResult = true
			break
		}
	}
	return hasResult && msgs[n-2].Content[0].Type != "thinking"
}
