package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/ollama/ollamatest"
	"github.com/openclaw-edge/edge/models/providertest"
)

func userRequest(model, text string) *engine.ChatRequest {
	return &engine.ChatRequest{Model: model, Messages: []engine.Message{engine.UserText(text)}}
}

func newProvider(t testing.TB, cfg Config) *Provider {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// harness is the provider for the conformance suite, with the cases only
// Ollama's API has.
func harness() providertest.Harness[ollamatest.Reply] {
	return providertest.Harness[ollamatest.Reply]{
		Model:      "qwen3:1.7b",
		ProviderID: "lan",
		KeyHeader:  "Authorization",
		KeyValue:   "Bearer %s",
		Serve: func(_ string, replies ...ollamatest.Reply) (string, providertest.FakeServer) {
			srv := ollamatest.NewServer(replies...)
			return srv.URL, srv
		},
		New: func(t testing.TB, cfg providertest.Config) providertest.Streamer {
			return newProvider(t, Config{ProviderID: cfg.ProviderID, BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Headers: cfg.Headers, HTTPClient: cfg.HTTPClient})
		},
		CallIDs:      "call_%d",
		KeepsCallIDs: true,
		Layouts: []providertest.Layout[ollamatest.Reply]{
			{
				Name:  "thinking dropped by a model that cannot think",
				Model: "llama3.2",
				Reply: ollamatest.Reply{Thinking: "never seen", Text: "Hi!"},
				Text:  "Hi!",
				Stop:  engine.StopEnd,
			},
			{
				Name:  "argument order kept",
				Reply: ollamatest.Reply{ToolCalls: []engine.ToolCall{{ID: "c1", Name: "x", Arguments: json.RawMessage(`{"z":1,"a":[{"y":2}]}`)}}},
				Calls: []engine.ToolCall{{ID: "c1", Name: "x", Arguments: json.RawMessage(`{"z":1,"a":[{"y":2}]}`)}},
				Stop:  engine.StopToolUse,
			},
		},
		Errors: []providertest.ErrorCase[ollamatest.Reply]{
			{Name: "model not pulled", Model: "qwen9:70b", Kind: engine.ErrNoModel, Status: 404, Msg: "run `ollama pull qwen9:70b`"},
			{Name: "not found, try pulling (scheduler)", Reply: ollamatest.Reply{Status: 404, Error: `model "qwen3:1.7b" not found, try pulling it first`}, Kind: engine.ErrNoModel, Status: 404, Msg: "ollama pull qwen3:1.7b"},
			{Name: "401", Reply: ollamatest.Reply{Status: 401, Error: "unauthorized"}, Kind: engine.ErrAuth, Status: 401, Msg: "unauthorized"},
			{Name: "403", Reply: ollamatest.Reply{Status: 403, Error: "forbidden"}, Kind: engine.ErrAuth, Status: 403, Msg: "forbidden"},
			{Name: "429", Reply: ollamatest.Reply{Status: 429, Error: "too many requests"}, Kind: engine.ErrRateLimit, Status: 429, Msg: "too many requests"},
			{Name: "500 out of memory", Reply: ollamatest.Reply{Status: 500, Error: "model requires more system memory (5.6 GiB) than is available (3.1 GiB)"}, Kind: engine.ErrUnreachable, Status: 500, Msg: "more system memory"},
			{Name: "503 busy", Reply: ollamatest.Reply{Status: 503, Error: "server busy, please try again.  maximum pending requests exceeded"}, Kind: engine.ErrUnreachable, Status: 503, Msg: "server busy, please try again. maximum"},
			{Name: "400 context length", Reply: ollamatest.Reply{Status: 400, Error: "the input length exceeds the context length"}, Kind: engine.ErrContextOverflow, Status: 400, Msg: "exceeds the context length"},
			{Name: "500 embed context", Reply: ollamatest.Reply{Status: 500, Error: "input exceeds maximum context length and cannot be truncated further"}, Kind: engine.ErrContextOverflow, Status: 500},
			{Name: "tools not supported", Model: "gemma2:2b", Tools: true, Kind: engine.ErrBadRequest, Status: 400, Msg: "does not support tools"},
			{Name: "images to a text model", Model: "llama3.2", Image: true, Kind: engine.ErrUnreachable, Status: 500, Msg: "required for image input"},
			{Name: "mid-stream error", Reply: ollamatest.Reply{Text: "some text first", StreamError: true, Error: "llama runner process has terminated: signal: killed"}, Kind: engine.ErrUnreachable, Msg: "runner process has terminated"},
			{Name: "mid-stream context overflow", Reply: ollamatest.Reply{Text: "some text first", StreamError: true, Error: "the input length exceeds the context length"}, Kind: engine.ErrContextOverflow},
			{Name: "long message trimmed", Reply: ollamatest.Reply{Status: 400, Error: strings.Repeat("x", 1000)}, Kind: engine.ErrBadRequest, Status: 400, Msg: strings.Repeat("x", 299) + "…"},
			{Name: "not an Ollama server", Raw: ndjson(404, "404 page not found"), Kind: engine.ErrUnreachable, Status: 404, Msg: "no Ollama API at http://127.0.0.1:1"},
			{Name: "plain text 502 from a proxy", Raw: ndjson(502, "<html>Bad Gateway</html>"), Kind: engine.ErrUnreachable, Status: 502, Msg: "Bad Gateway"},
			{Name: "malformed line", Raw: ndjson(0, `{"message":{"content":5}}`+"\n"), Kind: engine.ErrUnreachable, Msg: "malformed stream chunk"},
			{Name: "empty body", Raw: ndjson(0, ""), Kind: engine.ErrUnreachable, Msg: "stream ended early"},
		},
		ToolLoops: []providertest.ToolLoop[ollamatest.Reply]{{
			Name: "calls",
			Reply: ollamatest.Reply{ToolCalls: []engine.ToolCall{
				{Name: "ls", Arguments: json.RawMessage(`{"path":"."}`)},
				{Name: "read", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
			}},
		}},
		Conversation: conversation,
		Echo:         "echo: Thanks!\nBye.",
		Golden: []providertest.Golden{
			{Name: "conversation", Body: func() ([]byte, error) {
				keep := 10 * time.Minute
				return requestBody(Config{KeepAlive: &keep, Options: map[string]any{"num_ctx": 8192}}, conversation())
			}},
			{Name: "minimal", Body: func() ([]byte, error) {
				return requestBody(Config{}, &engine.ChatRequest{Model: "qwen3:1.7b", Messages: []engine.Message{{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock("hi")}}}})
			}},
		},
	}
}

func TestConformance(t *testing.T) { providertest.Run(t, harness()) }

// requestBody is the /api/chat body a provider with cfg sends for req.
func requestBody(cfg Config, req *engine.ChatRequest) ([]byte, error) {
	p, err := New(cfg)
	if err != nil {
		return nil, err
	}
	creq, err := p.chatRequest(req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(creq)
}

// ndjson answers every request with status and body, as Ollama's server
// would.
func ndjson(status int, body string) *providertest.RawTransport {
	return &providertest.RawTransport{Status: status, ContentType: "application/x-ndjson", Body: body}
}

func rawProvider(t testing.TB, rt *providertest.RawTransport) *Provider {
	return newProvider(t, Config{BaseURL: "http://127.0.0.1:1", HTTPClient: &http.Client{Transport: *rt}})
}

func TestCallsWithoutIDs(t *testing.T) {
	srv := ollamatest.NewServer(ollamatest.Reply{NoIDs: true, ToolCalls: []engine.ToolCall{{Name: "a"}, {Name: "b"}}})
	defer srv.Close()
	var rec providertest.Recorder
	if err := newProvider(t, Config{BaseURL: srv.URL}).Stream(context.Background(), userRequest("qwen3:1.7b", "hi"), rec.Emit); err != nil {
		t.Fatal(err)
	}
	calls := rec.Calls()
	if len(calls) != 2 || !strings.HasPrefix(calls[0].ID, "call_") || calls[0].ID == calls[1].ID ||
		string(calls[0].Arguments) != "{}" {
		t.Fatalf("calls need distinct ids and {} arguments: %s", providertest.JSONOf(calls))
	}
}

// Lines written out by hand, as Ollama's server marshals them.
func TestStreamWireLines(t *testing.T) {
	body := `{"model":"qwen3:1.7b","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"","thinking":"hm"},"done":false}
{"model":"qwen3:1.7b","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"","tool_calls":[{"id":"call_x1","function":{"index":0,"name":"ls","arguments":{"path":"."}}}]},"done":false}
{"model":"qwen3:1.7b","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"index":1,"name":"now","arguments":{}}}]},"done":false}
{"model":"qwen3:1.7b","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":1,"prompt_eval_count":26,"prompt_eval_duration":1,"eval_count":12,"eval_duration":1}
`
	var rec providertest.Recorder
	if err := rawProvider(t, ndjson(0, body)).Stream(context.Background(), userRequest("qwen3:1.7b", "hi"), rec.Emit); err != nil {
		t.Fatal(err)
	}
	end := rec.End(t)
	calls := rec.Calls()
	if len(calls) != 2 || calls[0].ID != "call_x1" || string(calls[0].Arguments) != `{"path":"."}` || calls[1].Name != "now" || calls[1].ID == "" {
		t.Errorf("calls = %s", providertest.JSONOf(calls))
	}
	if end.StopReason != engine.StopToolUse || *end.Usage != (engine.Usage{Input: 26, Output: 12, TotalTokens: 38}) {
		t.Errorf("end = %+v %+v", end, *end.Usage)
	}
	if rec.Joined(engine.EventThinkingDelta) != "hm" {
		t.Errorf("thinking = %q", rec.Joined(engine.EventThinkingDelta))
	}
}

func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	return addr
}

func TestNotRunning(t *testing.T) {
	addr := closedPort(t)
	p := newProvider(t, Config{BaseURL: "http://" + addr + "/"})
	var rec providertest.Recorder
	err := p.Stream(context.Background(), userRequest("qwen3:1.7b", "hi"), rec.Emit)
	me := providertest.CheckError(t, err, engine.ErrUnreachable, &rec)
	want := "Ollama is not running at http://" + addr + " (start it with `ollama serve`)"
	if me.Message != want {
		t.Errorf("message = %q, want %q", me.Message, want)
	}
	_, err = p.Embed(context.Background(), "nomic-embed-text", []string{"x"})
	if engine.KindOf(err) != engine.ErrUnreachable || !strings.Contains(err.Error(), "ollama serve") {
		t.Errorf("Embed: %v", err)
	}
}

// A /think level on a model that cannot think: the call is repeated
// without think instead of failing.
func TestThinkingFallback(t *testing.T) {
	srv := ollamatest.NewServer()
	defer srv.Close()
	req := userRequest("llama3.2", "hi")
	req.Thinking = engine.ThinkingHigh
	var rec providertest.Recorder
	if err := newProvider(t, Config{BaseURL: srv.URL}).Stream(context.Background(), req, rec.Emit); err != nil {
		t.Fatal(err)
	}
	rec.End(t)
	reqs := srv.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[0]), `"think":true`) || strings.Contains(string(reqs[1]), `"think"`) {
		t.Errorf("requests:\n%s", reqs)
	}
}

