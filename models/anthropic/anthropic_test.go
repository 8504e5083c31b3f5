package anthropic

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

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/anthropic/anthropictest"
	"github.com/openclaw-edge/edge/models/httpapi"
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

func userRequest(text string) *engine.ChatRequest {
	return &engine.ChatRequest{Model: "claude-test", Messages: []engine.Message{engine.UserText(text)}}
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestStreamLayouts(t *testing.T) {
	weather := engine.ToolCall{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Zürich","days":[1,2,3]}`)}
	search := engine.ToolCall{ID: "toolu_b", Name: "search", Arguments: json.RawMessage(`{"q":"go sse"}`)}
	tests := []struct {
		name      string
		reply     anthropictest.Reply
		text      string
		thinking  string
		textDelta int
		calls     []engine.ToolCall
		stop      engine.StopReason
		usage     *engine.Usage
	}{
		{
			name:      "text only",
			reply:     anthropictest.Reply{Text: "Hello, wörld! How are you?", Usage: engine.Usage{Input: 10, Output: 7}},
			text:      "Hello, wörld! How are you?",
			textDelta: 7,
			stop:      engine.StopEnd,
			usage:     &engine.Usage{Input: 10, Output: 7, TotalTokens: 17},
		},
		{
			name:  "tool call in one-rune fragments",
			reply: anthropictest.Reply{ToolCalls: []engine.ToolCall{weather}, Chunk: 1},
			calls: []engine.ToolCall{{ID: "toolu_01", Name: "get_weather", Arguments: weather.Arguments}},
			stop:  engine.StopToolUse,
		},
		{
			name:  "two parallel tool calls after text",
			reply: anthropictest.Reply{Text: "Let me look.", ToolCalls: []engine.ToolCall{weather, search}, Chunk: 3},
			text:  "Let me look.",
			calls: []engine.ToolCall{{ID: "toolu_01", Name: "get_weather", Arguments: weather.Arguments}, search},
			stop:  engine.StopToolUse,
		},
		{
			name:     "thinking then text",
			reply:    anthropictest.Reply{Thinking: "The user greets me.", Text: "Hi!"},
			thinking: "The user greets me.",
			text:     "Hi!",
			stop:     engine.StopEnd,
		},
		{
			name:  "usage with cache read and write",
			reply: anthropictest.Reply{Text: "ok", Usage: engine.Usage{Input: 12, CacheRead: 900, CacheWrite: 300, Output: 5}},
			text:  "ok",
			stop:  engine.StopEnd,
			usage: &engine.Usage{Input: 12, CacheRead: 900, CacheWrite: 300, Output: 5, TotalTokens: 1217},
		},
		{
			name:  "max tokens",
			reply: anthropictest.Reply{Text: "cut", StopReason: engine.StopLength},
			text:  "cut",
			stop:  engine.StopLength,
		},
		{
			name:  "refusal",
			reply: anthropictest.Reply{Text: "no", StopReason: engine.StopError},
			text:  "no",
			stop:  engine.StopError,
		},
		{
			name:  "invalid input becomes a JSON string",
			reply: anthropictest.Reply{ToolCalls: []engine.ToolCall{{ID: "t1", Name: "x", Arguments: json.RawMessage(`{"a":`)}}},
			calls: []engine.ToolCall{{ID: "t1", Name: "x", Arguments: json.RawMessage(`"{\"a\":"`)}},
			stop:  engine.StopToolUse,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := anthropictest.NewServer(tt.reply)
			defer srv.Close()
			var rec recorder
			if err := New(Config{BaseURL: srv.URL}).Stream(context.Background(), userRequest("hi"), rec.emit); err != nil {
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
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       io.NopCloser(strings.NewReader(rt.body)),
		Request:    r,
	}, nil
}

func rawProvider(rt rawTransport) *Provider {
	return New(Config{BaseURL: "http://127.0.0.1:1", HTTPClient: &http.Client{Transport: rt}})
}

// Layouts the test server does not produce, written out by hand.
func TestStreamQuirks(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		text  string
		calls string
		stop  engine.StopReason
		usage engine.Usage
	}{
		{
			name: "input given whole in content_block_start, usage updated in message_delta",
			body: `event: message_start
data: {"type":"message_start","message":{"usage":{"input_tokens":5,"cache_read_input_tokens":2,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_x","name":"ls","input":{"path":"/"}}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"input_tokens":6,"output_tokens":9}}

event: message_stop
data: {"type":"message_stop"}

`,
			calls: `[{"id":"toolu_x","name":"ls","arguments":{"path":"/"}}]`,
			stop:  engine.StopToolUse,
			usage: engine.Usage{Input: 6, CacheRead: 2, Output: 9, TotalTokens: 17},
		},
		{
			name: "no event lines, unknown events, block never stopped, no stop reason",
			body: "data: {\"type\":\"some_future_event\"}\n\n" +
				"data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"a\",\"name\":\"n\",\"input\":{}}}\n\n" +
				"data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"k\\\":\"}}\n\n" +
				"data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"1}\"}}\n\n" +
				"data: {\"type\":\"message_stop\"}\n\n",
			calls: `[{"id":"a","name":"n","arguments":{"k":1}}]`,
			stop:  engine.StopToolUse,
		},
		{
			name: "server tools are not ours to run",
			body: "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{}}}\n\n" +
				"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"found\"}}\n\n" +
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
			text:  "found",
			calls: `null`,
			stop:  engine.StopEnd,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			if err := rawProvider(rawTransport{body: tt.body}).Stream(context.Background(), userRequest("hi"), rec.emit); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			end := rec.end(t)
			if got := rec.joined(engine.EventTextDelta); got != tt.text {
				t.Errorf("text = %q, want %q", got, tt.text)
			}
			if got := jsonOf(rec.calls()); got != tt.calls {
				t.Errorf("calls = %s\nwant %s", got, tt.calls)
			}
			if end.StopReason != tt.stop {
				t.Errorf("stop = %s, want %s", end.StopReason, tt.stop)
			}
			if *end.Usage != tt.usage {
				t.Errorf("usage = %+v, want %+v", *end.Usage, tt.usage)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	const key = "sk-ant-secret-123"
	errBody := func(typ, msg string) string {
		return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"}}`
	}
	tests := []struct {
		name   string
		reply  anthropictest.Reply
		kind   engine.ErrorKind
		status int
		msg    string
	}{
		{"401", anthropictest.Reply{Status: 401, ErrorBody: errBody("authentication_error", "invalid x-api-key sk-ant-secret-123")}, engine.ErrAuth, 401, "invalid x-api-key [redacted]"},
		{"403", anthropictest.Reply{Status: 403}, engine.ErrAuth, 403, "Forbidden"},
		{"402", anthropictest.Reply{Status: 402}, engine.ErrBilling, 402, ""},
		{"400 credit balance", anthropictest.Reply{Status: 400, ErrorBody: errBody("invalid_request_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.")}, engine.ErrBilling, 400, "credit balance is too low"},
		{"429", anthropictest.Reply{Status: 429, ErrorBody: errBody("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")}, engine.ErrRateLimit, 429, "per-minute rate limit"},
		{"400 prompt too long", anthropictest.Reply{Status: 400, ErrorBody: errBody("invalid_request_error", "prompt is too long: 208323 tokens > 200000 maximum")}, engine.ErrContextOverflow, 400, "prompt is too long"},
		{"413 image", anthropictest.Reply{Status: 413, ErrorBody: errBody("request_too_large", "Image too large: exceeds 5 MB maximum")}, engine.ErrImageTooLarge, 413, "Image too large"},
		{"400 image exceeds", anthropictest.Reply{Status: 400, ErrorBody: errBody("invalid_request_error", "messages.0.content.1.image.source.base64: image exceeds 5 MB maximum: 7340032 bytes > 5242880 bytes")}, engine.ErrImageTooLarge, 400, "image exceeds"},
		{"413 request too large", anthropictest.Reply{Status: 413}, engine.ErrBadRequest, 413, "Request Entity Too Large"},
		{"404 model", anthropictest.Reply{Status: 404, ErrorBody: errBody("not_found_error", "model: claude-nope")}, engine.ErrBadRequest, 404, "model: claude-nope"},
		{"500", anthropictest.Reply{Status: 500}, engine.ErrUnreachable, 500, "Internal Server Error"},
		{"529 overloaded", anthropictest.Reply{Status: 529}, engine.ErrUnreachable, 529, "Overloaded"},
		{"html 502", anthropictest.Reply{Status: 502, ErrorBody: "<html>\n<body>Bad gateway</body></html>"}, engine.ErrUnreachable, 502, "<html> <body>Bad gateway"},
		{"long message trimmed", anthropictest.Reply{Status: 400, ErrorBody: errBody("invalid_request_error", strings.Repeat("é", 1000))}, engine.ErrBadRequest, 400, strings.Repeat("é", 299) + "…"},
		{"cut stream", anthropictest.Reply{Text: "a long text that will be cut", CutStream: true}, engine.ErrUnreachable, 0, "stream ended early"},
		{"mid-stream overloaded", anthropictest.Reply{Text: "some text first", StreamError: true}, engine.ErrUnreachable, 0, "Overloaded"},
		{"mid-stream rate limit", anthropictest.Reply{Text: "some text first", StreamError: true, ErrorBody: errBody("rate_limit_error", "slow down")}, engine.ErrRateLimit, 0, "slow down"},
		{"mid-stream prompt too long", anthropictest.Reply{Text: "some text first", StreamError: true, ErrorBody: errBody("invalid_request_error", "prompt is too long")}, engine.ErrContextOverflow, 0, ""},
		{"mid-stream auth", anthropictest.Reply{StreamError: true, ErrorBody: errBody("authentication_error", "key revoked")}, engine.ErrAuth, 0, "key revoked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := anthropictest.NewServer(tt.reply)
			defer srv.Close()
			p := New(Config{ProviderID: "anth", BaseURL: srv.URL, APIKey: key})
			var rec recorder
			err := p.Stream(context.Background(), userRequest("hi"), rec.emit)
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
			if strings.Contains(me.Error(), key) {
				t.Errorf("error leaks the key: %v", me)
			}
			if me.Provider != "anth" || me.Model != "claude-test" {
				t.Errorf("provider/model = %s/%s", me.Provider, me.Model)
			}
		})
	}
}

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
	if rec.count(engine.EventMessageEnd) != 0 {
		t.Errorf("message end before a failure: %+v", rec.events)
	}
	return me
}

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var rec recorder
	err = New(Config{BaseURL: "http://" + addr}).Stream(context.Background(), userRequest("hi"), rec.emit)
	checkError(t, err, engine.ErrUnreachable, &rec)
}

func TestResponseHeaderTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
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
	client := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 50e6}}
	var rec recorder
	err = New(Config{BaseURL: "http://" + l.Addr().String(), HTTPClient: client}).
		Stream(context.Background(), userRequest("hi"), rec.emit)
	checkError(t, err, engine.ErrTimeout, &rec)
}

