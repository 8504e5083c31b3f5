package ollama

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/ollama/ollama/api"

	"github.com/openclaw-edge/edge/engine"
)

// chatRequest maps req to a streaming /api/chat request.
func (p *Provider) chatRequest(req *engine.ChatRequest) (*api.ChatRequest, error) {
	msgs, err := mapMessages(req.System, req.Messages)
	if err != nil {
		return nil, err
	}
	stream := true
	r := &api.ChatRequest{
		Model:    req.Model,
		Messages: msgs,
		Stream:   &stream,
		Think:    think(req.Model, req.Thinking),
	}
	if p.cfg.KeepAlive != nil {
		r.KeepAlive = &api.Duration{Duration: *p.cfg.KeepAlive}
	}
	if len(p.cfg.Options) > 0 || req.MaxTokens > 0 {
		r.Options = maps.Clone(p.cfg.Options)
		if r.Options == nil {
			r.Options = map[string]any{}
		}
		if req.MaxTokens > 0 {
			r.Options["num_predict"] = req.MaxTokens
		}
	}
	for _, t := range req.Tools {
		params, err := toolParameters(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool %s: parameters: %w", t.Name, err)
		}
		r.Tools = append(r.Tools, api.Tool{Type: "function", Function: api.ToolFunction{
			Name: t.Name, Description: t.Description, Parameters: params,
		}})
	}
	return r, nil
}

// think maps a thinking level to Ollama's think value; see the package doc.
func think(model string, level engine.ThinkingLevel) *api.ThinkValue {
	switch level {
	case "":
		return nil
	case engine.ThinkingOff:
		return &api.ThinkValue{Value: false}
	case engine.ThinkingLow, engine.ThinkingMedium, engine.ThinkingHigh:
		if strings.Contains(strings.ToLower(model), "gpt-oss") {
			return &api.ThinkValue{Value: string(level)}
		}
	}
	return &api.ThinkValue{Value: true}
}

// toolParameters decodes a JSON schema into the subset Ollama binds. An
// absent schema is an object without properties.
func toolParameters(raw json.RawMessage) (api.ToolFunctionParameters, error) {
	params := api.ToolFunctionParameters{Type: "object"}
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		params.Properties = api.NewToolPropertiesMap()
		return params, nil
	}
	if err := json.Unmarshal(raw, &params); err != nil {
		return params, err
	}
	if params.Type == "" {
		params.Type = "object"
	}
	if params.Properties == nil {
		params.Properties = api.NewToolPropertiesMap()
	}
	return params, nil
}

// mapMessages turns the system prompt and the conversation into Ollama
// messages. Messages left with nothing to say are dropped.
func mapMessages(system string, msgs []engine.Message) ([]api.Message, error) {
	out := make([]api.Message, 0, len(msgs)+1)
	if system != "" {
		out = append(out, api.Message{Role: "system", Content: system})
	}
	// Tool results from other providers' transcripts may lack a name:
	// Ollama's templates want one, so take it from the call.
	names := map[string]string{}
	for i, m := range msgs {
		switch m.Role {
		case engine.RoleUser:
			text, images, err := textAndImages(m.Content, i)
			if err != nil {
				return nil, err
			}
			if text != "" || len(images) > 0 {
				out = append(out, api.Message{Role: "user", Content: text, Images: images})
			}
		case engine.RoleAssistant:
			am := api.Message{Role: "assistant"}
			var text, thinking strings.Builder
			for _, b := range m.Content {
				switch b.Type {
				case engine.BlockText:
					text.WriteString(b.Text)
				case engine.BlockThinking:
					thinking.WriteString(b.Thinking)
				case engine.BlockToolCall:
					names[b.ID] = b.Name
					am.ToolCalls = append(am.ToolCalls, api.ToolCall{ID: b.ID, Function: api.ToolCallFunction{
						Index: len(am.ToolCalls), Name: b.Name, Arguments: arguments(b.Arguments),
					}})
				}
			}
			am.Content, am.Thinking = text.String(), thinking.String()
			if am.Content != "" || len(am.ToolCalls) > 0 {
				out = append(out, am)
			}
		case engine.RoleToolResult:
			text, images, err := textAndImages(m.Content, i)
			if err != nil {
				return nil, err
			}
			name := m.ToolName
			if name == "" {
				name = names[m.ToolCallID]
			}
			out = append(out, api.Message{Role: "tool", Content: text, Images: images, ToolName: name, ToolCallID: m.ToolCallID})
		}
	}
	return out, nil
}

// textAndImages joins the text blocks of a message and decodes its images
// (api.ImageData holds the raw bytes; the client encodes them again).
func textAndImages(blocks []engine.Block, msg int) (string, []api.ImageData, error) {
	var text []string
	var images []api.ImageData
	for j, b := range blocks {
		switch b.Type {
		case engine.BlockText:
			if b.Text != "" {
				text = append(text, b.Text)
			}
		case engine.BlockImage:
			data, err := base64.StdEncoding.DecodeString(b.Data)
			if err != nil {
				return "", nil, fmt.Errorf("message %d, block %d: image is not valid base64: %w", msg, j, err)
			}
			images = append(images, api.ImageData(data))
		}
	}
	return strings.Join(text, "\n"), images, nil
}

// arguments turns a call's arguments into Ollama's ordered object; anything
// that is not a JSON object becomes {}.
func arguments(raw json.RawMessage) api.ToolCallFunctionArguments {
	args := api.NewToolCallFunctionArguments()
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
		if err := json.Unmarshal(t, &args); err != nil {
			return api.NewToolCallFunctionArguments()
		}
	}
	return args
}
