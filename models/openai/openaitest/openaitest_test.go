package openaitest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/openai/openaitest"
	"github.com/openclaw-edge/edge/models/providertest"
)

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	return providertest.Do(t, "POST", url+"/chat/completions", body, "Content-Type", "application/json")
}

func TestValidation(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"not json", `{`, "could not parse the JSON body"},
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`, "must provide a model"},
		{"no messages", `{"model":"m"}`, "Missing required parameter: 'messages'"},
		{"empty messages", `{"model":"m","messages":[]}`, "empty array"},
		{"unknown role", `{"model":"m","messages":[{"role":"toolResult","content":"x"}]}`, "Invalid value: 'toolResult'"},
		{"user without content", `{"model":"m","messages":[{"role":"user"}]}`, "messages[0].content"},
		{"bad part", `{"model":"m","messages":[{"role":"user","content":[{"type":"image","data":"x"}]}]}`, "Invalid value: 'image'"},
		{"bad data url", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:text/plain,x"}}]}]}`, "base64-encoded data URL"},
		{"orphan tool message", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c1","content":"x"}]}`, "must be a response to a preceeding message with 'tool_calls'"},
		{"arguments as object", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":{}}}]},{"role":"tool","tool_call_id":"c1","content":"x"}]}`, "expected a string, but got an object"},
		{"unanswered call", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"ls","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"x"},{"role":"user","content":"next"}]}`, "did not have response messages: c2"},
		{"empty assistant", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null}]}`, "must have content or tool_calls"},
		{"bad tool name", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"a b"}}]}`, "does not match pattern"},
		{"stream_options without stream", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`, "only allowed when 'stream' is enabled"},
		{"bad effort", `{"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"max"}`, "Invalid value: 'max'"},
	}
	srv := openaitest.NewServer()
	defer srv.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(t, srv.URL, tt.body)
			if status != 400 || !strings.Contains(body, tt.want) || !strings.Contains(body, `"invalid_request_error"`) {
				t.Errorf("got %d %s, want 400 with %q", status, body, tt.want)
			}
		})
	}
	if n := len(srv.Requests()); n != len(tests) {
		t.Errorf("recorded %d requests, want %d", n, len(tests))
	}
}

func TestNonStreamedAndPush(t *testing.T) {
	srv := openaitest.NewServer()
	defer srv.Close()
	srv.Push(openaitest.Reply{Text: "pushed", ToolCalls: []engine.ToolCall{{Name: "ls"}}, Usage: engine.Usage{Input: 3, Output: 1}})
	status, body := post(t, srv.URL, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	var got struct {
		Choices []struct {
			Message struct {
				Content   string
				ToolCalls []struct {
					ID       string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || status != 200 {
		t.Fatalf("%d %s: %v", status, body, err)
	}
	c := got.Choices[0]
	if c.Message.Content != "pushed" || c.FinishReason != "tool_calls" || c.Message.ToolCalls[0].ID != "call_1" ||
		c.Message.ToolCalls[0].Function.Arguments != "{}" || got.Usage.PromptTokens != 3 {
		t.Errorf("got %s", body)
	}

	_, body = post(t, srv.URL, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`)
	if !strings.Contains(body, `"content":"echo: a\nb"`) {
		t.Errorf("echo: %s", body)
	}
}

func TestModelsAndNotFound(t *testing.T) {
	srv := openaitest.NewServer()
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"id":"echo"`) {
		t.Errorf("models: %s", b)
	}
	resp, err = http.Get(srv.URL + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("status %d", resp.StatusCode)
	}
}