func TestNetKind(t *testing.T) {
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		ctx  context.Context
		err  error
		want engine.ErrorKind
	}{
		{ctx, &net.DNSError{Err: "no such host", Name: "api.anthropic.com", IsNotFound: true}, engine.ErrUnreachable},
		{ctx, &net.OpError{Op: "dial", Err: errors.New("connection refused")}, engine.ErrUnreachable},
		{ctx, &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, engine.ErrUnreachable},
		{ctx, &net.OpError{Op: "dial", Err: timeoutErr{}}, engine.ErrTimeout},
		{cancelled, context.Canceled, engine.ErrAborted},
	}
	for _, tt := range tests {
		if got, _ := httpapi.NetKind(tt.ctx, tt.err); got != tt.want {
			t.Errorf("httpapi.NetKind(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestAbortMidStream(t *testing.T) {
	srv := anthropictest.NewServer(anthropictest.Reply{Text: "this reply stalls half-way through", Stall: true, Chunk: 2})
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var rec recorder
	emit := func(e engine.Event) {
		rec.emit(e)
		if e.Type == engine.EventTextDelta {
			cancel()
		}
	}
	err := New(Config{BaseURL: srv.URL}).Stream(ctx, userRequest("hi"), emit)
	checkError(t, err, engine.ErrAborted, &rec)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestHeaders(t *testing.T) {
	var got http.Header
	var path string
	srv := anthropictest.NewServer()
	defer srv.Close()
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got, path = r.Header.Clone(), r.URL.Path
		return http.DefaultTransport.RoundTrip(r)
	})}
	var rec recorder
	p := New(Config{BaseURL: srv.URL + "/v1/", APIKey: "k1", Headers: map[string]string{"anthropic-beta": "x"}, HTTPClient: client})
	if err := p.Stream(context.Background(), userRequest("hi"), rec.emit); err != nil {
		t.Fatal(err)
	}
	if got.Get("x-api-key") != "k1" || got.Get("anthropic-version") != "2023-06-01" || got.Get("anthropic-beta") != "x" || path != "/v1/messages" {
		t.Errorf("headers = %v, path %s", got, path)
	}
	if rec.joined(engine.EventTextDelta) != "echo: hi" {
		t.Errorf("echo = %q", rec.joined(engine.EventTextDelta))
	}
	p = New(Config{BaseURL: srv.URL, HTTPClient: client})
	if err := p.Stream(context.Background(), userRequest("hi"), rec.emit); err != nil {
		t.Fatal(err)
	}
	if _, ok := got["X-Api-Key"]; ok {
		t.Errorf("no key, but x-api-key sent: %v", got)
	}
}

