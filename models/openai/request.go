package openai

import (
	"encoding/json"
	"strings"

	"github.com/openclaw-edge/edge/engine"
)

// The request body of POST /chat/completions (the fields we send).
type chatRequest struct {
	Model               string         `json:"model"`
	Messages            []chatMessage  `json:"messages"`
	Tools               []chatTool     `json:"tools,omitempty"`
	MaxTokens           int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	ReasoningEffort     string         `json:"reasoning_effort,omitempty"`
	Stream              bool           `json:"stream"`
	StreamOptions       *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatMessage is one message. Content is a string, an array of parts, or
// null (an assistant message that only calls tools).
type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []chatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// emptySchema is sent for a tool without parameters: the API wants an object
// schema.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// requestBody maps req to the JSON body of a streaming chat completion.
func (p *Provider) requestBody(req *engine.ChatRequest) ([]byte, error) {
	r := chatRequest{
		Model:         req.Model,
		Messages:      mapMessages(req.System, req.Messages),
		Stream:        true,
		StreamOptions: &streamOptions{IncludeUsage: true},
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 || string(params) == "null" {
			params = emptySchema
		}
		r.Tools = append(r.Tools, chatTool{Type: "function", Function: toolFunction{
			Name: t.Name, Description: t.Description, Parameters: params,
		}})
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = p.cfg.MaxTokens
	}
	if maxTokens > 0 {
		if p.newTokenName {
			r.MaxCompletionTokens = maxTokens
		} else {
			r.MaxTokens = maxTokens
		}
	}
	if req.Thinking != "" && req.Thinking != engine.ThinkingOff {
		r.ReasoningEffort = string(req.Thinking)
	}
	return json.Marshal(r)
}

// mapMessages turns the system prompt and the conversation into chat
// messages.
func mapMessages(system string, msgs []engine.Message) []chatMessage {
	out := make([]chatMessage, 0, len(msgs)+1)
	if system != "" {
		out = append(out, chatMessage{Role: "system", Content: jsonString(system)})
	}
	var toolImages []engine.Block // images from the current run of tool results
	flushImages := func() {
		if len(toolImages) == 0 {
			return
		}
		parts := []contentPart{{Type: "text", Text: "Attached image(s) from tool result:"}}
		for _, b := range toolImages {
			parts = append(parts, imagePart(b))
		}
		out = append(out, chatMessage{Role: "user", Content: mustJSON(parts)})
		toolImages = nil
	}
	for _, m := range msgs {
		if m.Role != engine.RoleToolResult {
			flushImages()
		}
		switch m.Role {
		case engine.RoleUser:
			if c, ok := userContent(m.Content); ok {
				out = append(out, chatMessage{Role: "user", Content: c})
			}
		case engine.RoleAssistant:
			if am, ok := assistantMessage(m); ok {
				out = append(out, am)
			}
		case engine.RoleToolResult:
			var text []string
			for _, b := range m.Content {
				switch b.Type {
				case engine.BlockText:
					text = append(text, b.Text)
				case engine.BlockImage:
					toolImages = append(toolImages, b)
				}
			}
			content := strings.Join(text, "\n")
			if content == "" && len(toolImages) > 0 {
				content = "(see attached image)"
			}
			out = append(out, chatMessage{
				Role:       "tool",
				ToolCallID: m.ToolCallID,
				Content:    jsonString(content),
			})
		}
	}
	flushImages()
	return out
}

// userContent is a plain string for a single text block (what every server
// understands) and an array of parts otherwise. Empty messages are dropped.
func userContent(blocks []engine.Block) (json.RawMessage, bool) {
	var parts []contentPart
	for _, b := range blocks {
		switch b.Type {
		case engine.BlockText:
			if b.Text != "" {
				parts = append(parts, contentPart{Type: "text", Text: b.Text})
			}
		case engine.BlockImage:
			parts = append(parts, imagePart(b))
		}
	}
	switch {
	case len(parts) == 0:
		return nil, false
	case len(parts) == 1 && parts[0].Type == "text":
		return jsonString(parts[0].Text), true
	}
	return mustJSON(parts), true
}

func imagePart(b engine.Block) contentPart {
	mime := b.MimeType
	if mime == "" {
		mime = "image/png"
	}
	return contentPart{Type: "image_url", ImageURL: &imageURL{URL: "data:" + mime + ";base64," + b.Data}}
}

// assistantMessage sends text and tool calls back; thinking has no field in
// this API and is dropped. A message left with nothing is dropped.
func assistantMessage(m engine.Message) (chatMessage, bool) {
	var text strings.Builder
	var calls []chatToolCall
	for _, b := range m.Content {
		switch b.Type {
		case engine.BlockText:
			text.WriteString(b.Text)
		case engine.BlockToolCall:
			calls = append(calls, chatToolCall{ID: b.ID, Type: "function", Function: chatFunction{
				Name: b.Name, Arguments: argumentsText(b.Arguments),
			}})
		}
	}
	if text.Len() == 0 && len(calls) == 0 {
		return chatMessage{}, false
	}
	cm := chatMessage{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: calls}
	if text.Len() > 0 {
		cm.Content = jsonString(text.String())
	}
	return cm, true
}

// argumentsText is the arguments string the API wants. Arguments that were
// not valid JSON were kept as a JSON string of the model's raw text (see
// toolCall); they go back as that raw text.
func argumentsText(args json.RawMessage) string {
	if len(args) == 0 || string(args) == "null" {
		return "{}"
	}
	if args[0] == '"' {
		var s string
		if json.Unmarshal(args, &s) == nil {
			return s
		}
	}
	return string(args)
}

func jsonString(s string) json.RawMessage { return mustJSON(s) }

// mustJSON marshals values that cannot fail (strings and plain structs).
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("openai: marshal " + err.Error())
	}
	return b
}
