package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/ollama/ollamatest"
)

// recorder collects the events of one Stream call.
type recorder struct{ events []engine.Event }

func (r *recorder) emit(e engine.Event) { r.events = append(r.events, e) }

func (r *recorder) joined(t engine.EventType) string {
	var b strings.Builder
	for _, e := range r.events {
		if e.Type == t {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

func (r *recorder) count(t engine.EventType) int {
	n := 0
	for _, e := range r.events {
		if e.Type == t {
			n++
		}
	}
	return n
}

func (r *recorder) calls() []engine.ToolCall {
	var out []engine.ToolCall
	for _, e := range r.events {
		if e.Type == engine.EventToolCall {
			out = append(out, *e.ToolCall)
		}
	}
	return out
}

// end checks the stream ended with exactly one message end and returns it.
func (r *recorder) end(t *testing.T) engine.Event {
	t.Helper()
	if n := r.count(engine.EventMessageEnd); n != 1 {
		t.Fatalf("%d message ends, want 1: %+v", n, r.events)
	}
	last := r.events[len(r.events)-1]
	if last.Type != engine.EventMessageEnd {
		t.Fatalf("last event is %s, want message_end", last.Type)
	}
	return last
}

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

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestStreamLayouts(t *testing.T) {
	weather := engine.ToolCall{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Zürich","days":[1,2,3]}`)}
	search := engine.ToolCall{ID: "call_b", Name: "search", Arguments: json.RawMessage(`{"q":"go ndjson"}`)}
	tests := []struct {
		name      string
		model     string
		reply     ollamatest.Reply
		text      string
		thinking  string
		textDelta int // expected number of text deltas; 0: don't check
		calls     []engine.ToolCall
		stop      engine.StopReason
		usage     *engine.Usage
	}{
		{
			name:      "text only",
			reply:     ollamatest.Reply{Text: "Hello, wörld! How are you?", Usage: engine.Usage{Input: 10, Output: 7}},
			text:      "Hello, wörld! How are you?",
			textDelta: 7, // 26 runes in lines of 4
			stop:      engine.StopEnd,
			usage:     &engine.Usage{Input: 10, Output: 7, TotalTokens: 17},
		},
		{
			name:  "one tool call",
			reply: ollamatest.Reply{ToolCalls: []engine.ToolCall{weather}},
			calls: []engine.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: weather.Arguments}},
			stop:  engine.StopToolUse,
		},
		{
			name:  "two tool calls after text",
			reply: ollamatest.Reply{Text: "Let me look.", ToolCalls: []engine.ToolCall{weather, search}},
			text:  "Let me look.",
			calls: []engine.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: weather.Arguments}, search},
			stop:  engine.StopToolUse,
		},
		{
			name:     "thinking then text",
			reply:    ollamatest.Reply{Thinking: "The user greets me.", Text: "Hi!"},
			thinking: "The user greets me.",
			text:     "Hi!",
			stop:     engine.StopEnd,
		},
		{
			name:  "thinking dropped by a model that cannot think",
			model: "llama3.2",
			reply: ollamatest.Reply{Thinking: "never seen", Text: "Hi!"},
			text:  "Hi!",
			stop:  engine.StopEnd,
		},
		{
			name:  "length",
			reply: ollamatest.Reply{Text: "cut", StopReason: engine.StopLength},
			text:  "cut",
			stop:  engine.StopLength,
		},
		{
			name:  "argument order kept",
			reply: ollamatest.Reply{ToolCalls: []engine.ToolCall{{ID: "c1", Name: "x", Arguments: json.RawMessage(`{"z":1,"a":[{"y":2}]}`)}}},
			calls: []engine.ToolCall{{ID: "c1", Name: "x", Arguments: json.RawMessage(`{"z":1,"a":[{"y":2}]}`)}},
			stop:  engine.StopToolUse,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := ollamatest.NewServer(tt.reply)
			defer srv.Close()
			model := tt.model
			if model == "" {
				model = "qwen3:1.7b"
			}
			var rec recorder
			if err := newProvider(t, Config{BaseURL: srv.URL}).Stream(context.Background(), userRequest(model, "hi"), rec.emit); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			end := rec.end(t)
			if got := rec.joined(engine.EventTextDelta); got != tt.text {
				t.Errorf("text = %q, want %q", got, tt.text)
			}
			if got := rec.joined(engine.EventThinkingDelta); got != tt.thinking {
				t.Errorf("thinking = %q, want %q", got, tt.thinking)
			}
			if tt.textDelta > 0 && rec.count(engine.EventTextDelta) != tt.textDelta {
				t.Errorf("%d text deltas, want %d", rec.count(engine.EventTextDelta), tt.textDelta)
			}
			if got := rec.calls(); !reflect.DeepEqual(got, tt.calls) {
				t.Errorf("calls = %s, want %s", jsonOf(got), jsonOf(tt.calls))
			}
			if end.StopReason != tt.stop {
				t.Errorf("stop = %s, want %s", end.StopReason, tt.stop)
			}
			if end.Usage == nil {
				t.Fatal("message end without usage")
			}
			if tt.usage != nil && *end.Usage != *tt.usage {
				t.Errorf("usage = %+v, want %+v", *end.Usage, *tt.usage)
			}
		})
	}
}