func TestNewDefaults(t *testing.T) {
	p := New(Config{})
	if p.ID() != "anthropic" || p.API() != "anthropic-messages" || p.url != "https://api.anthropic.com/v1/messages" || p.cfg.MaxTokens != 4096 {
		t.Errorf("defaults: %s %s %s %d", p.ID(), p.API(), p.url, p.cfg.MaxTokens)
	}
}

// A tool loop through the validating server, with thinking on: the
// continuation must be accepted whether or not thinking was signed.
func TestToolLoopRoundTrip(t *testing.T) {
	for _, signed := range []bool{true, false} {
		t.Run(map[bool]string{true: "signed thinking", false: "unsigned thinking"}[signed], func(t *testing.T) {
			srv := anthropictest.NewServer(anthropictest.Reply{Thinking: "I should list.", ToolCalls: []engine.ToolCall{
				{Name: "ls", Arguments: json.RawMessage(`{"path":"."}`)},
				{Name: "read", Arguments: json.RawMessage(`{"path":`)},
			}})
			defer srv.Close()
			p := New(Config{BaseURL: srv.URL})
			req := userRequest("list files")
			req.Thinking = engine.ThinkingLow
			req.Tools = []engine.ToolSpec{{Name: "ls", Description: "list"}, {Name: "read", Parameters: json.RawMessage(`{"type":"object"}`)}}
			var rec recorder
			if err := p.Stream(context.Background(), req, rec.emit); err != nil {
				t.Fatal(err)
			}
			calls := rec.calls()
			think := engine.Block{Type: engine.BlockThinking, Thinking: rec.joined(engine.EventThinkingDelta)}
			if signed {
				think.ThinkingSignature = "sig-3"
			}
			asst := engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{think}}
			for _, c := range calls {
				asst.Content = append(asst.Content, c.Block())
			}
			req.Messages = append(req.Messages, asst)
			for _, c := range calls {
				req.Messages = append(req.Messages, engine.TextResult("ok").Message(c))
			}
			rec = recorder{}
			if err := p.Stream(context.Background(), req, rec.emit); err != nil {
				t.Fatalf("continuation refused: %v", err)
			}
			if rec.joined(engine.EventTextDelta) != "echo: list files" {
				t.Errorf("echo = %q", rec.joined(engine.EventTextDelta))
			}
			reqs := srv.Requests()
			var sent struct {
				Thinking json.RawMessage
			}
			json.Unmarshal(reqs[len(reqs)-1], &sent)
			if hasThinking := len(sent.Thinking) > 0; hasThinking != signed {
				t.Errorf("thinking sent = %s, want it only when signed", sent.Thinking)
			}

			// Dropping a tool result is a mapping bug the server catches.
			req.Messages = append(req.Messages[:len(req.Messages)-1], engine.UserText("next"))
			rec = recorder{}
			checkError(t, p.Stream(context.Background(), req, rec.emit), engine.ErrBadRequest, &rec)
		})
	}
}
