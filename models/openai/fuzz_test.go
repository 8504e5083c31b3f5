package openai

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
	f.Add("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n", false)
	f.Add("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"x\",\"arguments\":\"{\\\"\"}}]}}]}\n\n"+
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"a\\\":1}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n"+
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":9}}}\n\ndata: [DONE]\n\n", false)
	f.Add("data: {\"error\":{\"message\":\"boom\",\"code\":502}}\n\n", false)
	f.Add("error: {\"code\":500,\"message\":\"x\"}\n\n", false)
	f.Add(`{"choices":[{"message":{"content":"x","tool_calls":[{"function":{"arguments":{}}}]}}]}`, true)
	f.Add(`{"error":"nope"}`, true)
	f.Fuzz(func(t *testing.T, body string, asJSON bool) {
		rt := rawTransport{body: body}
		if asJSON {
			rt.contentType = "application/json"
		}
		var rec recorder
		err := rawProvider(rt).Stream(context.Background(), userRequest("hi"), rec.emit)
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
	sb.WriteString("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n")
	for i := range 1000 {
		fmt.Fprintf(&sb, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1730000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d \"},\"finish_reason\":null}]}\n\n", i)
	}
	sb.WriteString("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
	sb.WriteString("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":1000,\"total_tokens\":1010}}\n\ndata: [DONE]\n\n")
	body := sb.String()
	p := New(Config{BaseURL: "http://127.0.0.1:1/v1", HTTPClient: &http.Client{Transport: rawTransport{body: body}}})
	req := userRequest("hi")
	n := 0
	emit := func(engine.Event) { n++ }
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Stream(context.Background(), req, emit); err != nil {
			b.Fatal(err)
		}
	}
}
