package gemini

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/models/providertest"
)

// FuzzStream feeds arbitrary bytes as the response body: Stream must never
// panic, and must either return a *engine.ModelError with no message end
// emitted, or return nil after exactly one message end, the last event.
func FuzzStream(f *testing.F) {
	f.Add("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"hi\"}],\"role\":\"model\"},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":3}}\r\n\r\n", false)
	f.Add("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\",\"thought\":true,\"thoughtSignature\":\"s\"},{\"functionCall\":{\"name\":\"ls\",\"args\":{\"a\":[1]}}}]}}],\"responseId\":\"r/1\"}\n\n"+
		"data: {\"candidates\":[{\"finishReason\":\"MAX_TOKENS\"}],\"usageMetadata\":{\"promptTokenCount\":-4,\"cachedContentTokenCount\":99}}\n\n", false)
	f.Add("data: {\"error\":{\"code\":429,\"message\":\"Resource exhausted\",\"status\":\"RESOURCE_EXHAUSTED\"}}\n\n", false)
	f.Add("data: {\"promptFeedback\":{\"blockReason\":\"SAFETY\"}}\n\n", false)
	f.Add("data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"x\",\"args\":\"oops\"}}]},\"finishReason\":\"STOP\"}]}\n", false)
	f.Add(`[{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"STOP"}]}]`, true)
	f.Add(`[{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT"}}]`, true)
	f.Fuzz(func(t *testing.T, body string, asJSON bool) {
		rt := providertest.RawTransport{Body: body}
		if asJSON {
			rt.ContentType = "application/json"
		}
		providertest.CheckStream(t, rawProvider(rt), userRequest("gemini-2.5-flash", "hi"), providertest.Invariants{CallIDs: true, ObjectArguments: true, SaneUsage: true})
	})
}

// FuzzToolSchema feeds arbitrary JSON schemas: toolSchema must never panic
// and what it returns is an object schema with properties, or nil.
func FuzzToolSchema(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":["string","null"],"enum":["x",""]}},"required":["a","b"]}`)
	f.Add(`{"properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"$ref":"#/$defs/A"}}}`)
	f.Add(`{"type":"object","properties":{"a":{"anyOf":[{"type":"null"},{"items":{"const":3}}]}}}`)
	f.Add(`{"allOf":[{"allOf":[{"properties":{"x":{}}}]}]}`)
	f.Fuzz(func(t *testing.T, schema string) {
		s, err := toolSchema(json.RawMessage(schema))
		if err != nil || s == nil {
			return
		}
		if s["type"] != "object" {
			t.Fatalf("type %v", s["type"])
		}
		if props, _ := s["properties"].(map[string]any); len(props) == 0 {
			t.Fatalf("no properties: %v", s)
		}
		if _, err := marshal(s); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkStream parses a 1,000-chunk stream.
func BenchmarkStream(b *testing.B) {
	var sb strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&sb, "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"tok%d \"}],\"role\": \"model\"},\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 10,\"totalTokenCount\": 10,\"promptTokensDetails\": [{\"modality\": \"TEXT\",\"tokenCount\": 10}]},\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"mL9jaMn8Ks2nz7IPxb6l4Aw\"}\r\n\r\n", i)
	}
	sb.WriteString("data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"\"}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 10,\"candidatesTokenCount\": 1000,\"totalTokenCount\": 1010},\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"mL9jaMn8Ks2nz7IPxb6l4Aw\"}\r\n\r\n")
	body := sb.String()
	p := rawProvider(providertest.RawTransport{Body: body})
	providertest.BenchmarkStream(b, p, userRequest("gemini-2.5-flash", "hi"), len(body))
}