func TestThinkValues(t *testing.T) {
	tests := []struct {
		model string
		level engine.ThinkingLevel
		want  string // the think field as sent, "" when absent
	}{
		{"qwen3:1.7b", "", ""},
		{"qwen3:1.7b", engine.ThinkingOff, "false"},
		{"qwen3:1.7b", engine.ThinkingLow, "true"},
		{"qwen3:1.7b", engine.ThinkingHigh, "true"},
		{"gpt-oss:20b", engine.ThinkingHigh, `"high"`},
		{"gpt-oss:20b", engine.ThinkingLow, `"low"`},
		{"gpt-oss:20b", engine.ThinkingOff, "false"},
	}
	srv := ollamatest.NewServer()
	defer srv.Close()
	p := newProvider(t, Config{BaseURL: srv.URL})
	for _, tt := range tests {
		req := userRequest(tt.model, "hi")
		req.Thinking = tt.level
		var rec providertest.Recorder
		if err := p.Stream(context.Background(), req, rec.Emit); err != nil {
			t.Errorf("%s %q: %v", tt.model, tt.level, err)
			continue
		}
		reqs := srv.Requests()
		var sent map[string]json.RawMessage
		json.Unmarshal(reqs[len(reqs)-1], &sent)
		if got := string(sent["think"]); got != tt.want {
			t.Errorf("%s %q: think = %s, want %s", tt.model, tt.level, got, tt.want)
		}
	}
}

