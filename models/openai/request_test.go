package openai

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/providertest"
)

// conversation is a turn with everything the mapping must handle: a cache
// boundary, images, thinking, parallel tool calls (one with arguments that
// were not JSON), tool results with an image and an error, and tools.
func conversation() *engine.ChatRequest {
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	ls := engine.ToolCall{ID: "call_ls", Name: "ls", Arguments: json.RawMessage(`{"path":"."}`)}
	shot := engine.ToolCall{ID: "toolu_01shot", Name: "screenshot", Arguments: json.RawMessage(`{}`)}
	bad := engine.ToolCall{ID: "call_bad", Name: "read", Arguments: json.RawMessage(`"{\"path\": nope"`)}
	return &engine.ChatRequest{
		Model:         "gpt-test",
		System:        "You are a helpful assistant.\n\nToday is Monday.",
		CacheBoundary: len("You are a helpful assistant.\n\n"),
		Messages: []engine.Message{
			{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock("What is in this picture?"), {Type: engine.BlockImage, Data: png, MimeType: "image/png"}}},
			{Role: engine.RoleAssistant, Content: []engine.Block{
				{Type: engine.BlockThinking, Thinking: "Let me look at the files.", ThinkingSignature: "sig-1"},
				engine.TextBlock("Looking."),
				ls.Block(), shot.Block(), bad.Block(),
			}, StopReason: engine.StopToolUse},
			engine.TextResult("a.txt\nb.png").Message(ls),
			{Role: engine.RoleToolResult, ToolCallID: shot.ID, ToolName: shot.Name, Content: []engine.Block{{Type: engine.BlockImage, Data: png, MimeType: "image/png"}}},
			engine.ErrorResult("invalid arguments: not JSON").Message(bad),
			{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock("A one-pixel image.")}},
			{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock("Thanks!")}},
		},
		Tools: []engine.ToolSpec{
			{Name: "ls", Description: "List a directory.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "screenshot", Description: "Take a screenshot."},
		},
		MaxTokens: 1000,
		Thinking:  engine.ThinkingHigh,
	}
}

func TestMaxTokensDefault(t *testing.T) {
	req := &engine.ChatRequest{Model: "m", Messages: []engine.Message{engine.UserText("hi")}}
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{BaseURL: "http://127.0.0.1/v1"}, `"max_tokens":0`},
		{Config{BaseURL: "http://127.0.0.1/v1", MaxTokens: 99}, `"max_tokens":99`},
		{Config{MaxTokens: 99}, `"max_completion_tokens":99`},
	}
	for _, tt := range tests {
		body, err := New(tt.cfg).requestBody(req)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		json.Unmarshal(body, &m)
		got := ""
		for _, k := range []string{"max_tokens", "max_completion_tokens"} {
			if v, ok := m[k]; ok {
				got = `"` + k + `":` + string(v)
			}
		}
		if got == "" {
			got = `"max_tokens":0`
		}
		if got != tt.want {
			t.Errorf("cfg %+v: %s, want %s", tt.cfg, got, tt.want)
		}
	}
}

func TestBadToolSchema(t *testing.T) {
	req := &engine.ChatRequest{Model: "m", Messages: []engine.Message{engine.UserText("hi")},
		Tools: []engine.ToolSpec{{Name: "x", Parameters: json.RawMessage(`{not json`)}}}
	var rec providertest.Recorder
	err := New(Config{BaseURL: "http://127.0.0.1:1/v1"}).Stream(context.Background(), req, rec.Emit)
	providertest.CheckError(t, err, engine.ErrBadRequest, &rec)
}