func TestCallsWithoutIDs(t *testing.T) {
	srv := ollamatest.NewServer(ollamatest.Reply{NoIDs: true, ToolCalls: []engine.ToolCall{{Name: "a"}, {Name: "b"}}})
	defer srv.Close()
	var rec recorder
	if err := newProvider(t, Config{BaseURL: srv.URL}).Stream(context.Background(), userRequest("qwen3:1.7b", "hi"), rec.emit); err != nil {
		t.Fatal(err)
	}
	calls := rec.calls()
	if len(calls) != 2 || !strings.HasPrefix(calls[0].ID, "call_") || calls[0].ID == calls[1].ID ||
		string(calls[0].Arguments) != "{}" {
		t.Fatalf("calls need distinct ids and {} arguments: %s", jsonOf(calls))
	}
}

// rawTransport answers every request with one fixed body.
type rawTransport struct {
	status int
	body   string
}

func (rt rawTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	st := rt.status
	if st == 0 {
		st = 200
	}
	return &http.Response{
		StatusCode: st,
		Status:     http.StatusText(st),
		Header:     http.Header{"Content-Type": {"application/x-ndjson"}},
		Body:       io.NopCloser(strings.NewReader(rt.body)),
		Request:    r,
	}, nil
}

func rawProvider(t testing.TB, rt rawTransport) *Provider {
	return newProvider(t, Config{BaseURL: "http://127.0.0.1:1", HTTPClient: &http.Client{Transport: rt}})
}

