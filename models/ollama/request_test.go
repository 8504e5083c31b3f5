package ollama

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/providertest"
)

// conversation is a turn with everything the mapping must handle: images,
// thinking, parallel tool calls (one with arguments that were not JSON), tool
// results with an image, an error and no tool name, and tools whose schemas
// use keywords Ollama does not bind.
func conversation() *engine.ChatRequest {
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	ls := engine.ToolCall{ID: "call_ls", Name: "ls", Arguments: json.RawMessage(`{"path":".","all":true}`)}
	shot := engine.ToolCall{ID: "toolu_01shot", Name: "screenshot", Arguments: json.RawMessage(`{}`)}
	bad := engine.ToolCall{ID: "call_bad", Name: "read", Arguments: json.RawMessage(`"{\"path\": nope"`)}
	noName := engine.ErrorResult("invalid arguments: not JSON").Message(bad)
	noName.ToolName = "" // an imported transcript
	return &engine.ChatRequest{
		Model:         "qwen2.5vl:7b",
		System:        "You are a helpful assistant.\n\nToday is Monday.",
		CacheBoundary: len("You are a helpful assistant.\n\n"),
		Messages: []engine.Message{
			{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock("What is in this picture?"), {Type: engine.BlockImage, Data: png, MimeType: "image/png"}}},
			{Role: engine.RoleAssistant, Content: []engine.Block{
				{Type: engine.BlockThinking, Thinking: "Let me look at the files."},
				engine.TextBlock("Looking."),
				ls.Block(), shot.Block(), bad.Block(),
			}, StopReason: engine.StopToolUse},
			engine.TextResult("a.txt\nb.png").Message(ls),
			{Role: engine.RoleToolResult, ToolCallID: shot.ID, ToolName: shot.Name, Content: []engine.Block{{Type: engine.BlockImage, Data: png, MimeType: "image/png"}}},
			noName,
			{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock("A one-pixel image.")}},
			{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock("Thanks!"), engine.TextBlock("Bye.")}},
		},
		Tools: []engine.ToolSpec{
			{Name: "ls", Description: "List a directory.", Parameters: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false,
				"properties":{"path":{"type":"string","description":"Directory.","pattern":"^[^\\u0000]+$","default":"."},"all":{"type":["boolean","null"]},
				"sort":{"type":"string","enum":["name","size"]},"depth":{"type":"integer","minimum":0}},"required":["path"]}`)},
			{Name: "screenshot", Description: "Take a screenshot."},
		},
		MaxTokens: 1000,
		Thinking:  engine.ThinkingOff,
	}
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		name string
		req  *engine.ChatRequest
		msg  string
	}{
		{"schema not JSON", &engine.ChatRequest{Model: "m", Messages: []engine.Message{engine.UserText("hi")},
			Tools: []engine.ToolSpec{{Name: "x", Parameters: json.RawMessage(`{not json`)}}}, "tool x: parameters"},
		{"property type not a string", &engine.ChatRequest{Model: "m", Messages: []engine.Message{engine.UserText("hi")},
			Tools: []engine.ToolSpec{{Name: "y", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":5}}}`)}}}, "tool y: parameters"},
		{"image not base64", &engine.ChatRequest{Model: "m", Messages: []engine.Message{{Role: engine.RoleUser,
			Content: []engine.Block{{Type: engine.BlockImage, Data: "%%%"}}}}}, "message 0, block 0: image is not valid base64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec providertest.Recorder
			err := newProvider(t, Config{BaseURL: "http://127.0.0.1:1"}).Stream(context.Background(), tt.req, rec.Emit)
			me := providertest.CheckError(t, err, engine.ErrBadRequest, &rec)
			if !strings.Contains(me.Message, tt.msg) {
				t.Errorf("message %q does not contain %q", me.Message, tt.msg)
			}
		})
	}
}
