package gemini

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
	"github.com/openclaw-edge/edge/models/gemini/geminitest"
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

// message assembles the assistant message the way engine/agent does:
// thinking deltas (with their last signature) make a thinking block, a
// thinking delta after text starts a new one, tool calls close both.
func (r *recorder) message() engine.Message {
	var blocks []engine.Block
	var text, thinking strings.Builder
	sig := ""
	flush := func() {
		if thinking.Len() > 0 {
			blocks = append(blocks, engine.Block{Type: engine.BlockThinking, Thinking: thinking.String(), ThinkingSignature: sig})
			thinking.Reset()
			sig = ""
		}
		if text.Len() > 0 {
			blocks = append(blocks, engine.TextBlock(text.String()))
			text.Reset()
		}
	}
	for _, e := range r.events {
		switch e.Type {
		case engine.EventTextDelta:
			text.WriteString(e.Text)
		case engine.EventThinkingDelta:
			if text.Len() > 0 {
				flush()
			}
			thinking.WriteString(e.Text)
			if e.Signature != "" {
				sig = e.Signature
			}
		case engine.EventToolCall:
			flush()
			blocks = append(blocks, e.ToolCall.Block())
		}
	}
	flush()
	return engine.Message{Role: engine.RoleAssistant, Content: blocks, API: API}
}

