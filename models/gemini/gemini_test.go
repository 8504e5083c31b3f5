package gemini

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/gemini/geminitest"
	"github.com/openclaw-edge/edge/models/providertest"
)

func userRequest(model, text string) *engine.ChatRequest {
	return &engine.ChatRequest{Model: model, Messages: []engine.Message{engine.UserText(text)}}
}

// harness is the provider for the conformance suite, with the cases only
// Gemini's API has.
func harness() providertest.Harness[geminitest.Reply] {
	const key = "AIzaSy-secret-key-123"
	return providertest.Harness[geminitest.Reply]{
		Model:      "gemini-2.5-flash",
		ProviderID: "google",
		Key:        key,
		Path:       "/v1beta",
		Thinking:   engine.ThinkingMedium,
		KeyHeader:  "x-goog-api-key",
		KeyValue:   "%s",
		Serve: func(key string, replies ...geminitest.Reply) (string, providertest.FakeServer) {
			srv := geminitest.NewServer(replies...)
			if key != "" {
				srv.RequireKey(key)
			}
			srv.AddModel(geminitest.Model{Name: "gemini-tiny", InputTokenLimit: 10})
			return srv.URL, srv
		},
		New: func(_ testing.TB, cfg providertest.Config) providertest.Streamer {
			return New(Config{ProviderID: cfg.ProviderID, BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Headers: cfg.Headers, HTTPClient: cfg.HTTPClient})
		},
		// Gemini sends no call ids: they are made from the response id.
		CallIDs: "call_resp1_%d",
		Layouts: []providertest.Layout[geminitest.Reply]{
			{
				Name:  "thoughts not asked for are not sent",
				Reply: geminitest.Reply{Thinking: "hidden", Text: "Hi!"},
				Text:  "Hi!",
				Stop:  engine.StopEnd,
			},
			{
				Name:  "usage with cache and thoughts",
				Reply: geminitest.Reply{Text: "ok", Usage: engine.Usage{Input: 100, CacheRead: 900, Output: 50}, ThoughtTokens: 45},
				Text:  "ok",
				Stop:  engine.StopEnd,
				Usage: &engine.Usage{Input: 100, CacheRead: 900, Output: 50, TotalTokens: 1050},
			},
			{
				Name:  "safety",
				Reply: geminitest.Reply{StopReason: engine.StopError},
				Stop:  engine.StopError,
			},
			{
				Name:  "malformed function call",
				Reply: geminitest.Reply{FinishReason: "MALFORMED_FUNCTION_CALL"},
				Stop:  engine.StopError,
			},
			{
				Name:  "prompt blocked",
				Reply: geminitest.Reply{BlockReason: "PROHIBITED_CONTENT"},
				Stop:  engine.StopError,
			},
			{
				Name:  "model without thinking",
				Model: "gemini-2.0-flash",
				Reply: geminitest.Reply{Text: "plain", ToolCalls: []engine.ToolCall{{Name: "ls"}}},
				Text:  "plain",
				Calls: []engine.ToolCall{{ID: "call_resp1_1", Name: "ls", Arguments: json.RawMessage(`{}`)}},
				Stop:  engine.StopToolUse,
			},
		},
		Errors: []providertest.ErrorCase[geminitest.Reply]{
			{Name: "API key not valid", Key: "AIza-wrong", Kind: engine.ErrAuth, Status: 400, Msg: "API key not valid"},
			{Name: "no API key", Key: "-", Kind: engine.ErrAuth, Status: 403, Msg: "unregistered callers"},
			{Name: "403 permission denied", Reply: geminitest.Reply{Status: 403, ErrorBody: geminitest.ErrorBody(403, "PERMISSION_DENIED", "Generative Language API has not been used in project 123 before or it is disabled.")}, Kind: engine.ErrAuth, Status: 403, Msg: "has not been used"},
			{Name: "expired key", Reply: geminitest.Reply{Status: 400, ErrorBody: geminitest.ErrorBody(400, "INVALID_ARGUMENT", "API key expired. Please renew the API key.", map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_EXPIRED"})}, Kind: engine.ErrAuth, Status: 400},
			{Name: "429 per minute", Reply: geminitest.Reply{Status: 429, ErrorBody: geminitest.ErrorBody(429, "RESOURCE_EXHAUSTED", quotaText+"10, Model: gemini-2.5-flash\nPlease retry in 37.5s.", quota("GenerateRequestsPerMinutePerProjectPerModel-FreeTier"), retry)}, Kind: engine.ErrRateLimit, Status: 429, Msg: "exceeded your current quota"},
			{Name: "429 plain", Reply: geminitest.Reply{Status: 429}, Kind: engine.ErrRateLimit, Status: 429, Msg: "Resource has been exhausted"},
			{Name: "429 per day", Reply: geminitest.Reply{Status: 429, ErrorBody: geminitest.ErrorBody(429, "RESOURCE_EXHAUSTED", quotaText+"250, Model: gemini-2.5-flash", quota("GenerateRequestsPerDayPerProjectPerModel-FreeTier"), retry)}, Kind: engine.ErrBilling, Status: 429},
			{Name: "429 no free tier", Reply: geminitest.Reply{Status: 429, ErrorBody: geminitest.ErrorBody(429, "RESOURCE_EXHAUSTED", quotaText+"0, Model: gemini-2.5-pro")}, Kind: engine.ErrBilling, Status: 429},
			{Name: "429 prepayment", Reply: geminitest.Reply{Status: 429, ErrorBody: geminitest.ErrorBody(429, "RESOURCE_EXHAUSTED", "Your prepayment credits are depleted. Please go to AI Studio at https://ai.studio/projects to manage your project and billing.")}, Kind: engine.ErrBilling, Status: 429},
			{Name: "400 free tier not in country", Reply: geminitest.Reply{Status: 400, ErrorBody: geminitest.ErrorBody(400, "FAILED_PRECONDITION", "Gemini API free tier is not available in your country. Please enable billing on your project in Google AI Studio.")}, Kind: engine.ErrBilling, Status: 400},
			{Name: "input token count", Reply: geminitest.Reply{Status: 400, ErrorBody: geminitest.ErrorBody(400, "INVALID_ARGUMENT", "The input token count (1234567) exceeds the maximum number of tokens allowed (1048576).")}, Kind: engine.ErrContextOverflow, Status: 400, Msg: "input token count"},
			{Name: "over the model's limit (server check)", Model: "gemini-tiny", Kind: engine.ErrContextOverflow, Status: 400, Msg: "exceeds the maximum number of tokens allowed (10)"},
			{Name: "payload too large with an image", Image: true, Reply: geminitest.Reply{Status: 400, ErrorBody: geminitest.ErrorBody(400, "INVALID_ARGUMENT", "Request payload size exceeds the limit: 20971520 bytes.")}, Kind: engine.ErrImageTooLarge, Status: 400},
			{Name: "payload too large without images", Reply: geminitest.Reply{Status: 400, ErrorBody: geminitest.ErrorBody(400, "INVALID_ARGUMENT", "Request payload size exceeds the limit: 20971520 bytes.")}, Kind: engine.ErrContextOverflow, Status: 400},
			{Name: "unknown model", Model: "gemini-9-ultra", Kind: engine.ErrNoModel, Status: 404, Msg: "models/gemini-9-ultra is not found"},
			{Name: "404 wrong base URL", Reply: geminitest.Reply{Status: 404}, Kind: engine.ErrUnreachable, Status: 404, Msg: "Requested entity was not found."},
			{Name: "400 invalid argument", Reply: geminitest.Reply{Status: 400}, Kind: engine.ErrBadRequest, Status: 400, Msg: "invalid argument"},
			{Name: "500", Reply: geminitest.Reply{Status: 500}, Kind: engine.ErrUnreachable, Status: 500, Msg: "internal error"},
			{Name: "503 overloaded", Reply: geminitest.Reply{Status: 503}, Kind: engine.ErrUnreachable, Status: 503, Msg: "overloaded"},
			{Name: "504", Reply: geminitest.Reply{Status: 504}, Kind: engine.ErrUnreachable, Status: 504},
			{Name: "plain text 502", Reply: geminitest.Reply{Status: 502, ErrorBody: "<html>\n  Bad Gateway\n</html>"}, Kind: engine.ErrUnreachable, Status: 502, Msg: "<html> Bad Gateway </html>"},
			{Name: "long message trimmed", Reply: geminitest.Reply{Status: 400, ErrorBody: geminitest.ErrorBody(400, "INVALID_ARGUMENT", strings.Repeat("x", 1000))}, Kind: engine.ErrBadRequest, Status: 400, Msg: strings.Repeat("x", 299) + "…"},
			{Name: "mid-stream error", Reply: geminitest.Reply{Text: "some text first", StreamError: true, Status: 500}, Kind: engine.ErrUnreachable, Msg: "internal error"},
			{Name: "mid-stream rate limit", Reply: geminitest.Reply{Text: "some text first", StreamError: true, Status: 429}, Kind: engine.ErrRateLimit},
			{Name: "key echoed is redacted", Reply: geminitest.Reply{Status: 400, ErrorBody: geminitest.ErrorBody(400, "INVALID_ARGUMENT", "bad key "+key)}, Kind: engine.ErrBadRequest, Status: 400, Msg: "bad key [redacted]"},
		},
		ToolLoops:    []providertest.ToolLoop[geminitest.Reply]{toolLoop(engine.ThinkingHigh), toolLoop(engine.ThinkingOff)},
		Conversation: conversation,
		Echo:         "echo: Thanks!",
		Golden: []providertest.Golden{
			{Name: "conversation", Body: func() ([]byte, error) { return requestBody(Config{}, conversation()) }},
			{Name: "minimal", Body: func() ([]byte, error) {
				return requestBody(Config{MaxTokens: 64}, &engine.ChatRequest{Model: "gemini-2.5-flash", Messages: []engine.Message{{Role: engine.RoleUser, Content: []engine.Block{engine.TextBlock("hi")}}}})
			}},
		},
	}
}

func TestConformance(t *testing.T) { providertest.Run(t, harness()) }

// requestBody is the body a provider with cfg sends for req.
func requestBody(cfg Config, req *engine.ChatRequest) ([]byte, error) {
	greq, err := New(cfg).request(req)
	if err != nil {
		return nil, err
	}
	return marshal(greq)
}

// toolLoop goes through the validating server on a gemini-3 model: the
// thought signature must come back on the call.
func toolLoop(thinking engine.ThinkingLevel) providertest.ToolLoop[geminitest.Reply] {
	return providertest.ToolLoop[geminitest.Reply]{
		Name:  string(thinking),
		Model: "gemini-3-pro-preview",
		Level: thinking,
		Reply: geminitest.Reply{Thinking: "I should list and read.", ToolCalls: []engine.ToolCall{
			{Name: "ls", Arguments: json.RawMessage(`{"path":"."}`)},
			{Name: "read", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
		}},
		Tools: []engine.ToolSpec{{Name: "ls", Description: "list", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}, {Name: "read"}},
		Assistant: func(rec *providertest.Recorder) engine.Message {
			m := rec.Message()
			m.API = API
			return m
		},
		Sent: func(t *testing.T, reqs []json.RawMessage) {
			sig := "skip_thought_signature_validator" // no thought text: the agent drops the signature
			if thinking == engine.ThinkingHigh {
				sig = "Z2VtaW5pdGVzdC1zaWduYXR1cmUtcmVzcDE=" // the one the server issued
			}
			if !strings.Contains(string(reqs[1]), `"thoughtSignature":"`+sig+`"`) {
				t.Errorf("signature %s not sent back: %s", sig, reqs[1])
			}
		},
	}
}

func rawProvider(rt providertest.RawTransport) *Provider {
	return New(Config{BaseURL: "http://127.0.0.1:1/v1beta", HTTPClient: &http.Client{Transport: rt}})
}

// Chunks written out by hand, as Gemini sends them.
func TestStreamWire(t *testing.T) {
	tests := []struct {
		name  string
		rt    providertest.RawTransport
		want  string // the events, compactly
		stop  engine.StopReason
		usage engine.Usage
	}{
		{
			name: "thought signature on the call goes out before it, ids from Gemini kept",
			rt: providertest.RawTransport{Body: "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Plan: list.\",\"thought\": true}],\"role\": \"model\"},\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 9,\"totalTokenCount\": 9},\"modelVersion\": \"gemini-3-pro-preview\",\"responseId\": \"Ab_c-9\"}\r\n\r\n" +
				"data: {\"candidates\": [{\"content\": {\"parts\": [{\"functionCall\": {\"name\": \"ls\",\"args\": {\"path\": \".\"}},\"thoughtSignature\": \"c2lnMQ==\"},{\"functionCall\": {\"id\": \"fc-7\",\"name\": \"now\"}}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 9,\"candidatesTokenCount\": 5,\"thoughtsTokenCount\": 20,\"totalTokenCount\": 34},\"responseId\": \"Ab_c-9\"}\r\n\r\n"},
			want:  `thinking("Plan: list.") thinking(""+sig c2lnMQ==) call(call_Ab_c-9_1 ls {"path":"."}) call(fc-7 now {}) end`,
			stop:  engine.StopToolUse,
			usage: engine.Usage{Input: 9, Output: 25, TotalTokens: 34},
		},
		{
			name: "signature on a text part after text is dropped, usage after the finish chunk",
			rt: providertest.RawTransport{Body: "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}],\"role\":\"model\"}}]}\n\n" +
				"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"lo\",\"thoughtSignature\":\"c2ln\"}],\"role\":\"model\"},\"finishReason\":\"STOP\"}]}\n\n" +
				"data: {\"usageMetadata\":{\"promptTokenCount\":4,\"cachedContentTokenCount\":2,\"candidatesTokenCount\":2,\"toolUsePromptTokenCount\":1}}\n\n"},
			want:  `text("Hel") text("lo") end`,
			stop:  engine.StopEnd,
			usage: engine.Usage{Input: 3, CacheRead: 2, Output: 2, TotalTokens: 7},
		},
		{
			name: "JSON array answer (no alt=sse)",
			rt: providertest.RawTransport{ContentType: "application/json; charset=UTF-8", Body: `[{"candidates":[{"content":{"parts":[{"text":"whole"}],"role":"model"}}]},
{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":1,"totalTokenCount":3}}]`},
			want:  `text("whole") end`,
			stop:  engine.StopLength,
			usage: engine.Usage{Input: 2, Output: 1, TotalTokens: 3},
		},
		{
			name:  "generateContent object answer",
			rt:    providertest.RawTransport{ContentType: "application/json", Body: `{"candidates":[{"content":{"parts":[{"text":"one"}]},"finishReason":"STOP"}]}`},
			want:  `text("one") end`,
			stop:  engine.StopEnd,
			usage: engine.Usage{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec providertest.Recorder
			if err := rawProvider(tt.rt).Stream(context.Background(), userRequest("gemini-3-pro-preview", "hi"), rec.Emit); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			end := rec.End(t)
			if got := compact(rec.Events); got != tt.want {
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
			out = append(out, "text("+providertest.JSONOf(e.Text)+")")
		case engine.EventThinkingDelta:
			s := "thinking(" + providertest.JSONOf(e.Text)
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

func TestRequestLine(t *testing.T) {
	var got *http.Request
	srv := geminitest.NewServer()
	defer srv.Close()
	srv.RequireKey("k1")
	client := &http.Client{Transport: providertest.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = r.Clone(r.Context())
		return http.DefaultTransport.RoundTrip(r)
	})}
	var rec providertest.Recorder
	p := New(Config{BaseURL: srv.URL + "/", APIKey: "k1", Headers: map[string]string{"X-Goog-User-Project": "p1"}, HTTPClient: client})
	if err := p.Stream(context.Background(), userRequest("models/gemini-2.5-flash", "hi"), rec.Emit); err != nil {
		t.Fatal(err)
	}
	if got.URL.Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || got.URL.RawQuery != "alt=sse" ||
		got.Header.Get("x-goog-api-key") != "k1" || got.Header.Get("X-Goog-User-Project") != "p1" {
		t.Errorf("request %s %v", got.URL, got.Header)
	}
	if rec.Joined(engine.EventTextDelta) != "echo: hi" {
		t.Errorf("echo = %q", rec.Joined(engine.EventTextDelta))
	}
	if p := New(Config{}); p.ID() != "gemini" || p.API() != "gemini" || p.streamURL("x") != DefaultBaseURL+"/models/x:streamGenerateContent?alt=sse" {
		t.Errorf("defaults: %s %s %s", p.ID(), p.API(), p.streamURL("x"))
	}
}

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
		var rec providertest.Recorder
		err := New(Config{BaseURL: srv.URL}).Stream(context.Background(), req, rec.Emit)
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
	var rec providertest.Recorder
	if err := New(Config{BaseURL: srv.URL}).Stream(context.Background(), req, rec.Emit); err != nil {
		t.Fatal(err)
	}
	if body := string(srv.Requests()[0]); strings.Contains(body, "anthropic") || !strings.Contains(body, skipSignature) {
		t.Errorf("request: %s", body)
	}
}