func TestEmbed(t *testing.T) {
	srv := ollamatest.NewServer()
	defer srv.Close()
	keep := 30 * time.Minute
	p := newProvider(t, Config{BaseURL: srv.URL, KeepAlive: &keep})
	texts := []string{"the cat sat", "on the mat", "the cat sat"}
	got, err := p.Embed(context.Background(), "nomic-embed-text", texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range texts {
		if !reflect.DeepEqual(got[i], ollamatest.Embedding(s)) {
			t.Errorf("embedding %d = %v", i, got[i])
		}
	}
	reqs := srv.Requests()
	if want := `{"model":"nomic-embed-text","input":["the cat sat","on the mat","the cat sat"],"keep_alive":"30m0s","options":null}`; string(reqs[0]) != want {
		t.Errorf("request = %s\nwant %s", reqs[0], want)
	}

	if got, err := p.Embed(context.Background(), "nomic-embed-text", nil); err != nil || len(got) != 0 || len(srv.Requests()) != 1 {
		t.Errorf("no texts: %v %v, %d requests", got, err, len(srv.Requests()))
	}
	_, err = p.Embed(context.Background(), "mxbai-embed-large", []string{"x"})
	if me := (*engine.ModelError)(nil); !errors.As(err, &me) || me.Kind != engine.ErrNoModel || !strings.Contains(me.Message, "ollama pull mxbai-embed-large") {
		t.Errorf("unknown model: %v", err)
	}

	short := rawProvider(t, ndjson(0, `{"model":"m","embeddings":[[1,0]]}`))
	if _, err := short.Embed(context.Background(), "m", []string{"a", "b"}); engine.KindOf(err) != engine.ErrUnreachable || !strings.Contains(err.Error(), "1 embeddings for 2 texts") {
		t.Errorf("short answer: %v", err)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", "http://127.0.0.1:11434"},
		{"http://127.0.0.1:11434/", "http://127.0.0.1:11434"},
		{"http://box.lan:11434/v1", "http://box.lan:11434"},
		{"http://box.lan:11434/v1/", "http://box.lan:11434"},
		{"https://proxy.example/ollama/api", "https://proxy.example/ollama"},
	}
	for _, tt := range tests {
		p, err := New(Config{BaseURL: tt.in})
		if err != nil || p.BaseURL() != tt.want {
			t.Errorf("New(%q): %v %v, want %s", tt.in, p, err, tt.want)
		}
	}
	for _, bad := range []string{"127.0.0.1:11434", "ftp://x", "http://", "http://a b/", "://x"} {
		if _, err := New(Config{BaseURL: bad}); err == nil || !strings.Contains(err.Error(), "ollama base URL") {
			t.Errorf("New(%q) = %v, want an error", bad, err)
		}
	}
	p := newProvider(t, Config{})
	if p.ID() != "ollama" || p.API() != "ollama" {
		t.Errorf("defaults: %s %s", p.ID(), p.API())
	}
}

func TestKeepAliveOptionsHeaders(t *testing.T) {
	var got http.Header
	srv := ollamatest.NewServer()
	defer srv.Close()
	client := &http.Client{Transport: providertest.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = r.Header.Clone()
		return http.DefaultTransport.RoundTrip(r)
	})}
	tests := []struct {
		keep     *time.Duration
		opts     map[string]any
		max      int
		wantKeep string
		wantOpts string
	}{
		{nil, nil, 0, "", "null"},
		{ptr(10 * time.Minute), map[string]any{"num_ctx": 8192}, 0, `"10m0s"`, `{"num_ctx":8192}`},
		{ptr(time.Duration(0)), nil, 64, `"0s"`, `{"num_predict":64}`},
		{ptr(-time.Second), map[string]any{"num_predict": 10, "temperature": 0.2}, 99, `-1`, `{"num_predict":99,"temperature":0.2}`},
	}
	for i, tt := range tests {
		before := len(tt.opts)
		cfg := Config{BaseURL: srv.URL, KeepAlive: tt.keep, Options: tt.opts, HTTPClient: client, APIKey: "k1", Headers: map[string]string{"X-Box": "edge"}}
		req := userRequest("qwen3:1.7b", "hi")
		req.MaxTokens = tt.max
		var rec providertest.Recorder
		if err := newProvider(t, cfg).Stream(context.Background(), req, rec.Emit); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		var sent map[string]json.RawMessage
		json.Unmarshal(reqs[len(reqs)-1], &sent)
		if string(sent["keep_alive"]) != tt.wantKeep || string(sent["options"]) != tt.wantOpts || string(sent["stream"]) != "true" {
			t.Errorf("%d: keep_alive %s options %s stream %s", i, sent["keep_alive"], sent["options"], sent["stream"])
		}
		if len(tt.opts) != before {
			t.Errorf("%d: Config.Options was changed: %v", i, tt.opts)
		}
	}
	if got.Get("Authorization") != "Bearer k1" || got.Get("X-Box") != "edge" || got.Get("Accept") != "application/x-ndjson" {
		t.Errorf("headers = %v", got)
	}
}

func ptr[T any](v T) *T { return &v }