func userRequest(model, text string) *engine.ChatRequest {
	return &engine.ChatRequest{Model: model, Messages: []engine.Message{engine.UserText(text)}}
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestStreamLayouts(t *testing.T) {
	weather := engine.ToolCall{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Zürich","days":[1,2,3]}`)}
	search := engine.ToolCall{Name: "search", Arguments: json.RawMessage(`{"q":"go sse"}`)}
	tests := []struct {
		name      string
		model     string
		thinking  engine.ThinkingLevel
		reply     geminitest.Reply
		text      string
		thought   string
		textDelta int
		calls     []engine.ToolCall
		stop      engine.StopReason
		usage     *engine.Usage
	}{
		{
			name:      "text only",
			reply:     geminitest.Reply{Text: "Hello, wörld! How are you?", Usage: engine.Usage{Input: 10, Output: 7}},
			text:      "Hello, wörld! How are you?",
			textDelta: 7,
			stop:      engine.StopEnd,
			usage:     &engine.Usage{Input: 10, Output: 7, TotalTokens: 17},
		},
		{
			name:  "one function call",
			reply: geminitest.Reply{ToolCalls: []engine.ToolCall{weather}},
			calls: []engine.ToolCall{{ID: "call_resp1_1", Name: "get_weather", Arguments: weather.Arguments}},
			stop:  engine.StopToolUse,
		},
		{
			name:  "parallel calls after text",
			reply: geminitest.Reply{Text: "Let me look.", ToolCalls: []engine.ToolCall{weather, search}},
			text:  "Let me look.",
			calls: []engine.ToolCall{{ID: "call_resp1_1", Name: "get_weather", Arguments: weather.Arguments}, {ID: "call_resp1_2", Name: "search", Arguments: search.Arguments}},
			stop:  engine.StopToolUse,
		},
		{
			name:     "thoughts then text",
			thinking: engine.ThinkingMedium,
			reply:    geminitest.Reply{Thinking: "The user greets me.", Text: "Hi!"},
			thought:  "The user greets me.",
			text:     "Hi!",
			stop:     engine.StopEnd,
		},
		{
			name:  "thoughts not asked for are not sent",
			reply: geminitest.Reply{Thinking: "hidden", Text: "Hi!"},
			text:  "Hi!",
			stop:  engine.StopEnd,
		},
		{
			name:  "usage with cache and thoughts",
			reply: geminitest.Reply{Text: "ok", Usage: engine.Usage{Input: 100, CacheRead: 900, Output: 50}, ThoughtTokens: 45},
			text:  "ok",
			stop:  engine.StopEnd,
			usage: &engine.Usage{Input: 100, CacheRead: 900, Output: 50, TotalTokens: 1050},
		},
		{
			name:  "max tokens",
			reply: geminitest.Reply{Text: "cut", StopReason: engine.StopLength},
			text:  "cut",
			stop:  engine.StopLength,
		},
		{
			name:  "safety",
			reply: geminitest.Reply{StopReason: engine.StopError},
			stop:  engine.StopError,
		},
		{
			name:  "malformed function call",
			reply: geminitest.Reply{FinishReason: "MALFORMED_FUNCTION_CALL"},
			stop:  engine.StopError,
		},
		{
			name:  "prompt blocked",
			reply: geminitest.Reply{BlockReason: "PROHIBITED_CONTENT"},
			stop:  engine.StopError,
		},
		{
			name:  "model without thinking",
			model: "gemini-2.0-flash",
			reply: geminitest.Reply{Text: "plain", ToolCalls: []engine.ToolCall{{Name: "ls"}}},
			text:  "plain",
			calls: []engine.ToolCall{{ID: "call_resp1_1", Name: "ls", Arguments: json.RawMessage(`{}`)}},
			stop:  engine.StopToolUse,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := geminitest.NewServer(tt.reply)
			defer srv.Close()
			model := tt.model
			if model == "" {
				model = "gemini-2.5-flash"
			}
			req := userRequest(model, "hi")
			req.Thinking = tt.thinking
			var rec recorder
			if err := New(Config{BaseURL: srv.URL}).Stream(context.Background(), req, rec.emit); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			end := rec.end(t)
			if got := rec.joined(engine.EventTextDelta); got != tt.text {
				t.Errorf("text = %q, want %q", got, tt.text)
			}
			if got := rec.joined(engine.EventThinkingDelta); got != tt.thought {
				t.Errorf("thinking = %q, want %q", got, tt.thought)
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
	return New(Config{BaseURL: "http://127.0.0.1:1/v1beta", HTTPClient: &http.Client{Transport: rt}})
}

// Chunks written out by hand, as Gemini sends them.
func TestStreamWire(t *testing.T) {
	tests := []struct {
		name  string
		rt    rawTransport
		want  string // the events, compactly
		stop  engine.StopReason
		usage engine.Usage
	}{
		{
			name: "thought signature on the call goes out before it, ids from Gemini kept",
			rt: rawTransport{body: "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Plan: list.\",\"thought\": true}],\"role\": \"model\"},\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 9,\"totalTokenCount\": 9},\"modelVersion\": \"gemini-3-pro-preview\",\"responseId\": \"Ab_c-9\"}\r\n\r\n" +
				"data: {\"candidates\": [{\"content\": {\"parts\": [{\"functionCall\": {\"name\": \"ls\",\"args\": {\"path\": \".\"}},\"thoughtSignature\": \"c2lnMQ==\"},{\"functionCall\": {\"id\": \"fc-7\",\"name\": \"now\"}}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 9,\"candidatesTokenCount\": 5,\"thoughtsTokenCount\": 20,\"totalTokenCount\": 34},\"responseId\": \"Ab_c-9\"}\r\n\r\n"},
			want:  `thinking("Plan: list.") thinking(""+sig c2lnMQ==) call(call_Ab_c-9_1 ls {"path":"."}) call(fc-7 now {}) end`,
			stop:  engine.StopToolUse,
			usage: engine.Usage{Input: 9, Output: 25, TotalTokens: 34},
		},
		{
			name: "signature on a text part after text is dropped, usage after the finish chunk",
			rt: rawTransport{body: "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}],\"role\":\"model\"}}]}\n\n" +
				"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"lo\",\"thoughtSignature\":\"c2ln\"}],\"role\":\"model\"},\"finishReason\":\"STOP\"}]}\n\n" +
				"data: {\"usageMetadata\":{\"promptTokenCount\":4,\"cachedContentTokenCount\":2,\"candidatesTokenCount\":2,\"toolUsePromptTokenCount\":1}}\n\n"},
			want:  `text("Hel") text("lo") end`,
			stop:  engine.StopEnd,
			usage: engine.Usage{Input: 3, CacheRead: 2, Output: 2, TotalTokens: 7},
		},
		{
			name: "JSON array answer (no alt=sse)",
			rt: rawTransport{contentType: "application/json; charset=UTF-8", body: `[{"candidates":[{"content":{"parts":[{"text":"whole"}],"role":"model"}}]},
{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":1,"totalTokenCount":3}}]`},
			want:  `text("whole") end`,
			stop:  engine.StopLength,
			usage: engine.Usage{Input: 2, Output: 1, TotalTokens: 3},
		},
		{
			name:  "generateContent object answer",
			rt:    rawTransport{contentType: "application/json", body: `{"candidates":[{"content":{"parts":[{"text":"one"}]},"finishReason":"STOP"}]}`},
			want:  `text("one") end`,
			stop:  engine.StopEnd,
			usage: engine.Usage{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			if err := rawProvider(tt.rt).Stream(context.Background(), userRequest("gemini-3-pro-preview", "hi"), rec.emit); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			end := rec.end(t)
			if got := compact(rec.events); got != tt.want {
				t.Errorf("events = %s\nwant     %s", got, tt.want)
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

func compact(events []engine.Event) string {
	var out []string
	for _, e := range events {
		switch e.Type {
		case engine.EventTextDelta:
			out = append(out, "text("+jsonOf(e.Text)+")")
		case engine.EventThinkingDelta:
			s := "thinking(" + jsonOf(e.Text)
			if e.Signature != "" {
				s += "+sig " + e.Signature
			}
			out = append(out, s+")")
		case engine.EventToolCall:
			out = append(out, "call("+e.ToolCall.ID+" "+e.ToolCall.Name+" "+string(e.ToolCall.Arguments)+")")
		case engine.EventMessageEnd:
			out = append(out, "end")
		}
	}
	return strings.Join(out, " ")
}

func quota(id string) map[string]any {
	return map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{
		"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaId": id,
		"quotaDimensions": map[string]any{"location": "global", "model": "gemini-2.5-pro"}, "quotaValue": "50"}}}
}

var retry = map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}

const quotaText = "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: "

func TestErrors(t *testing.T) {
	const key = "AIzaSy-secret-key-123"
	png := engine.Block{Type: engine.BlockImage, Data: "aGk=", MimeType: "image/png"}
	tests := []struct {
		name   string
		reply  geminitest.Reply
		key    string // what the client sends; the server wants key
		model  string
		image  bool
		kind   engine.ErrorKind
		status int
		msg    string
	}{
		{name: "API key not valid", key: "AIza-wrong", kind: engine.ErrAuth, status: 400, msg: "API key not valid"},
		{name: "no API key", key: "-", kind: engine.ErrAuth, status: 403, msg: "unregistered callers"},
		{name: "403 permission denied", reply: geminitest.Reply{Status: 403, ErrorBody: geminitest.ErrorBody(403, "PERMISSION_DENIED", "Generative Language API has not been used in project 123 before or it is disabled.")}, kind: engine.ErrAuth, status: 403, msg: "has not been used"},
		{name: "expired key", reply: geminitest.Reply{Status: 400, ErrorBody: geminitest.ErrorBody(400, "INVALID_ARGUMENT", "API key expired. Please renew the API key.", map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_EXPIRED"})}, kind: engine.ErrAuth, status: 400},
		{name: "429 per minute", reply: geminitest.Reply{Status: 429, ErrorBody: geminitest.ErrorBody(429, "RESOURCE_EXHAUSTED", quotaText+"10, model: gemini-2.5-flash\nPlease retry in 37.5s.", quota("GenerateRequestsPerMinutePerProjectPerModel-FreeTier"), retry)}, kind: engine.ErrRateLimit, status: 429, msg: "exceeded your current quota"},
		{name: "429 plain", reply: geminitest.Reply{Status: 429}, kind: engine.ErrRateLimit, status: 429, msg: "Resource has been exhausted"},
		{name: "429 per day", reply: geminitest.Reply{Status: 429, ErrorBody: geminitest.ErrorBody(429, "RESOURCE_EXHAUSTED", quotaText+"250, model: gemini-2.5-flash", quota("GenerateRequestsPerDayPerProjectPerModel-FreeTier"), retry)}, kind: engine.ErrBilling, status: 429},
		{name: "429 no free tier", reply: geminitest.Reply{Status: 429, ErrorBody: geminitest.ErrorBody(429, "RESOURCE_EXHAUSTED", quotaText+"0, model: gemini-2.5-pro")}, kind: engine.ErrBilling, status: 429},
		{name: "429 prepayment", reply: geminitest.Reply{Status: 429, ErrorBody: geminitest.ErrorBody(429, "RESOURCE_EXHAUSTED", "Your prepayment credits are depleted. Please go to AI Studio at https://ai.studio/projects to manage your project and billing.")}, kind: engine.ErrBilling, status: 429},
		{name: "400 free tier not in country", reply: geminitest.Reply{Status: 400, ErrorBody: geminitest.ErrorBody(400, "FAILED_PRECONDITION", "Gemini API free tier is not available in your country. Please enable billing on your project in Google AI Studio.")}, kind: engine.ErrBilling, status: 400},
		{name: "input token count", reply: geminitest.Reply{Status: 400, ErrorBody: geminitest.ErrorBody(400, "INVALID_ARGUMENT", "The input token count (1234567) exceeds the maximum number of tokens allowed (1048576).")}, kind: engine.ErrContextOverflow, status: 400, msg: "input token count"},
		{name: "over the model's limit (server check)", model: "gemini-tiny", kind: engine.ErrContextOverflow, status: 400, msg: "exceeds the maximum number of tokens allowed (10)"},
		{name: "payload too large with an image", image: true, reply: geminitest.Reply{Status: 400, ErrorBody: geminitest.ErrorBody(400, "INVALID_ARGUMENT", "Request payload size exceeds the limit: 20971520 bytes.")}, kind: engine.ErrImageTooLarge, status: 400},
		{name: "payload too large without images", reply: geminitest.Reply{Status: 400, ErrorBody: geminitest.ErrorBody(400, "INVALID_ARGUMENT", "Request payload size exceeds the limit: 20971520 bytes.")}, kind: engine.ErrContextOverflow, status: 400},
		{name: "unknown model", model: "gemini-9-ultra", kind: engine.ErrNoModel, status: 404, msg: "models/gemini-9-ultra is not found"},
		{name: "404 wrong base URL", reply: geminitest.Reply{Status: 404}, kind: engine.ErrUnreachable, status: 404, msg: "Requested entity was not found."},
		{name: "400 invalid argument", reply: geminitest.Reply{Status: 400}, kind: engine.ErrBadRequest, status: 400, msg: "invalid argument"},
		{name: "500", reply: geminitest.Reply{Status: 500}, kind: engine.ErrUnreachable, status: 500, msg: "internal error"},
		{name: "503 overloaded", reply: geminitest.Reply{Status: 503}, kind: engine.ErrUnreachable, status: 503, msg: "overloaded"},
		{name: "504", reply: geminitest.Reply{Status: 504}, kind: engine.ErrUnreachable, status: 504},
		{name: "plain text 502", reply: geminitest.Reply{Status: 502, ErrorBody: "<html>\n  Bad Gateway\n</html>"}, kind: engine.ErrUnreachable, status: 502, msg: "<html> Bad Gateway </html>"},
		{name: "long message trimmed", reply: geminitest.Reply{Status: 400, ErrorBody: geminitest.ErrorBody(400, "INVALID_ARGUMENT", strings.Repeat("x", 1000))}, kind: engine.ErrBadRequest, status: 400, msg: strings.Repeat("x", 299) + "…"},
		{name: "cut stream", reply: geminitest.Reply{Text: "a long text that will be cut", CutStream: true}, kind: engine.ErrUnreachable, msg: "stream ended early"},
		{name: "mid-stream error", reply: geminitest.Reply{Text: "some text first", StreamError: true, Status: 500}, kind: engine.ErrUnreachable, msg: "internal error"},
		{name: "mid-stream rate limit", reply: geminitest.Reply{Text: "some text first", StreamError: true, Status: 429}, kind: engine.ErrRateLimit},
		{name: "key echoed is redacted", reply: geminitest.Reply{Status: 400, ErrorBody: geminitest.ErrorBody(400, "INVALID_ARGUMENT", "bad key "+key)}, kind: engine.ErrBadRequest, status: 400, msg: "bad key [redacted]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var replies []geminitest.Reply
			if !reflect.DeepEqual(tt.reply, geminitest.Reply{}) {
				replies = append(replies, tt.reply)
			}
			srv := geminitest.NewServer(replies...)
			defer srv.Close()
			srv.RequireKey(key)
			srv.AddModel(geminitest.Model{Name: "gemini-tiny", InputTokenLimit: 10})
			sent := key
			switch tt.key {
			case "-":
				sent = ""
			case "":
			default:
				sent = tt.key
			}
			model := tt.model
			if model == "" {
				model = "gemini-2.5-flash"
			}
			req := userRequest(model, "hi")
			if tt.image {
				req.Messages[0].Content = append(req.Messages[0].Content, png)
			}
			var rec recorder
			err := New(Config{ProviderID: "google", BaseURL: srv.URL, APIKey: sent}).Stream(context.Background(), req, rec.emit)
			me := checkError(t, err, tt.kind, &rec)
			if me.Status != tt.status {
				t.Errorf("status = %d, want %d", me.Status, tt.status)
			}
			if !strings.Contains(me.Message, tt.msg) {
				t.Errorf("message %q does not contain %q", me.Message, tt.msg)
			}
			if len([]rune(me.Message)) > 300 || strings.Contains(me.Message, "\n") {
				t.Errorf("message not one short line: %q", me.Message)
			}
			if strings.Contains(me.Error(), key) {
				t.Errorf("error leaks the key: %v", me)
			}
			if me.Provider != "google" || me.Model != model {
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

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	var rec recorder
	err = New(Config{BaseURL: "http://" + addr + "/v1beta"}).Stream(context.Background(), userRequest("gemini-2.5-flash", "hi"), rec.emit)
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
	client := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 50 * time.Millisecond}}
	var rec recorder
	err = New(Config{BaseURL: "http://" + l.Addr().String() + "/v1beta", HTTPClient: client}).
		Stream(context.Background(), userRequest("gemini-2.5-flash", "hi"), rec.emit)
	checkError(t, err, engine.ErrTimeout, &rec)
}

func TestAbortMidStream(t *testing.T) {
	srv := geminitest.NewServer(geminitest.Reply{Text: "this reply stalls half-way through", Stall: true, Chunk: 2})
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var rec recorder
	emit := func(e engine.Event) {
		rec.emit(e)
		if e.Type == engine.EventTextDelta {
			cancel() // like /stop while text streams
		}
	}
	err := New(Config{BaseURL: srv.URL}).Stream(ctx, userRequest("gemini-2.5-flash", "hi"), emit)
	checkError(t, err, engine.ErrAborted, &rec)
}

func TestRequestLine(t *testing.T) {
	var got *http.Request
	srv := geminitest.NewServer()
	defer srv.Close()
	srv.RequireKey("k1")
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = r.Clone(r.Context())
		return http.DefaultTransport.RoundTrip(r)
	})}
	var rec recorder
	p := New(Config{BaseURL: srv.URL + "/", APIKey: "k1", Headers: map[string]string{"X-Goog-User-Project": "p1"}, HTTPClient: client})
	if err := p.Stream(context.Background(), userRequest("models/gemini-2.5-flash", "hi"), rec.emit); err != nil {
		t.Fatal(err)
	}
	if got.URL.Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || got.URL.RawQuery != "alt=sse" ||
		got.Header.Get("x-goog-api-key") != "k1" || got.Header.Get("X-Goog-User-Project") != "p1" {
		t.Errorf("request %s %v", got.URL, got.Header)
	}
	if rec.joined(engine.EventTextDelta) != "echo: hi" {
		t.Errorf("echo = %q", rec.joined(engine.EventTextDelta))
	}
	if p := New(Config{}); p.ID() != "gemini" || p.API() != "gemini" || p.streamURL("x") != DefaultBaseURL+"/models/x:streamGenerateContent?alt=sse" {
		t.Errorf("defaults: %s %s %s", p.ID(), p.API(), p.streamURL("x"))
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestThinkingConfig(t *testing.T) {
	tests := []struct {
		model string
		level engine.ThinkingLevel
		want  string // generationConfig as sent; "" when absent
		calls int    // requests made (2: retried without thinking)
	}{
		{"gemini-2.5-flash", "", ``, 1},
		{"gemini-2.5-flash", engine.ThinkingOff, `{"thinkingConfig":{"thinkingBudget":0}}`, 1},
		{"gemini-2.5-flash", engine.ThinkingLow, `{"thinkingConfig":{"thinkingBudget":1024,"includeThoughts":true}}`, 1},
		{"gemini-2.5-flash", engine.ThinkingHigh, `{"thinkingConfig":{"thinkingBudget":24576,"includeThoughts":true}}`, 1},
		{"gemini-2.5-pro", engine.ThinkingOff, ``, 1},
		{"gemini-2.5-pro", engine.ThinkingMedium, `{"thinkingConfig":{"thinkingBudget":8192,"includeThoughts":true}}`, 1},
		{"gemini-3-pro-preview", engine.ThinkingOff, `{"thinkingConfig":{"thinkingLevel":"low"}}`, 1},
		{"gemini-3-pro-preview", engine.ThinkingMedium, `{"thinkingConfig":{"thinkingLevel":"high","includeThoughts":true}}`, 1},
		{"gemini-2.0-flash", engine.ThinkingHigh, ``, 2},
		{"gemini-2.0-flash", engine.ThinkingOff, ``, 2},
	}
	for _, tt := range tests {
		srv := geminitest.NewServer()
		req := userRequest(tt.model, "hi")
		req.Thinking = tt.level
		var rec recorder
		err := New(Config{BaseURL: srv.URL}).Stream(context.Background(), req, rec.emit)
		reqs := srv.Requests()
		srv.Close()
		if err != nil {
			t.Errorf("%s %q: %v", tt.model, tt.level, err)
			continue
		}
		var sent map[string]json.RawMessage
		json.Unmarshal(reqs[len(reqs)-1], &sent)
		if got := string(sent["generationConfig"]); got != tt.want || len(reqs) != tt.calls {
			t.Errorf("%s %q: generationConfig %s after %d requests, want %s after %d", tt.model, tt.level, got, len(reqs), tt.want, tt.calls)
		}
	}
}

// A tool loop through the validating server on a gemini-3 model: the
// thought signature must come back on the call.
func TestToolLoopRoundTrip(t *testing.T) {
	for _, thinking := range []engine.ThinkingLevel{engine.ThinkingHigh, engine.ThinkingOff} {
		t.Run(string(thinking), func(t *testing.T) {
			srv := geminitest.NewServer(geminitest.Reply{Thinking: "I should list and read.", ToolCalls: []engine.ToolCall{
				{Name: "ls", Arguments: json.RawMessage(`{"path":"."}`)},
				{Name: "read", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
			}})
			defer srv.Close()
			p := New(Config{BaseURL: srv.URL})
			req := userRequest("gemini-3-pro-preview", "list files")
			req.Thinking = thinking
			req.Tools = []engine.ToolSpec{{Name: "ls", Description: "list", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}, {Name: "read"}}
			var rec recorder
			if err := p.Stream(context.Background(), req, rec.emit); err != nil {
				t.Fatal(err)
			}
			asst := rec.message()
			req.Messages = append(req.Messages, asst)
			for _, c := range asst.ToolCalls() {
				req.Messages = append(req.Messages, engine.TextResult("ok").Message(c))
			}
			rec = recorder{}
			if err := p.Stream(context.Background(), req, rec.emit); err != nil {
				t.Fatalf("second call refused: %v", err)
			}
			if rec.joined(engine.EventTextDelta) != "echo: list files" {
				t.Errorf("echo = %q", rec.joined(engine.EventTextDelta))
			}
			reqs := srv.Requests()
			sig := "skip_thought_signature_validator" // no thought text: the agent drops the signature
			if thinking == engine.ThinkingHigh {
				sig = "Z2VtaW5pdGVzdC1zaWduYXR1cmUtcmVzcDE=" // the one the server issued
			}
			if !strings.Contains(string(reqs[1]), `"thoughtSignature":"`+sig+`"`) {
				t.Errorf("signature %s not sent back: %s", sig, reqs[1])
			}

			// Dropping a tool result is a mapping bug the server catches.
			req.Messages = req.Messages[:len(req.Messages)-1]
			req.Messages = append(req.Messages, engine.UserText("next"))
			rec = recorder{}
			err := p.Stream(context.Background(), req, rec.emit)
			checkError(t, err, engine.ErrBadRequest, &rec)
		})
	}
}

// History written by another provider: its signatures are not Gemini's and
// are replaced by the placeholder.
func TestForeignHistory(t *testing.T) {
	srv := geminitest.NewServer()
	defer srv.Close()
	call := engine.ToolCall{ID: "toolu_01", Name: "ls", Arguments: json.RawMessage(`{}`)}
	req := userRequest("gemini-3-pro-preview", "list")
	req.Messages = append(req.Messages,
		engine.Message{Role: engine.RoleAssistant, API: "anthropic-messages", Content: []engine.Block{
			{Type: engine.BlockThinking, Thinking: "hm", ThinkingSignature: "EqQBCkYIBxgCKkA-anthropic"}, call.Block()}},
		engine.TextResult("a.txt").Message(call))
	var rec recorder
	if err := New(Config{BaseURL: srv.URL}).Stream(context.Background(), req, rec.emit); err != nil {
		t.Fatal(err)
	}
	if body := string(srv.Requests()[0]); strings.Contains(body, "anthropic") || !strings.Contains(body, skipSignature) {
		t.Errorf("request: %s", body)
	}
}