// Lines written out by hand, as Ollama's server marshals them.
func TestStreamWireLines(t *testing.T) {
	body := `{"model":"qwen3:1.7b","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"","thinking":"hm"},"done":false}
{"model":"qwen3:1.7b","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"","tool_calls":[{"id":"call_x1","function":{"index":0,"name":"ls","arguments":{"path":"."}}}]},"done":false}
{"model":"qwen3:1.7b","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"index":1,"name":"now","arguments":{}}}]},"done":false}
{"model":"qwen3:1.7b","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":1,"prompt_eval_count":26,"prompt_eval_duration":1,"eval_count":12,"eval_duration":1}
`
	var rec recorder
	if err := rawProvider(t, rawTransport{body: body}).Stream(context.Background(), userRequest("qwen3:1.7b", "hi"), rec.emit); err != nil {
		t.Fatal(err)
	}
	end := rec.end(t)
	calls := rec.calls()
	if len(calls) != 2 || calls[0].ID != "call_x1" || string(calls[0].Arguments) != `{"path":"."}` || calls[1].Name != "now" || calls[1].ID == "" {
		t.Errorf("calls = %s", jsonOf(calls))
	}
	if end.StopReason != engine.StopToolUse || *end.Usage != (engine.Usage{Input: 26, Output: 12, TotalTokens: 38}) {
		t.Errorf("end = %+v %+v", end, *end.Usage)
	}
	if rec.joined(engine.EventThinkingDelta) != "hm" {
		t.Errorf("thinking = %q", rec.joined(engine.EventThinkingDelta))
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name   string
		model  string
		tools  bool
		image  bool
		reply  *ollamatest.Reply
		raw    *rawTransport
		kind   engine.ErrorKind
		status int
		msg    string // substring of ModelError.Message
	}{
		{name: "model not pulled", model: "qwen9:70b", kind: engine.ErrNoModel, status: 404, msg: "run `ollama pull qwen9:70b`"},
		{name: "not found, try pulling (scheduler)", reply: &ollamatest.Reply{Status: 404, Error: `model "qwen3:1.7b" not found, try pulling it first`}, kind: engine.ErrNoModel, status: 404, msg: "ollama pull qwen3:1.7b"},
		{name: "401", reply: &ollamatest.Reply{Status: 401, Error: "unauthorized"}, kind: engine.ErrAuth, status: 401, msg: "unauthorized"},
		{name: "403", reply: &ollamatest.Reply{Status: 403, Error: "forbidden"}, kind: engine.ErrAuth, status: 403, msg: "forbidden"},
		{name: "429", reply: &ollamatest.Reply{Status: 429, Error: "too many requests"}, kind: engine.ErrRateLimit, status: 429, msg: "too many requests"},
		{name: "500 out of memory", reply: &ollamatest.Reply{Status: 500, Error: "model requires more system memory (5.6 GiB) than is available (3.1 GiB)"}, kind: engine.ErrUnreachable, status: 500, msg: "more system memory"},
		{name: "503 busy", reply: &ollamatest.Reply{Status: 503, Error: "server busy, please try again.  maximum pending requests exceeded"}, kind: engine.ErrUnreachable, status: 503, msg: "server busy, please try again. maximum"},
		{name: "400 context length", reply: &ollamatest.Reply{Status: 400, Error: "the input length exceeds the context length"}, kind: engine.ErrContextOverflow, status: 400, msg: "exceeds the context length"},
		{name: "500 embed context", reply: &ollamatest.Reply{Status: 500, Error: "input exceeds maximum context length and cannot be truncated further"}, kind: engine.ErrContextOverflow, status: 500},
		{name: "tools not supported", model: "gemma2:2b", tools: true, kind: engine.ErrBadRequest, status: 400, msg: "does not support tools"},
		{name: "images to a text model", model: "llama3.2", image: true, kind: engine.ErrUnreachable, status: 500, msg: "required for image input"},
		{name: "mid-stream error", reply: &ollamatest.Reply{Text: "some text first", StreamError: true, Error: "llama runner process has terminated: signal: killed"}, kind: engine.ErrUnreachable, msg: "runner process has terminated"},
		{name: "mid-stream context overflow", reply: &ollamatest.Reply{Text: "some text first", StreamError: true, Error: "the input length exceeds the context length"}, kind: engine.ErrContextOverflow},
		{name: "cut stream", reply: &ollamatest.Reply{Text: "a long text that will be cut", CutStream: true}, kind: engine.ErrUnreachable, msg: "stream ended early"},
		{name: "long message trimmed", reply: &ollamatest.Reply{Status: 400, Error: strings.Repeat("x", 1000)}, kind: engine.ErrBadRequest, status: 400, msg: strings.Repeat("x", 299) + "…"},
		{name: "not an Ollama server", raw: &rawTransport{status: 404, body: "404 page not found"}, kind: engine.ErrUnreachable, status: 404, msg: "no Ollama API at http://127.0.0.1:1"},
		{name: "plain text 502 from a proxy", raw: &rawTransport{status: 502, body: "<html>Bad Gateway</html>"}, kind: engine.ErrUnreachable, status: 502, msg: "Bad Gateway"},
		{name: "malformed line", raw: &rawTransport{body: `{"message":{"content":5}}` + "\n"}, kind: engine.ErrUnreachable, msg: "malformed stream chunk"},
		{name: "empty body", raw: &rawTransport{body: ""}, kind: engine.ErrUnreachable, msg: "stream ended early"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p *Provider
			if tt.raw != nil {
				p = rawProvider(t, *tt.raw)
			} else {
				var replies []ollamatest.Reply
				if tt.reply != nil {
					replies = append(replies, *tt.reply)
				}
				srv := ollamatest.NewServer(replies...)
				defer srv.Close()
				p = newProvider(t, Config{ProviderID: "lan", BaseURL: srv.URL})
			}
			model := tt.model
			if model == "" {
				model = "qwen3:1.7b"
			}
			req := userRequest(model, "hi")
			if tt.tools {
				req.Tools = []engine.ToolSpec{{Name: "ls"}}
			}
			if tt.image {
				req.Messages[0].Content = append(req.Messages[0].Content, engine.Block{Type: engine.BlockImage, Data: "aGk=", MimeType: "image/png"})
			}
			var rec recorder
			err := p.Stream(context.Background(), req, rec.emit)
			me := checkError(t, err, tt.kind, &rec)
			if me.Status != tt.status {
				t.Errorf("status = %d, want %d", me.Status, tt.status)
			}
			if !strings.Contains(me.Message, tt.msg) {
				t.Errorf("message %q does not contain %q", me.Message, tt.msg)
			}
			if len([]rune(me.Message)) > 300 {
				t.Errorf("message is %d runes", len([]rune(me.Message)))
			}
			if me.Model != model || tt.raw == nil && me.Provider != "lan" {
				t.Errorf("provider/model = %s/%s", me.Provider, me.Model)
			}
		})
	}
}

