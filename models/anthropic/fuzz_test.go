package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
)

// FuzzStream feeds arbitrary bytes as the response body: Stream must never
// panic, and must either return a *engine.ModelError with no message end
// emitted, or return nil after exactly one message end, the last event.
func FuzzStream(f *testing.F) {
	f.Add("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":4}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	f.Add("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"x\"}}\n\ndata: {\"type\":\"message_stop\"}\n")
	f.Add("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
	f.Add("event: error\ndata: not json\n\n")
	f.Add("event: ping\ndata: {\"type\": \"ping\"}\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		var rec recorder
		err := rawProvider(rawTransport{body: body}).Stream(context.Background(), userRequest("hi"), rec.emit)
		if err := checkInvariants(err, rec.events); err != nil {
			t.Fatal(err)
		}
	})
}

func checkInvariants(err error, events []engine.Event) error {
	ends := 0
	for _, e := range events {
		if e.Type == engine.EventMessageEnd {
			ends++
		}
		if e.Type == engine.EventToolCall && (e.ToolCall == nil || len(e.ToolCall.Arguments) == 0) {
			return fmt.Errorf("tool call event without arguments: %+v", e)
		}
	}
	if err != nil {
		var me *engine.ModelError
		if !errors.As(err, &me) {
			return fmt.Errorf("error %v is %T, not *engine.ModelError", err, err)
		}
		if ends != 0 {
			return fmt.Errorf("error %v after a message end", err)
		}
		return nil
	}
	if ends != 1 || events[len(events)-1].Type != engine.EventMessageEnd {
		return fmt.Errorf("nil error with %d message ends: %+v", ends, events)
	}
	if events[len(events)-1].Usage == nil {
		return fmt.Errorf("message end without usage")
	}
	return nil
}

// BenchmarkStream parses a 1,000-delta stream.
func BenchmarkStream(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":10,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1}}}\n\n")
	sb.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := range 1000 {
		fmt.Fprintf(&sb, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"tok%d \"}}\n\n", i)
	}
	sb.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	sb.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":1000}}\n\n")
	sb.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	body := sb.String()
	p := New(Config{BaseURL: "http://127.0.0.1:1", HTTPClient: &http.Client{Transport: rawTransport{body: body}}})
	req := userRequest("hi")
	emit := func(engine.Event) {}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Stream(context.Background(), req, emit); err != nil {
			b.Fatal(err)
		}
	}
}
