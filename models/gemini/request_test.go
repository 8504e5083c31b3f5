package gemini

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/gemini/geminitest"
	"github.com/openclaw-edge/edge/models/providertest"
)

// conversation is a turn with everything the mapping must handle: images,
// signed thinking, parallel tool calls (one with arguments that were not
// JSON), tool results with an image, an error and no tool name, a user
// message right after the results, and tools whose schemas use keywords
// Gemini refuses.
func conversation() *engine.ChatRequest {
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	ls := engine.ToolCall{ID: "call_r1_1", Name: "ls", Arguments: json.RawMessage(`{"path":"."}`)}
	shot := engine.ToolCall{ID: "call_r1_2", Name: "screenshot", Arguments: json.RawMessage(`{}`)}
	bad := engine.ToolCall{ID: "call_r1_3", Name: "read", Arguments: json.RawMessage(`"{\"path\": nope"`)}
	noName := engine.ErrorResult("invalid arguments: not JSON").Message(bad)
	noName.ToolName = "" // an imported transcript
	return &engine.ChatRequest{
		Model:         "gemini-2.5-flash",
		System:        "You are a helpful assistant.\n\nToday is Monday.",
		CacheBoundary: len("You are a helpful assistant.\n\n"),
		Messages: []engine.Message{
			{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock("What is in this picture?"), {Type: engine.BlockImage, Data: png, MimeType: "image/png"}}},
			{Role: engine.RoleAssistant, API: API, Content: []engine.Block{
				{Type: engine.BlockThinking, Thinking: "Let me look at the files.", ThinkingSignature: "c2lnLTE="},
				engine.TextBlock("Looking <here> & there."),
				ls.Block(), shot.Block(), bad.Block(),
			}, StopReason: engine.StopToolUse},
			engine.TextResult("a.txt\nb.png").Message(ls),
			{Role: engine.RoleToolResult, ToolCallID: shot.ID, ToolName: shot.Name, Content: []engine.Block{{Type: engine.BlockImage, Data: png, MimeType: "image/png"}}},
			noName,
			{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock("Also: hurry.")}},
			{Role: engine.RoleAssistant, API: API, Content: []engine.Block{engine.TextBlock("A one-pixel image.")}},
			{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock("Thanks!")}},
		},
		Tools: []engine.ToolSpec{
			{Name: "ls", Description: "List a directory.", Parameters: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false,
				"properties":{"path":{"type":"string","description":"Directory.","pattern":"^[^\\u0000]+$","default":".","examples":["."]},
				"depth":{"type":["integer","null"],"minimum":0,"maximum":10,"exclusiveMaximum":11},
				"sort":{"enum":["name","size",""]},"when":{"type":"string","format":"date-time"},"glob":{"type":"string","format":"regex"},
				"mode":{"type":"integer","enum":[1,2,4]},"tags":{"type":"array"},"opts":{"$ref":"#/$defs/Opts"}},
				"required":["path","nope"],"$defs":{"Opts":{"type":"object","description":"Options.","properties":{"hidden":{"const":"yes"},"any":{}}}}}`)},
			{Name: "screenshot", Description: "Take a screenshot.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
		},
		MaxTokens: 1000,
		Thinking:  engine.ThinkingHigh,
	}
}

func TestToolSchema(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"absent", ``, `null`},
		{"no properties", `{"type":"object","properties":{},"additionalProperties":false}`, `null`},
		{"type unsaid", `{"properties":{"a":{"type":"string"}}}`, `{"properties":{"a":{"type":"string"}},"type":"object"}`},
		{"nullable union", `{"type":"object","properties":{"a":{"type":["null","number"]}}}`, `{"properties":{"a":{"nullable":true,"type":"number"}},"type":"object"}`},
		{"anyOf with null collapses", `{"type":"object","properties":{"a":{"anyOf":[{"type":"string","maxLength":9},{"type":"null"}],"description":"A."}}}`,
			`{"properties":{"a":{"description":"A.","maxLength":9,"nullable":true,"type":"string"}},"type":"object"}`},
		{"oneOf becomes anyOf", `{"type":"object","properties":{"a":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`,
			`{"properties":{"a":{"anyOf":[{"type":"string"},{"type":"integer"}]}},"type":"object"}`},
		{"allOf of one merges", `{"type":"object","properties":{"a":{"allOf":[{"type":"boolean"}],"description":"B."}}}`,
			`{"properties":{"a":{"description":"B.","type":"boolean"}},"type":"object"}`},
		{"ref into definitions", `{"type":"object","properties":{"a":{"$ref":"#/definitions/X"}},"definitions":{"X":{"type":"integer","format":"int64"}}}`,
			`{"properties":{"a":{"format":"int64","type":"integer"}},"type":"object"}`},
		{"recursive ref is bounded", `{"type":"object","properties":{"n":{"$ref":"#"}}}`, ``},
		{"unknown ref", `{"type":"object","properties":{"a":{"$ref":"http://x/y"}}}`, `{"properties":{"a":{"type":"object"}},"type":"object"}`},
		{"numbers kept exactly", `{"type":"object","properties":{"a":{"type":"number","minimum":0.1,"maximum":1e3}}}`,
			`{"properties":{"a":{"maximum":1e3,"minimum":0.1,"type":"number"}},"type":"object"}`},
		{"nested free-form object", `{"type":"object","properties":{"a":{"type":"object","additionalProperties":true}}}`,
			`{"properties":{"a":{"type":"object"}},"type":"object"}`},
		{"mixed enum to description", `{"type":"object","properties":{"a":{"enum":["x",1,null]}}}`,
			`{"properties":{"a":{"description":"Allowed values: x, 1.","nullable":true,"type":"string"}},"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := toolSchema(json.RawMessage(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			got := string(mustMarshal(t, s))
			if tt.want != "" && got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if s == nil {
				return
			}
			// Whatever comes out, the validating server takes.
			srv := geminitest.NewServer()
			defer srv.Close()
			req := userRequest("gemini-2.5-flash", "hi")
			req.Tools = []engine.ToolSpec{{Name: "t", Parameters: json.RawMessage(tt.in)}}
			var rec providertest.Recorder
			if err := New(Config{BaseURL: srv.URL}).Stream(context.Background(), req, rec.Emit); err != nil {
				t.Errorf("refused: %v\n%s", err, got)
			}
		})
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBadToolSchema(t *testing.T) {
	for _, schema := range []string{`{not json`, `[1]`, `{"type":"string"}`} {
		req := userRequest("gemini-2.5-flash", "hi")
		req.Tools = []engine.ToolSpec{{Name: "x", Parameters: json.RawMessage(schema)}}
		var rec providertest.Recorder
		err := New(Config{BaseURL: "http://127.0.0.1:1/v1beta"}).Stream(context.Background(), req, rec.Emit)
		me := providertest.CheckError(t, err, engine.ErrBadRequest, &rec)
		if !strings.Contains(me.Message, "tool x: parameters") {
			t.Errorf("%s: %s", schema, me.Message)
		}
	}
}
