package openai

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/openai/openaitest"
	"github.com/openclaw-edge/edge/models/providertest"
)

func userRequest(text string) *engine.ChatRequest {
	return &engine.ChatRequest{Model: "gpt-test", Messages: []engine.Message{engine.UserText(text)}}
}

// harness is the provider for the conformance suite, with the cases only
// the chat completions API has.
func harness() providertest.Harness[openaitest.Reply] {
	return providertest.Harness[openaitest.Reply]{
		Model:      "gpt-test",
		ProviderID: "testai",
		Key:        "sk-secret-key-123",
		Path:       "/v1",
		KeyHeader:  "Authorization",
		KeyValue:   "Bearer %s",
		Serve: func(_ string, replies ...openaitest.Reply) (string, providertest.FakeServer) {
			srv := openaitest.NewServer(replies...)
			return srv.URL, srv
		},
		New: func(_ testing.TB, cfg providertest.Config) providertest.Streamer {
			return New(Config{ProviderID: cfg.ProviderID, BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Headers: cfg.Headers, HTTPClient: cfg.HTTPClient})
		},
		CallIDs:      "call_%d",
		KeepsCallIDs: true,
		Layouts: []providertest.Layout[openaitest.Reply]{
			{
				Name:  "usage with cached prompt tokens",
				Reply: openaitest.Reply{Text: "ok", Usage: engine.Usage{Input: 100, CacheRead: 900, Output: 5}},
				Text:  "ok",
				Stop:  engine.StopEnd,
				Usage: &engine.Usage{Input: 100, CacheRead: 900, Output: 5, TotalTokens: 1005},
			},
			{
				Name:  "content filter",
				Reply: openaitest.Reply{StopReason: engine.StopError},
				Stop:  engine.StopError,
			},
			{
				Name:  "invalid arguments become a JSON string",
				Reply: openaitest.Reply{ToolCalls: []engine.ToolCall{{ID: "c1", Name: "x", Arguments: json.RawMessage(`{"a":`)}}},
				Calls: []engine.ToolCall{{ID: "c1", Name: "x", Arguments: json.RawMessage(`"{\"a\":"`)}},
				Stop:  engine.StopToolUse,
			},
		},
		Errors: []providertest.ErrorCase[openaitest.Reply]{
			{Name: "401", Reply: openaitest.Reply{Status: 401, ErrorBody: `{"error":{"message":"Incorrect API key provided: sk-secret-key-123.","type":"invalid_request_error","code":"invalid_api_key"}}`}, Kind: engine.ErrAuth, Status: 401, Msg: "Incorrect API key provided: [redacted]"},
			{Name: "403", Reply: openaitest.Reply{Status: 403}, Kind: engine.ErrAuth, Status: 403, Msg: "Forbidden"},
			{Name: "402", Reply: openaitest.Reply{Status: 402}, Kind: engine.ErrBilling, Status: 402, Msg: ""},
			{Name: "429 insufficient_quota", Reply: openaitest.Reply{Status: 429, ErrorBody: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}`}, Kind: engine.ErrBilling, Status: 429, Msg: "exceeded your current quota"},
			{Name: "400 credits (openrouter)", Reply: openaitest.Reply{Status: 400, ErrorBody: `{"error":{"message":"This request requires more credits","code":402}}`}, Kind: engine.ErrBilling, Status: 400, Msg: "more credits"},
			{Name: "429", Reply: openaitest.Reply{Status: 429, ErrorBody: `{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"rate_limit_exceeded"}}`}, Kind: engine.ErrRateLimit, Status: 429, Msg: "Rate limit reached"},
			{Name: "400 context length", Reply: openaitest.Reply{Status: 400, ErrorBody: `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`}, Kind: engine.ErrContextOverflow, Status: 400, Msg: "maximum context length"},
			{Name: "400 llama-server context size", Reply: openaitest.Reply{Status: 400, ErrorBody: `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}`}, Kind: engine.ErrContextOverflow, Status: 400, Msg: "available context size"},
			{Name: "413 too many tokens", Reply: openaitest.Reply{Status: 413, ErrorBody: `{"error":{"message":"Request too large: too many tokens"}}`}, Kind: engine.ErrContextOverflow, Status: 413, Msg: ""},
			{Name: "413 image", Reply: openaitest.Reply{Status: 413, ErrorBody: `{"error":{"message":"Image too large: 25MB exceeds the 20MB limit"}}`}, Kind: engine.ErrImageTooLarge, Status: 413, Msg: "Image too large"},
			{Name: "404 model", Reply: openaitest.Reply{Status: 404, ErrorBody: `{"error":{"message":"The model 'nope' does not exist","type":"invalid_request_error","code":"model_not_found"}}`}, Kind: engine.ErrBadRequest, Status: 404, Msg: "does not exist"},
			{Name: "400 plain text body", Reply: openaitest.Reply{Status: 400, ErrorBody: "bad things\n  happened"}, Kind: engine.ErrBadRequest, Status: 400, Msg: "bad things happened"},
			{Name: "500", Reply: openaitest.Reply{Status: 500}, Kind: engine.ErrUnreachable, Status: 500, Msg: "Internal Server Error"},
			{Name: "503", Reply: openaitest.Reply{Status: 503, ErrorBody: `{"error":"model is loading"}`}, Kind: engine.ErrUnreachable, Status: 503, Msg: "model is loading"},
			{Name: "529 overloaded", Reply: openaitest.Reply{Status: 529, ErrorBody: `{"error":{"message":"Overloaded"}}`}, Kind: engine.ErrUnreachable, Status: 529, Msg: "Overloaded"},
			{Name: "long message trimmed", Reply: openaitest.Reply{Status: 400, ErrorBody: `{"error":{"message":"` + strings.Repeat("x", 1000) + `"}}`}, Kind: engine.ErrBadRequest, Status: 400, Msg: strings.Repeat("x", 299) + "…"},
			{Name: "mid-stream server error", Reply: openaitest.Reply{Text: "some text first", StreamError: true}, Kind: engine.ErrUnreachable, Status: 0, Msg: ""},
			{Name: "mid-stream rate limit", Reply: openaitest.Reply{Text: "some text first", StreamError: true, ErrorBody: `{"error":{"message":"Rate limit exceeded","code":429}}`}, Kind: engine.ErrRateLimit, Status: 0, Msg: "Rate limit exceeded"},
			{Name: "mid-stream context overflow", Reply: openaitest.Reply{Text: "some text first", StreamError: true, ErrorBody: `{"error":{"message":"context_length_exceeded"}}`}, Kind: engine.ErrContextOverflow, Status: 0, Msg: ""},
		},
		// What we send back after a tool call must be accepted; invalid
		// arguments go back as the model's raw text.
		ToolLoops: []providertest.ToolLoop[openaitest.Reply]{{
			Name: "raw arguments",
			Reply: openaitest.Reply{ToolCalls: []engine.ToolCall{
				{Name: "ls", Arguments: json.RawMessage(`{"path":"."}`)},
				{Name: "read", Arguments: json.RawMessage(`{"path":`)}, // invalid JSON
			}},
			Sent: func(t *testing.T, reqs []json.RawMessage) {
				var sent struct {
					Messages []struct {
						ToolCalls []struct {
							Function struct{ Arguments string }
						} `json:"tool_calls"`
					}
				}
				if err := json.Unmarshal(reqs[len(reqs)-1], &sent); err != nil {
					t.Fatal(err)
				}
				if got := sent.Messages[1].ToolCalls[1].Function.Arguments; got != `{"path":` {
					t.Errorf("raw arguments sent back as %q", got)
				}
			},
		}},
		Conversation: conversation,
		Echo:         "echo: Thanks!",
		Golden: []providertest.Golden{
			{Name: "conversation", Body: func() ([]byte, error) {
				return New(Config{BaseURL: "http://127.0.0.1:8080/v1"}).requestBody(conversation())
			}},
			{Name: "openai-minimal", Body: func() ([]byte, error) {
				return New(Config{}).requestBody(&engine.ChatRequest{Model: "gpt-5", Messages: []engine.Message{{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock("hi")}}}, MaxTokens: 64, Thinking: engine.ThinkingOff})
			}},
		},
	}
}

func TestConformance(t *testing.T) { providertest.Run(t, harness()) }

func rawProvider(rt providertest.RawTransport) *Provider {
	return New(Config{BaseURL: "http://127.0.0.1:1/v1", HTTPClient: &http.Client{Transport: rt}})
}

// Layouts other servers produce, written out by hand.
func TestStreamServerQuirks(t *testing.T) {
	tests := []struct {
		name     string
		rt       providertest.RawTransport
		text     string
		thinking string
		calls    string // JSON of the calls, ids blanked when random
		stop     engine.StopReason
		usage    engine.Usage
	}{
		{
			name: "ollama: whole calls without index, finish stop, reasoning field",
			rt: providertest.RawTransport{Body: `data: {"choices":[{"delta":{"role":"assistant","reasoning":"hmm"}}]}

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
			rt: providertest.RawTransport{Body: "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"ls\",\"arguments\":{\"a\":1}}}]},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n" +
				"data: [DONE]\n\n"},
			calls: `[{"id":"","name":"ls","arguments":{"a":1}}]`,
			stop:  engine.StopToolUse,
			usage: engine.Usage{Input: 3, Output: 2, TotalTokens: 5},
		},
		{
			name: "every call at index 0, told apart by id",
			rt: providertest.RawTransport{Body: "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"x\",\"arguments\":\"{}\"}}]}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"b\",\"function\":{\"name\":\"y\",\"arguments\":\"{\\\"k\\\"\"}}]}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\":2}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"},
			calls: `[{"id":"a","name":"x","arguments":{}},{"id":"b","name":"y","arguments":{"k":2}}]`,
			stop:  engine.StopToolUse,
		},
		{
			name: "empty arguments become {}, function_call finish",
			rt: providertest.RawTransport{Body: "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"now\"}}]}}]}\n\n" +
				"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"function_call\"}]}\n\ndata: [DONE]\n"},
			calls: `[{"id":"c","name":"now","arguments":{}}]`,
			stop:  engine.StopToolUse,
		},
		{
			name: "keep-alive comments, CRLF, null content",
			rt: providertest.RawTransport{Body: ": PROCESSING\r\n\r\ndata: {\"choices\":[{\"delta\":{\"content\":null,\"reasoning_content\":\"r\"}}]}\r\n\r\n" +
				"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\n\r\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\r\n\r\ndata: [DONE]\r\n\r\n"},
			thinking: "r",
			text:     "a",
			stop:     engine.StopLength,
		},
		{
			name: "non-streamed JSON completion",
			rt: providertest.RawTransport{ContentType: "application/json; charset=utf-8", Body: `{"id":"x","object":"chat.completion","choices":[{"index":0,
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
			var rec providertest.Recorder
			if err := rawProvider(tt.rt).Stream(context.Background(), userRequest("hi"), rec.Emit); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			end := rec.End(t)
			if got := rec.Joined(engine.EventTextDelta); got != tt.text {
				t.Errorf("text = %q, want %q", got, tt.text)
			}
			if got := rec.Joined(engine.EventThinkingDelta); got != tt.thinking {
				t.Errorf("thinking = %q, want %q", got, tt.thinking)
			}
			calls := rec.Calls()
			for i := range calls {
				if strings.HasPrefix(calls[i].ID, "call_") && len(calls[i].ID) == 29 {
					calls[i].ID = "" // random
				}
			}
			want := tt.calls
			if want == "" {
				want = "null"
			}
			if got := providertest.JSONOf(calls); got != want {
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
	var rec providertest.Recorder
	if err := rawProvider(providertest.RawTransport{Body: body}).Stream(context.Background(), userRequest("hi"), rec.Emit); err != nil {
		t.Fatal(err)
	}
	calls := rec.Calls()
	if len(calls) != 2 || calls[0].ID == "" || calls[0].ID == calls[1].ID {
		t.Fatalf("calls need distinct ids: %s", providertest.JSONOf(calls))
	}
}

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
