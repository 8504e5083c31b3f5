package anthropic

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/anthropic/anthropictest"
	"github.com/openclaw-edge/edge/models/providertest"
)

func userRequest(text string) *engine.ChatRequest {
	return &engine.ChatRequest{Model: "claude-test", Messages: []engine.Message{engine.UserText(text)}}
}

// harness is the provider for the conformance suite, with the cases only
// Anthropic's API has.
func harness() providertest.Harness[anthropictest.Reply] {
	const key = "sk-ant-secret-123"
	errBody := func(typ, msg string) string {
		return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"}}`
	}
	return providertest.Harness[anthropictest.Reply]{
		Model:      "claude-test",
		ProviderID: "anth",
		Key:        key,
		KeyHeader:  "x-api-key",
		KeyValue:   "%s",
		Serve: func(_ string, replies ...anthropictest.Reply) (string, providertest.FakeServer) {
			srv := anthropictest.NewServer(replies...)
			return srv.URL, srv
		},
		New: func(_ testing.TB, cfg providertest.Config) providertest.Streamer {
			return New(Config{ProviderID: cfg.ProviderID, BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Headers: cfg.Headers, HTTPClient: cfg.HTTPClient})
		},
		CallIDs:      "toolu_%02d",
		KeepsCallIDs: true,
		Layouts: []providertest.Layout[anthropictest.Reply]{
			{
				Name:  "usage with cache read and write",
				Reply: anthropictest.Reply{Text: "ok", Usage: engine.Usage{Input: 12, CacheRead: 900, CacheWrite: 300, Output: 5}},
				Text:  "ok",
				Stop:  engine.StopEnd,
				Usage: &engine.Usage{Input: 12, CacheRead: 900, CacheWrite: 300, Output: 5, TotalTokens: 1217},
			},
			{
				Name:  "refusal",
				Reply: anthropictest.Reply{Text: "no", StopReason: engine.StopError},
				Text:  "no",
				Stop:  engine.StopError,
			},
			{
				Name:  "invalid input becomes a JSON string",
				Reply: anthropictest.Reply{ToolCalls: []engine.ToolCall{{ID: "t1", Name: "x", Arguments: json.RawMessage(`{"a":`)}}},
				Calls: []engine.ToolCall{{ID: "t1", Name: "x", Arguments: json.RawMessage(`"{\"a\":"`)}},
				Stop:  engine.StopToolUse,
			},
		},
		Errors: []providertest.ErrorCase[anthropictest.Reply]{
			{Name: "401", Reply: anthropictest.Reply{Status: 401, ErrorBody: errBody("authentication_error", "invalid x-api-key sk-ant-secret-123")}, Kind: engine.ErrAuth, Status: 401, Msg: "invalid x-api-key [redacted]"},
			{Name: "403", Reply: anthropictest.Reply{Status: 403}, Kind: engine.ErrAuth, Status: 403, Msg: "Forbidden"},
			{Name: "402", Reply: anthropictest.Reply{Status: 402}, Kind: engine.ErrBilling, Status: 402, Msg: ""},
			{Name: "400 credit balance", Reply: anthropictest.Reply{Status: 400, ErrorBody: errBody("invalid_request_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.")}, Kind: engine.ErrBilling, Status: 400, Msg: "credit balance is too low"},
			{Name: "429", Reply: anthropictest.Reply{Status: 429, ErrorBody: errBody("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")}, Kind: engine.ErrRateLimit, Status: 429, Msg: "per-minute rate limit"},
			{Name: "400 prompt too long", Reply: anthropictest.Reply{Status: 400, ErrorBody: errBody("invalid_request_error", "prompt is too long: 208323 tokens > 200000 maximum")}, Kind: engine.ErrContextOverflow, Status: 400, Msg: "prompt is too long"},
			{Name: "413 image", Reply: anthropictest.Reply{Status: 413, ErrorBody: errBody("request_too_large", "Image too large: exceeds 5 MB maximum")}, Kind: engine.ErrImageTooLarge, Status: 413, Msg: "Image too large"},
			{Name: "400 image exceeds", Reply: anthropictest.Reply{Status: 400, ErrorBody: errBody("invalid_request_error", "messages.0.content.1.image.source.base64: image exceeds 5 MB maximum: 7340032 bytes > 5242880 bytes")}, Kind: engine.ErrImageTooLarge, Status: 400, Msg: "image exceeds"},
			{Name: "413 request too large", Reply: anthropictest.Reply{Status: 413}, Kind: engine.ErrBadRequest, Status: 413, Msg: "Request Entity Too Large"},
			{Name: "404 model", Reply: anthropictest.Reply{Status: 404, ErrorBody: errBody("not_found_error", "model: claude-nope")}, Kind: engine.ErrBadRequest, Status: 404, Msg: "model: claude-nope"},
			{Name: "500", Reply: anthropictest.Reply{Status: 500}, Kind: engine.ErrUnreachable, Status: 500, Msg: "Internal Server Error"},
			{Name: "529 overloaded", Reply: anthropictest.Reply{Status: 529}, Kind: engine.ErrUnreachable, Status: 529, Msg: "Overloaded"},
			{Name: "html 502", Reply: anthropictest.Reply{Status: 502, ErrorBody: "<html>\n<body>Bad gateway</body></html>"}, Kind: engine.ErrUnreachable, Status: 502, Msg: "<html> <body>Bad gateway"},
			{Name: "long message trimmed", Reply: anthropictest.Reply{Status: 400, ErrorBody: errBody("invalid_request_error", strings.Repeat("é", 1000))}, Kind: engine.ErrBadRequest, Status: 400, Msg: strings.Repeat("é", 299) + "…"},
			{Name: "mid-stream overloaded", Reply: anthropictest.Reply{Text: "some text first", StreamError: true}, Kind: engine.ErrUnreachable, Status: 0, Msg: "Overloaded"},
			{Name: "mid-stream rate limit", Reply: anthropictest.Reply{Text: "some text first", StreamError: true, ErrorBody: errBody("rate_limit_error", "slow down")}, Kind: engine.ErrRateLimit, Status: 0, Msg: "slow down"},
			{Name: "mid-stream prompt too long", Reply: anthropictest.Reply{Text: "some text first", StreamError: true, ErrorBody: errBody("invalid_request_error", "prompt is too long")}, Kind: engine.ErrContextOverflow, Status: 0, Msg: ""},
			{Name: "mid-stream auth", Reply: anthropictest.Reply{StreamError: true, ErrorBody: errBody("authentication_error", "key revoked")}, Kind: engine.ErrAuth, Status: 0, Msg: "key revoked"},
		},
		ToolLoops:    []providertest.ToolLoop[anthropictest.Reply]{toolLoop(true), toolLoop(false)},
		Conversation: conversation,
		Echo:         "echo: Thanks!",
		Golden: []providertest.Golden{
			{Name: "conversation", Body: func() ([]byte, error) { return New(Config{}).requestBody(conversation()) }},
			{Name: "minimal", Body: func() ([]byte, error) {
				return New(Config{MaxTokens: 1000}).requestBody(&engine.ChatRequest{Model: "claude-test", System: "Be brief.", Messages: []engine.Message{{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock("hi")}}}, Thinking: engine.ThinkingOff})
			}},
		},
	}
}