// checkError asserts err is a *engine.ModelError of kind and that no message
// end or tool call was emitted.
func checkError(t *testing.T, err error, kind engine.ErrorKind, rec *recorder) *engine.ModelError {
	t.Helper()
	var me *engine.ModelError
	if !errors.As(err, &me) {
		t.Fatalf("err = %v (%T), want *engine.ModelError", err, err)
	}
	if me.Kind != kind {
		t.Errorf("kind = %s, want %s (%v)", me.Kind, kind, me)
	}
	if engine.KindOf(err) != kind {
		t.Errorf("KindOf = %s", engine.KindOf(err))
	}
	if rec.count(engine.EventMessageEnd) != 0 || rec.count(engine.EventToolCall) != 0 {
		t.Errorf("events after a failure: %+v", rec.events)
	}
	return me
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
	var rec recorder
	err := p.Stream(context.Background(), userRequest("qwen3:1.7b", "hi"), rec.emit)
	me := checkError(t, err, engine.ErrUnreachable, &rec)
	want := "Ollama is not running at http://" + addr + " (start it with `ollama serve`)"
	if me.Message != want {
		t.Errorf("message = %q, want %q", me.Message, want)
	}
	_, err = p.Embed(context.Background(), "nomic-embed-text", []string{"x"})
	if engine.KindOf(err) != engine.ErrUnreachable || !strings.Contains(err.Error(), "ollama serve") {
		t.Errorf("Embed: %v", err)
	}
}

func TestResponseHeaderTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // accept and never answer
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	client := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 50 * time.Millisecond}}
	var rec recorder
	err = newProvider(t, Config{BaseURL: "http://" + l.Addr().String(), HTTPClient: client}).
		Stream(context.Background(), userRequest("qwen3:1.7b", "hi"), rec.emit)
	checkError(t, err, engine.ErrTimeout, &rec)
}

func TestAbortMidStream(t *testing.T) {
	srv := ollamatest.NewServer(ollamatest.Reply{Text: "this reply stalls half-way through", Stall: true, Chunk: 2})
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var rec recorder
	emit := func(e engine.Event) {
		rec.emit(e)
		if e.Type == engine.EventTextDelta {
			cancel() // like /stop while text streams
		}
	}
	err := newProvider(t, Config{BaseURL: srv.URL}).Stream(ctx, userRequest("qwen3:1.7b", "hi"), emit)
	checkError(t, err, engine.ErrAborted, &rec)
}

// A /think level on a model that cannot think: the call is repeated
// without think instead of failing.
func TestThinkingFallback(t *testing.T) {
	srv := ollamatest.NewServer()
	defer srv.Close()
	req := userRequest("llama3.2", "hi")
	req.Thinking = engine.ThinkingHigh
	var rec recorder
	if err := newProvider(t, Config{BaseURL: srv.URL}).Stream(context.Background(), req, rec.emit); err != nil {
		t.Fatal(err)
	}
	rec.end(t)
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
		var rec recorder
		if err := p.Stream(context.Background(), req, rec.emit); err != nil {
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

// A tool loop through the validating server: what we send back after a
// tool call must be accepted.
func TestToolLoopRoundTrip(t *testing.T) {
	srv := ollamatest.NewServer(ollamatest.Reply{ToolCalls: []engine.ToolCall{
		{Name: "ls", Arguments: json.RawMessage(`{"path":"."}`)},
		{Name: "read", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
	}})
	defer srv.Close()
	p := newProvider(t, Config{BaseURL: srv.URL})
	req := userRequest("qwen3:1.7b", "list files")
	req.Tools = []engine.ToolSpec{{Name: "ls", Description: "list"}, {Name: "read", Parameters: json.RawMessage(`{"type":"object"}`)}}
	var rec recorder
	if err := p.Stream(context.Background(), req, rec.emit); err != nil {
		t.Fatal(err)
	}
	calls := rec.calls()
	asst := engine.Message{Role: engine.RoleAssistant}
	for _, c := range calls {
		asst.Content = append(asst.Content, c.Block())
	}
	req.Messages = append(req.Messages, asst)
	for _, c := range calls {
		req.Messages = append(req.Messages, engine.TextResult("ok").Message(c))
	}
	rec = recorder{}
	if err := p.Stream(context.Background(), req, rec.emit); err != nil {
		t.Fatalf("second call refused: %v", err)
	}
	if rec.joined(engine.EventTextDelta) != "echo: list files" {
		t.Errorf("echo = %q", rec.joined(engine.EventTextDelta))
	}

	// Dropping a tool result is a mapping bug the server catches.
	req.Messages = req.Messages[:len(req.Messages)-1]
	req.Messages = append(req.Messages, engine.UserText("next"))
	rec = recorder{}
	err := p.Stream(context.Background(), req, rec.emit)
	checkError(t, err, engine.ErrBadRequest, &rec)
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

	short := rawProvider(t, rawTransport{body: `{"model":"m","embeddings":[[1,0]]}`})
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
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
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
		var rec recorder
		if err := newProvider(t, cfg).Stream(context.Background(), req, rec.emit); err != nil {
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

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
