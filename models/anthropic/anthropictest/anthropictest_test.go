package anthropictest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/anthropic/anthropictest"
	"github.com/openclaw-edge/edge/models/providertest"
)

func post(t *testing.T, url, body string, version bool) (int, string) {
	t.Helper()
	if version {
		return providertest.Do(t, "POST", url+"/v1/messages", body, "anthropic-version", "2023-06-01")
	}
	return providertest.Do(t, "POST", url+"/v1/messages", body)
}

const (
	hi  = `{"role":"user","content":"hi"}`
	use = `{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ls","input":{}}]}`
	res = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}`
)

func TestValidation(t *testing.T) {
	cc := `"cache_control":{"type":"ephemeral"}`
	tests := []struct {
		name, body, want string
	}{
		{"not json", `{`, "error parsing the body"},
		{"no model", `{"max_tokens":5,"messages":[` + hi + `]}`, "model: Field required"},
		{"no max_tokens", `{"model":"m","messages":[` + hi + `]}`, "max_tokens: Field required"},
		{"no messages", `{"model":"m","max_tokens":5}`, "messages: Field required"},
		{"empty messages", `{"model":"m","max_tokens":5,"messages":[]}`, "at least one message"},
		{"system role", `{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"x"}]}`, "'user' or 'assistant'"},
		{"blank text", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":" "}]}]}`, "non-whitespace text"},
		{"empty content", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[]}]}`, "non-empty content"},
		{"bad image", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/bmp","data":"x"}}]}]}`, "media_type"},
		{"tool_use unanswered", `{"model":"m","max_tokens":5,"messages":[` + hi + `,` + use + `,` + hi + `]}`, "without `tool_result` blocks immediately after: t1"},
		{"tool_use last", `{"model":"m","max_tokens":5,"messages":[` + hi + `,` + use + `]}`, "without `tool_result`"},
		{"orphan tool_result", `{"model":"m","max_tokens":5,"messages":[` + hi + `,{"role":"assistant","content":"ok"},` + res + `]}`, "unexpected `tool_use_id`"},
		{"bad tool id", `{"model":"m","max_tokens":5,"messages":[` + hi + `,{"role":"assistant","content":[{"type":"tool_use","id":"a.b","name":"ls","input":{}}]}]}`, "tool_use.id: String should match"},
		{"tool_use input not an object", `{"model":"m","max_tokens":5,"messages":[` + hi + `,{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ls","input":"{}"}]},` + res + `]}`, "valid dictionary"},
		{"unsigned thinking", `{"model":"m","max_tokens":5,"messages":[` + hi + `,{"role":"assistant","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"y"}]}]}`, "signature: Field required"},
		{"budget too small", `{"model":"m","max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":500},"messages":[` + hi + `]}`, "greater than or equal to 1024"},
		{"budget over max", `{"model":"m","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":2000},"messages":[` + hi + `]}`, "must be greater than `thinking.budget_tokens`"},
		{"thinking continuation without thinking", `{"model":"m","max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[` + hi + `,` + use + `,` + res + `]}`, "must start with a thinking block"},
		{"five cache marks", `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"a",` + cc + `},{"type":"text","text":"b",` + cc + `},{"type":"text","text":"c",` + cc + `},{"type":"text","text":"d",` + cc + `}],"messages":[{"role":"user","content":[{"type":"text","text":"x",` + cc + `}]}]}`, "maximum of 4 blocks with cache_control"},
		{"bad tool name", `{"model":"m","max_tokens":5,"messages":[` + hi + `],"tools":[{"name":"a b","input_schema":{}}]}`, "name: String should match"},
		{"tool without schema", `{"model":"m","max_tokens":5,"messages":[` + hi + `],"tools":[{"name":"ls"}]}`, "input_schema: Field required"},
	}
	srv := anthropictest.NewServer()
	defer srv.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(t, srv.URL, tt.body, true)
			if status != 400 || !strings.Contains(body, tt.want) || !strings.Contains(body, `"invalid_request_error"`) {
				t.Errorf("got %d %s, want 400 with %q", status, body, tt.want)
			}
		})
	}
	status, body := post(t, srv.URL, `{"model":"m","max_tokens":5,"messages":[`+hi+`]}`, false)
	if status != 400 || !strings.Contains(body, "anthropic-version") {
		t.Errorf("no version header: %d %s", status, body)
	}
	if n := len(srv.Requests()); n != len(tests)+1 {
		t.Errorf("recorded %d requests, want %d", n, len(tests)+1)
	}
}

func TestValidConversation(t *testing.T) {
	srv := anthropictest.NewServer()
	defer srv.Close()
	body := `{"model":"m","max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[` + hi +
		`,{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"s"},{"type":"tool_use","id":"t1","name":"ls","input":{}}]}` +
		`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok"}],"is_error":true},{"type":"text","text":"and then?"}]}]}`
	status, resp := post(t, srv.URL, body, true)
	if status != 200 || !strings.Contains(resp, `"text":"echo: and then?"`) {
		t.Errorf("got %d %s", status, resp)
	}
}

func TestNonStreamedAndPush(t *testing.T) {
	srv := anthropictest.NewServer()
	defer srv.Close()
	srv.Push(anthropictest.Reply{Thinking: "t", Text: "pushed", ToolCalls: []engine.ToolCall{{Name: "ls"}}, Usage: engine.Usage{Input: 3, Output: 1}})
	status, body := post(t, srv.URL, `{"model":"m","max_tokens":5,"messages":[`+hi+`]}`, true)
	var got struct {
		Content []struct {
			Type, Text, Thinking, Signature, ID string
			Input                               json.RawMessage
		}
		StopReason string `json:"stop_reason"`
		Usage      struct {
			InputTokens int `json:"input_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || status != 200 {
		t.Fatalf("%d %s: %v", status, body, err)
	}
	if len(got.Content) != 3 || got.Content[0].Signature == "" || got.Content[1].Text != "pushed" ||
		got.Content[2].ID != "toolu_01" || string(got.Content[2].Input) != "{}" || got.StopReason != "tool_use" || got.Usage.InputTokens != 3 {
		t.Errorf("got %s", body)
	}
}