func TestConformance(t *testing.T) { providertest.Run(t, harness()) }

// toolLoop goes through the validating server with thinking on: the
// continuation must be accepted whether or not thinking was signed, and
// thinking goes back only when signed.
func toolLoop(signed bool) providertest.ToolLoop[anthropictest.Reply] {
	return providertest.ToolLoop[anthropictest.Reply]{
		Name:  map[bool]string{true: "signed thinking", false: "unsigned thinking"}[signed],
		Level: engine.ThinkingLow,
		Reply: anthropictest.Reply{Thinking: "I should list.", ToolCalls: []engine.ToolCall{
			{Name: "ls", Arguments: json.RawMessage(`{"path":"."}`)},
			{Name: "read", Arguments: json.RawMessage(`{"path":`)},
		}},
		Assistant: func(rec *providertest.Recorder) engine.Message {
			think := engine.Block{Type: engine.BlockThinking, Thinking: rec.Joined(engine.EventThinkingDelta)}
			if signed {
				think.ThinkingSignature = "sig-3"
			}
			asst := engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{think}}
			for _, c := range rec.Calls() {
				asst.Content = append(asst.Content, c.Block())
			}
			return asst
		},
		Sent: func(t *testing.T, reqs []json.RawMessage) {
			var sent struct {
				Thinking json.RawMessage
			}
			json.Unmarshal(reqs[len(reqs)-1], &sent)
			if hasThinking := len(sent.Thinking) > 0; hasThinking != signed {
				t.Errorf("thinking sent = %s, want it only when signed", sent.Thinking)
			}
		},
	}
}

func rawProvider(rt providertest.RawTransport) *Provider {
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
			var rec providertest.Recorder
			if err := rawProvider(providertest.RawTransport{Body: tt.body}).Stream(context.Background(), userRequest("hi"), rec.Emit); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			end := rec.End(t)
			if got := rec.Joined(engine.EventTextDelta); got != tt.text {
				t.Errorf("text = %q, want %q", got, tt.text)
			}
			if got := providertest.JSONOf(rec.Calls()); got != tt.calls {
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

// TestHeaders: Anthropic's own headers and path (the key header is the
// suite's).
func TestHeaders(t *testing.T) {
	var got http.Header
	var path string
	srv := anthropictest.NewServer()
	defer srv.Close()
	client := &http.Client{Transport: providertest.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		got, path = r.Header.Clone(), r.URL.Path
		return http.DefaultTransport.RoundTrip(r)
	})}
	var rec providertest.Recorder
	p := New(Config{BaseURL: srv.URL + "/v1/", APIKey: "k1", Headers: map[string]string{"anthropic-beta": "x"}, HTTPClient: client})
	if err := p.Stream(context.Background(), userRequest("hi"), rec.Emit); err != nil {
		t.Fatal(err)
	}
	if got.Get("x-api-key") != "k1" || got.Get("anthropic-version") != "2023-06-01" || got.Get("anthropic-beta") != "x" || path != "/v1/messages" {
		t.Errorf("headers = %v, path %s", got, path)
	}
}

func TestNewDefaults(t *testing.T) {
	p := New(Config{})
	if p.ID() != "anthropic" || p.API() != "anthropic-messages" || p.url != "https://api.anthropic.com/v1/messages" || p.cfg.MaxTokens != 4096 {
		t.Errorf("defaults: %s %s %s %d", p.ID(), p.API(), p.url, p.cfg.MaxTokens)
	}
}
