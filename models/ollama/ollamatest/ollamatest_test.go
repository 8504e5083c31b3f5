package ollamatest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/ollama/ollamatest"
	"github.com/openclaw-edge/edge/models/providertest"
)

func TestValidation(t *testing.T) {
	const call = `{"role":"assistant","content":"","tool_calls":[{"function":{"name":"ls","arguments":{}}}]}`
	tests := []struct {
		name, body string
		status     int
		want       string
	}{
		{"empty body", ``, 400, "missing request body"},
		{"not json", `{`, 400, "unexpected end of JSON input"},
		{"no model", `{"messages":[]}`, 400, "model is required"},
		{"unknown model", `{"model":"qwen9"}`, 404, "model 'qwen9' not found"},
		{"think on a plain model", `{"model":"llama3.2","think":true}`, 400, `"llama3.2" does not support thinking`},
		{"think level on qwen3", `{"model":"qwen3:1.7b","think":"high"}`, 400, `think value "high" is not supported for this model`},
		{"bad think value", `{"model":"qwen3:1.7b","think":"max"}`, 400, `invalid think value: "max"`},
		{"tools on a model without", `{"model":"gemma2:2b","tools":[{"type":"function","function":{"name":"ls"}}]}`, 400, "does not support tools"},
		{"chat with an embedding model", `{"model":"nomic-embed-text"}`, 400, "does not support chat"},
		{"image not base64", `{"model":"qwen2.5vl:7b","messages":[{"role":"user","content":"x","images":["%%"]}]}`, 400, "illegal base64"},
		{"image to a text model", `{"model":"llama3.2","messages":[{"role":"user","content":"x","images":["aGk="]}]}`, 500, "missing data required for image input"},
		{"arguments not an object", `{"model":"qwen3:1.7b","messages":[{"role":"assistant","tool_calls":[{"function":{"name":"ls","arguments":"{}"}}]}]}`, 400, "Value looks like object"},
		{"unknown role", `{"model":"qwen3:1.7b","messages":[{"role":"toolResult","content":"x"}]}`, 400, `unknown role "toolresult"`},
		{"late system", `{"model":"qwen3:1.7b","messages":[{"role":"user","content":"x"},{"role":"system","content":"y"}]}`, 400, "only comes first"},
		{"orphan tool message", `{"model":"qwen3:1.7b","messages":[{"role":"user","content":"x"},{"role":"tool","tool_name":"ls","content":"y"}]}`, 400, `tool message for "ls" answers no call`},
		{"unanswered call", `{"model":"qwen3:1.7b","messages":[{"role":"user","content":"x"},` + call + `,{"role":"user","content":"y"}]}`, 400, "(ls unanswered)"},
		{"ends with a call", `{"model":"qwen3:1.7b","messages":[{"role":"user","content":"x"},` + call + `]}`, 400, "ends with unanswered tool calls"},
		{"tool name mismatch", `{"model":"qwen3:1.7b","messages":[{"role":"user","content":"x"},` + call + `,{"role":"tool","tool_name":"read","content":"y"}]}`, 400, `"read" answers no call`},
	}
	srv := ollamatest.NewServer()
	defer srv.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := providertest.Do(t, "POST", srv.URL+"/api/chat", tt.body)
			var e struct{ Error string }
			if status != tt.status || json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Error, tt.want) {
				t.Errorf("got %d %s, want %d with %q", status, body, tt.status, tt.want)
			}
		})
	}
	if n := len(srv.Requests()); n != len(tests) {
		t.Errorf("recorded %d requests, want %d", n, len(tests))
	}
}

func TestNonStreamed(t *testing.T) {
	srv := ollamatest.NewServer(ollamatest.Reply{Text: "pushed", Thinking: "hm", ToolCalls: []engine.ToolCall{{Name: "ls", Arguments: json.RawMessage(`{"a":1}`)}}, Usage: engine.Usage{Input: 3, Output: 1}})
	defer srv.Close()
	status, body := providertest.Do(t, "POST", srv.URL+"/api/chat", `{"model":"qwen3:1.7b","stream":false,"messages":[{"role":"user","content":"hi"}]}`)
	var got api.ChatResponse
	if err := json.Unmarshal([]byte(body), &got); err != nil || status != 200 {
		t.Fatalf("%d %s: %v", status, body, err)
	}
	m := got.Message
	if m.Content != "pushed" || m.Thinking != "hm" || len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != "call_1" ||
		m.ToolCalls[0].Function.Arguments.String() != `{"a":1}` || !got.Done || got.DoneReason != "stop" || got.PromptEvalCount != 3 {
		t.Errorf("got %s", body)
	}

	// Streamed by default: NDJSON lines, the last one done.
	status, body = providertest.Do(t, "POST", srv.URL+"/api/chat", `{"model":"qwen3:1.7b","messages":[{"role":"user","content":"hello there"}]}`)
	lines := strings.Split(strings.TrimSpace(body), "\n")
	if status != 200 || len(lines) != 6 || !strings.Contains(lines[0], `"content":"echo"`) || !strings.Contains(lines[5], `"done":true,"done_reason":"stop"`) {
		t.Errorf("stream: %d\n%s", status, body)
	}
}

func TestOtherEndpoints(t *testing.T) {
	srv := ollamatest.NewServer()
	defer srv.Close()
	srv.AddModel(ollamatest.Model{Name: "mine", Capabilities: []string{"completion"}, Family: "llama", ContextLength: 2048})
	tests := []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"GET", "/", "", 200, "Ollama is running"},
		{"GET", "/api/version", "", 200, `{"version":"0.17.4"}`},
		{"GET", "/api/tags", "", 200, `"name":"mine:latest"`},
		{"POST", "/api/show", `{"model":"mine"}`, 200, `"llama.context_length":2048`},
		{"POST", "/api/show", `{"model":"nope"}`, 404, `{"error":"model 'nope' not found"}`},
		{"POST", "/api/embed", `{"model":"nomic-embed-text","input":"x"}`, 200, `"embeddings":[[`},
		{"POST", "/api/embed", `{"model":"nomic-embed-text","input":""}`, 200, `"embeddings":[]`},
		{"POST", "/api/embed", `{"model":"nomic-embed-text","input":[1]}`, 400, "invalid input type"},
		{"POST", "/api/embed", `{"model":"nope","input":"x"}`, 404, "model 'nope' not found"},
		{"GET", "/api/chat", "", 404, "404 page not found"},
	}
	for _, tt := range tests {
		status, body := providertest.Do(t, tt.method, srv.URL+tt.path, tt.body)
		if status != tt.status || !strings.Contains(body, tt.want) {
			t.Errorf("%s %s: %d %s, want %d with %s", tt.method, tt.path, status, body, tt.status, tt.want)
		}
	}
	var norm float64
	for _, x := range ollamatest.Embedding("hello") {
		norm += float64(x) * float64(x)
	}
	if norm < 0.999 || norm > 1.001 {
		t.Errorf("embedding norm² = %v", norm)
	}
}
