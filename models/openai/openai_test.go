package openai

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
	"github.com/openclaw-edge/edge/models/httpapi"
	"github.com/openclaw-edge/edge/models/openai/openaitest"
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
	return &engine.ChatRequest{Model: "gpt-test", Messages: []engine.Message{engine.UserText(text)}}
}

func TestStreamLayouts(t *testing.T) {
	weather := engine.ToolCall{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Zürich","days":[1,2,3]}`)}
	search := engine.ToolCall{ID: "call_b", Name: "search", Arguments: json.RawMessage(`{"q":"go sse"}`)}
	tests := []struct {
		name      string
		reply     openaitest.Reply
		text      string
		thinking  string
		textDelta int // expected number of text deltas; 0: don't check
		calls     []engine.ToolCall
		stop      engine.StopReason
		usage     *engine.Usage
	}{
		{
			name:      "text only",
			reply:     openaitest.Reply{Text: "Hello, wörld! How are you?", Usage: engine.Usage{Input: 10, Output: 7}},
			text:      "Hello, wörld! How are you?",
			textDelta: 7, // 26 runes in deltas of 4
			stop:      engine.StopEnd,
			usage:     &engine.Usage{Input: 10, Output: 7, TotalTokens: 17},
		},
		{
			name:  "tool call in one-rune fragments",
			reply: openaitest.Reply{ToolCalls: []engine.ToolCall{weather}, Chunk: 1},
			calls: []engine.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: weather.Arguments}},
			stop:  engine.StopToolUse,
		},
		{
			name:  "two parallel tool calls after text",
			reply: openaitest.Reply{Text: "Let me look.", ToolCalls: []engine.ToolCall{weather, search}, Chunk: 3},
			text:  "Let me look.",
			calls: []engine.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: weather.Arguments}, search},
			stop:  engine.StopToolUse,
		},
		{
			name:     "thinking then text",
			reply:    openaitest.Reply{Thinking: "The user greets me.", Text: "Hi!"},
			thinking: "The user greets me.",
			text:     "Hi!",
			stop:     engine.StopEnd,
		},
		{
			name:  "usage with cached prompt tokens",
			reply: openaitest.Reply{Text: "ok", Usage: engine.Usage{Input: 100, CacheRead: 900, Output: 5}},
			text:  "ok",
			stop:  engine.StopEnd,
			usage: &engine.Usage{Input: 100, CacheRead: 900, Output: 5, TotalTokens: 1005},
		},
		{
			name:  "length",
			reply: openaitest.Reply{Text: "cut", StopReason: engine.StopLength},
			text:  "cut",
			stop:  engine.StopLength,
		},
		{
			name:  "content filter",
			reply: openaitest.Reply{StopReason: engine.StopError},
			stop:  engine.StopError,
		},
		{
			name:  "invalid arguments become a JSON string",
			reply: openaitest.Reply{ToolCalls: []engine.ToolCall{{ID: "c1", Name: "x", Arguments: json.RawMessage(`{"a":`)}}},
			calls: []engine.ToolCall{{ID: "c1", Name: "x", Arguments: json.RawMessage(`"{\"a\":"`)}},
			stop:  engine.StopToolUse,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.NewServer(tt.reply)
			defer srv.Close()
			p := New(Config{BaseURL: srv.URL})
			var rec recorder
			if err := p.Stream(context.Background(), userRequest("hi"), rec.emit); err != nil {
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

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

// rawTransport answers every request with one fixed body.
type rawTransport struct {
	status      int
	contentType string
	body        string
}

func (rt rawTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	st := rt.status
	if st == 0 {
		st = 200
	}
	ct := rt.contentType
	if ct == "" {
		ct = "text/event-stream"
	}
	return &http.Response{
		StatusCode: st,
		Header:     http.Header{"Content-Type": {ct}},
		Body:       io.NopCloser(strings.NewReader(rt.body)),
		Request:    r,
	}, nil
}

func rawProvider(rt rawTransport) *Provider {
	return New(Config{BaseURL: "http://127.0.0.1:1/v1", HTTPClient: &http.Client{Transport: rt}})
}

// Layouts other servers produce, written out by hand.
func TestStreamServerQuirks(t *testing.T) {
	tests := []struct {
		name     string
		rt       rawTransport
		text     string
		thinking string
		calls    string // JSON of the calls, ids blanked when random
		stop     engine.StopReason
		usage    engine.Usage
	}{
		{
			name: "ollama: whole calls without index, finish stop, reasoning field",
			rt: rawTransport{body: `data: {"choices":[{"delta":{"role":"assistant","reasoning":"hmm"}}]}

data: {"choices":[{"delta":{"tool_calls":[{"id":"call_a","function":{"name":"ls","arguments":"{\"path\":\".\"}"}}]}}]}

data: {"choices":[{"delta":{"tool_calls":[{"id":"call_b","function":{"name":"read","arguments":"{}"}}]}}]}

data: {"choices":[{"delta":{},"finish_reason":"stop"}]}

data: [DONE]

`},
			thinking: "hmm",
			calls:    `[{"id":"call_a","name":"ls","arguments":{"path":"."}},{"id":"call_b","name":"read","arguments":{}}]`,
			stop:     engine.StopToolUse,
		},
		{
			name: "arguments as an object, no id, usage in the last choice chunk",
			rt: rawTransport{body: "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"ls\",\"arguments\":{\"a\":1}}}]},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n" +
				"data: [DONE]\n\n"},
			calls: `[{"id":"","name":"ls","arguments":{"a":1}}]`,
			stop:  engine.StopToolUse,
			usage: engine.Usage{Input: 3, Output: 2, TotalTokens: 5},
		},
		{
			name: "every call at index 0, told apart by id",
			rt: rawTransport{body: "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"x\",\"arguments\":\"{}\"}}]}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"b\",\"function\":{\"name\":\"y\",\"arguments\":\"{\\\"k\\\"\"}}]}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\":2}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"},
			calls: `[{"id":"a","name":"x","arguments":{}},{"id":"b","name":"y","arguments":{"k":2}}]`,
			stop:  engine.StopToolUse,
		},
		{
			name: "empty arguments become {}, function_call finish",
			rt: rawTransport{body: "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"now\"}}]}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"function_call\"}]}\n\ndata: [DONE]\n"},
			calls: `[{"id":"c","name":"now","arguments":{}}]`,
			stop:  engine.StopToolUse,
		},
		{
			name: "keep-alive comments, CRLF, null content",
			rt: rawTransport{body: ": PROCESSING\r\n\r\ndata: {\"choices\":[{\"delta\":{\"content\":null,\"reasoning_content\":\"r\"}}]}\r\n\r\n" +
				"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\n\r\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\r\n\r\ndata: [DONE]\r\n\r\n"},
			thinking: "r",
			text:     "a",
			stop:     engine.StopLength,
		},
		{
			name: "non-streamed JSON completion",
			rt: rawTransport{contentType: "application/json; charset=utf-8", body: `{"id":"x","object":"chat.completion","choices":[{"index":0,
				"message":{"role":"assistant","content":"whole","tool_calls":[{"id":"c9","type":"function","function":{"name":"ls","arguments":"{}"}}]},
				"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14,"prompt_tokens_details":{"cached_tokens":6}}}`},
			text:  "whole",
			calls: `[{"id":"c9","name":"ls","arguments":{}}]`,
			stop:  engine.StopToolUse,
			usage: engine.Usage{Input: 4, CacheRead: 6, Output: 4, TotalTokens: 14},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			if err := rawProvider(tt.rt).Stream(context.Background(), userRequest("hi"), rec.emit); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			end := rec.end(t)
			if got := rec.joined(engine.EventTextDelta); got != tt.text {
				t.Errorf("text = %q, want %q", got, tt.text)
			}
			if got := rec.joined(engine.EventThinkingDelta); got != tt.thinking {
				t.Errorf("thinking = %q, want %q", got, tt.thinking)
			}
			calls := rec.calls()
			for i := range calls {
				if strings.HasPrefix(calls[i].ID, "call_") && len(calls[i].ID) == 29 {
					calls[i].ID = "" // random
				}
			}
			want := tt.calls
			if want == "" {
				want = "null"
			}
			if got := jsonOf(calls); got != want {
				t.Errorf("calls = %s\nwant %s", got, want)
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

func TestRandomToolCallIDs(t *testing.T) {
	body := "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"a\"}},{\"index\":1,\"function\":{\"name\":\"b\"}}]}}]}\n\ndata: [DONE]\n\n"
	var rec recorder
	if err := rawProvider(rawTransport{body: body}).Stream(context.Background(), userRequest("hi"), rec.emit); err != nil {
		t.Fatal(err)
	}
	calls := rec.calls()
	if len(calls) != 2 || calls[0].ID == "" || calls[0].ID == calls[1].ID {
		t.Fatalf("calls need distinct ids: %s", jsonOf(calls))
	}
}

func TestErrors(t *testing.T) {
	const key = "sk-secret-key-123"
	tests := []struct {
		name   string
		reply  openaitest.Reply
		kind   engine.ErrorKind
		status int
		msg    string // substring of ModelError.Message
	}{
		{"401", openaitest.Reply{Status: 401, ErrorBody: `{"error":{"message":"Incorrect API key provided: sk-secret-key-123.","type":"invalid_request_error","code":"invalid_api_key"}}`}, engine.ErrAuth, 401, "Incorrect API key provided: [redacted]"},
		{"403", openaitest.Reply{Status: 403}, engine.ErrAuth, 403, "Forbidden"},
		{"402", openaitest.Reply{Status: 402}, engine.ErrBilling, 402, ""},
		{"429 insufficient_quota", openaitest.Reply{Status: 429, ErrorBody: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}`}, engine.ErrBilling, 429, "exceeded your current quota"},
		{"400 credits (openrouter)", openaitest.Reply{Status: 400, ErrorBody: `{"error":{"message":"This request requires more credits","code":402}}`}, engine.ErrBilling, 400, "more credits"},
		{"429", openaitest.Reply{Status: 429, ErrorBody: `{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"rate_limit_exceeded"}}`}, engine.ErrRateLimit, 429, "Rate limit reached"},
		{"400 context length", openaitest.Reply{Status: 400, ErrorBody: `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`}, engine.ErrContextOverflow, 400, "maximum context length"},
		{"400 llama-server context size", openaitest.Reply{Status: 400, ErrorBody: `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}`}, engine.ErrContextOverflow, 400, "available context size"},
		{"413 too many tokens", openaitest.Reply{Status: 413, ErrorBody: `{"error":{"message":"Request too large: too many tokens"}}`}, engine.ErrContextOverflow, 413, ""},
		{"413 image", openaitest.Reply{Status: 413, ErrorBody: `{"error":{"message":"Image too large: 25MB exceeds the 20MB limit"}}`}, engine.ErrImageTooLarge, 413, "Image too large"},
		{"404 model", openaitest.Reply{Status: 404, ErrorBody: `{"error":{"message":"The model 'nope' does not exist","type":"invalid_request_error","code":"model_not_found"}}`}, engine.ErrBadRequest, 404, "does not exist"},
		{"400 plain text body", openaitest.Reply{Status: 400, ErrorBody: "bad things\n  happened"}, engine.ErrBadRequest, 400, "bad things happened"},
		{"500", openaitest.Reply{Status: 500}, engine.ErrUnreachable, 500, "Internal Server Error"},
		{"503", openaitest.Reply{Status: 503, ErrorBody: `{"error":"model is loading"}`}, engine.ErrUnreachable, 503, "model is loading"},
		{"529 overloaded", openaitest.Reply{Status: 529, ErrorBody: `{"error":{"message":"Overloaded"}}`}, engine.ErrUnreachable, 529, "Overloaded"},
		{"long message trimmed", openaitest.Reply{Status: 400, ErrorBody: `{"error":{"message":"` + strings.Repeat("x", 1000) + `"}}`}, engine.ErrBadRequest, 400, strings.Repeat("x", 299) + "…"},
		{"cut stream", openaitest.Reply{Text: "a long text that will be cut", CutStream: true}, engine.ErrUnreachable, 0, "stream ended early"},
		{"mid-stream server error", openaitest.Reply{Text: "some text first", StreamError: true}, engine.ErrUnreachable, 0, ""},
		{"mid-stream rate limit", openaitest.Reply{Text: "some text first", StreamError: true, ErrorBody: `{"error":{"message":"Rate limit exceeded","code":429}}`}, engine.ErrRateLimit, 0, "Rate limit exceeded"},
		{"mid-stream context overflow", openaitest.Reply{Text: "some text first", StreamError: true, ErrorBody: `{"error":{"message":"context_length_exceeded"}}`}, engine.ErrContextOverflow, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.NewServer(tt.reply)
			defer srv.Close()
			p := New(Config{ProviderID: "testai", BaseURL: srv.URL, APIKey: key})
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
			if me.Provider != "testai" || me.Model != "gpt-test" {
				t.Errorf("provider/model = %s/%s", me.Provider, me.Model)
			}
		})
	}
}

// checkError asserts err is a *engine.ModelError of kind and that no message
// end was emitted.
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

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now

	var rec recorder
	err = New(Config{BaseURL: "http://" + addr + "/v1"}).Stream(context.Background(), userRequest("hi"), rec.emit)
	checkError(t, err, engine.ErrUnreachable, &rec)
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
	client := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 50e6}}
	var rec recorder
	err = New(Config{BaseURL: "http://" + l.Addr().String() + "/v1", HTTPClient: client}).
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
		{ctx, &net.DNSError{Err: "no such host", Name: "api.example", IsNotFound: true}, engine.ErrUnreachable},
		{ctx, &net.DNSError{Err: "i/o timeout", Name: "api.example", IsTimeout: true}, engine.ErrUnreachable},
		{ctx, &net.OpError{Op: "dial", Err: errors.New("connection refused")}, engine.ErrUnreachable},
		{ctx, &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, engine.ErrUnreachable},
		{ctx, timeoutErr{}, engine.ErrTimeout},
		{cancelled, context.Canceled, engine.ErrAborted},
	}
	for _, tt := range tests {
		if got, _ := httpapi.NetKind(tt.ctx, tt.err); got != tt.want {
			t.Errorf("httpapi.NetKind(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "dial tcp: i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestAbortMidStream(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Reply{Text: "this reply stalls half-way through", Stall: true, Chunk: 2})
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var rec recorder
	emit := func(e engine.Event) {
		rec.emit(e)
		if e.Type == engine.EventTextDelta {
			cancel() // like /stop while text streams
		}
	}
	err := New(Config{BaseURL: srv.URL}).Stream(ctx, userRequest("hi"), emit)
	checkError(t, err, engine.ErrAborted, &rec)
}

func TestHeaders(t *testing.T) {
	var got http.Header
	srv := openaitest.NewServer()
	defer srv.Close()
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = r.Header.Clone()
		return http.DefaultTransport.RoundTrip(r)
	})}

	var rec recorder
	p := New(Config{BaseURL: srv.URL, APIKey: "k1", Headers: map[string]string{"HTTP-Referer": "https://example.org"}, HTTPClient: client})
	if err := p.Stream(context.Background(), userRequest("hi"), rec.emit); err != nil {
		t.Fatal(err)
	}
	if got.Get("Authorization") != "Bearer k1" || got.Get("HTTP-Referer") != "https://example.org" {
		t.Errorf("headers = %v", got)
	}
	if rec.joined(engine.EventTextDelta) != "echo: hi" {
		t.Errorf("echo = %q", rec.joined(engine.EventTextDelta))
	}

	p = New(Config{BaseURL: srv.URL, HTTPClient: client})
	if err := p.Stream(context.Background(), userRequest("hi"), rec.emit); err != nil {
		t.Fatal(err)
	}
	if _, ok := got["Authorization"]; ok {
		t.Errorf("no key, but Authorization sent: %v", got)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestNewDefaults(t *testing.T) {
	p := New(Config{})
	if p.ID() != "openai" || p.API() != "openai-completions" || p.url != "https://api.openai.com/v1/chat/completions" || !p.newTokenName {
		t.Errorf("defaults: id %s api %s url %s new %v", p.ID(), p.API(), p.url, p.newTokenName)
	}
	p = New(Config{BaseURL: "http://127.0.0.1:8080/v1/"})
	if p.url != "http://127.0.0.1:8080/v1/chat/completions" || p.newTokenName {
		t.Errorf("local: url %s new %v", p.url, p.newTokenName)
	}
}

// A tool loop through the validating server: what we send back after a
// tool call must be accepted.
func TestToolLoopRoundTrip(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Reply{ToolCalls: []engine.ToolCall{
		{Name: "ls", Arguments: json.RawMessage(`{"path":"."}`)},
		{Name: "read", Arguments: json.RawMessage(`{"path":`)}, // invalid JSON
	}})
	defer srv.Close()
	p := New(Config{BaseURL: srv.URL})
	req := userRequest("list files")
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
	// The invalid arguments went back as the model's raw text.
	var sent struct {
		Messages []struct {
			ToolCalls []struct {
				Function struct{ Arguments string }
			} `json:"tool_calls"`
		}
	}
	reqs := srv.Requests()
	if err := json.Unmarshal(reqs[len(reqs)-1], &sent); err != nil {
		t.Fatal(err)
	}
	if got := sent.Messages[1].ToolCalls[1].Function.Arguments; got != `{"path":` {
		t.Errorf("raw arguments sent back as %q", got)
	}

	// Dropping a tool result is a mapping bug the server catches.
	req.Messages = req.Messages[:len(req.Messages)-1]
	req.Messages = append(req.Messages, engine.UserText("next"))
	rec = recorder{}
	err := p.Stream(context.Background(), req, rec.emit)
	checkError(t, err, engine.ErrBadRequest, &rec)
}
