package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/providertest"
)

// conversation is a turn with everything the mapping must handle: a cache
// boundary, images, signed and unsigned thinking, parallel tool calls (one
// with an id from another provider, one with arguments that were not JSON),
// consecutive tool results with an image and an error, and tools.
func conversation() *engine.ChatRequest {
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	ls := engine.ToolCall{ID: "toolu_01ls", Name: "ls", Arguments: json.RawMessage(`{"path":"."}`)}
	shot := engine.ToolCall{ID: "call:shot.1", Name: "screenshot", Arguments: json.RawMessage(`{}`)}
	bad := engine.ToolCall{ID: "toolu_01bad", Name: "read", Arguments: json.RawMessage(`"{\"path\": nope"`)}
	return &engine.ChatRequest{
		Model:         "claude-test",
		System:        "You are a helpful assistant.\n\nToday is Monday.",
		CacheBoundary: len("You are a helpful assistant.\n\n"),
		Messages: []engine.Message{
			{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock("What is in this picture?"), {Type: engine.BlockImage, Data: png, MimeType: "image/png"}}},
			{Role: engine.RoleAssistant, Content: []engine.Block{
				{Type: engine.BlockThinking, Thinking: "Let me look at the files.", ThinkingSignature: "sig-1"},
				{Type: engine.BlockThinking, Thinking: "An unsigned thought from another provider."},
				engine.TextBlock("Looking."),
				ls.Block(), shot.Block(), bad.Block(),
			}, StopReason: engine.StopToolUse},
			engine.TextResult("a.txt\nb.png").Message(ls),
			{Role: engine.RoleToolResult, ToolCallID: shot.ID, ToolName: shot.Name, Content: []engine.Block{{Type: engine.BlockImage, Data: png, MimeType: "image/png"}}},
			engine.ErrorResult("invalid arguments: not JSON").Message(bad),
			{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock("A one-pixel image.")}},
			{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock("Thanks!"), engine.TextBlock("  ")}},
		},
		Tools: []engine.ToolSpec{
			{Name: "ls", Description: "List a directory.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "screenshot", Description: "Take a screenshot."},
		},
		Thinking: engine.ThinkingMedium,
	}
}

func TestSystemBlocks(t *testing.T) {
	tests := []struct {
		system   string
		boundary int
		want     string
	}{
		{"", 5, `null`},
		{"abc", 0, `[{"type":"text","text":"abc"}]`},
		{"abc", 3, `[{"type":"text","text":"abc","cache_control":{"type":"ephemeral"}}]`},
		{"abc", 99, `[{"type":"text","text":"abc","cache_control":{"type":"ephemeral"}}]`},
		{"ab|cd", 3, `[{"type":"text","text":"ab|","cache_control":{"type":"ephemeral"}},{"type":"text","text":"cd"}]`},
		{"é|x", 1, `[{"type":"text","text":"é|x"}]`},                                                              // inside é: moved back to 0
		{"aé", 2, `[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":"é"}]`}, // inside é: moved back
	}
	for _, tt := range tests {
		if got := providertest.JSONOf(systemBlocks(tt.system, tt.boundary)); got != tt.want {
			t.Errorf("systemBlocks(%q, %d) = %s, want %s", tt.system, tt.boundary, got, tt.want)
		}
	}
}

func TestThinkingMaxTokens(t *testing.T) {
	tests := []struct {
		level     engine.ThinkingLevel
		reqMax    int
		wantMax   int
		wantBudge int
	}{
		{engine.ThinkingOff, 0, 4096, 0},
		{"", 100, 100, 0},
		{engine.ThinkingLow, 0, 4096, 1024},
		{engine.ThinkingMedium, 0, 8192, 4096},
		{engine.ThinkingHigh, 0, 20480, 16384},
		{engine.ThinkingHigh, 32000, 32000, 16384},
	}
	for _, tt := range tests {
		req := userRequest("hi")
		req.Thinking, req.MaxTokens = tt.level, tt.reqMax
		body, err := New(Config{}).requestBody(req)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			MaxTokens int `json:"max_tokens"`
			Thinking  *struct {
				BudgetTokens int `json:"budget_tokens"`
			}
		}
		json.Unmarshal(body, &got)
		budget := 0
		if got.Thinking != nil {
			budget = got.Thinking.BudgetTokens
		}
		if got.MaxTokens != tt.wantMax || budget != tt.wantBudge {
			t.Errorf("%q/%d: max_tokens %d budget %d, want %d %d", tt.level, tt.reqMax, got.MaxTokens, budget, tt.wantMax, tt.wantBudge)
		}
	}
}

// TestDuplicateToolIDs: a local model numbers its calls call_1… again every
// turn; after a failover to Anthropic the request must still have unique
// tool_use ids, each tool_result naming its own call.
func TestDuplicateToolIDs(t *testing.T) {
	call := func(id, path string) engine.ToolCall {
		return engine.ToolCall{ID: id, Name: "read", Arguments: json.RawMessage(`{"path":"` + path + `"}`)}
	}
	a, b := call("call_1", "a"), call("call_1", "b")
	c, d := call("call.2", "c"), call("call_2", "d") // equal once sanitized
	e, f := call("", "e"), call("", "f")
	turn := func(calls ...engine.ToolCall) []engine.Message {
		asst := engine.Message{Role: engine.RoleAssistant, StopReason: engine.StopToolUse}
		var out []engine.Message
		for _, c := range calls {
			asst.Content = append(asst.Content, c.Block())
		}
		out = append(out, asst)
		for _, c := range calls {
			out = append(out, engine.TextResult("content of "+string(c.Arguments)).Message(c))
		}
		return append(out, engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock("ok")}}, engine.UserText("next"))
	}
	var msgs []engine.Message
	msgs = append(msgs, engine.UserText("go"))
	msgs = append(msgs, turn(a)...)
	msgs = append(msgs, turn(b, c)...)
	msgs = append(msgs, turn(d, e, f)...)
	body, err := New(Config{}).requestBody(&engine.ChatRequest{Model: "m", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	var req messagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{} // tool_use id → its input
	var pairs int
	for _, m := range req.Messages {
		for _, bl := range m.Content {
			switch bl.Type {
			case "tool_use":
				if _, dup := seen[bl.ID]; dup {
					t.Errorf("tool_use id %q sent twice", bl.ID)
				}
				seen[bl.ID] = string(bl.Input)
			case "tool_result":
				in, ok := seen[bl.ToolUseID]
				if !ok {
					t.Errorf("tool_result for unknown id %q", bl.ToolUseID)
					continue
				}
				if got := bl.Content[0].Text; got != "content of "+in {
					t.Errorf("tool_result %q = %q, want the result of its own call %s", bl.ToolUseID, got, in)
				}
				pairs++
			}
		}
	}
	if len(seen) != 6 || pairs != 6 {
		t.Errorf("%d calls, %d results; want 6 and 6", len(seen), pairs)
	}
}
