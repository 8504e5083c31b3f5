package ollama

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
)

// FuzzStream feeds arbitrary bytes as the /api/chat answer: Stream must
// never panic, and must either return a *engine.ModelError with no message
// end emitted, or return nil after exactly one message end, the last event.
func FuzzStream(f *testing.F) {
	f.Add(`{"message":{"role":"assistant","content":"hi"},"done":false}`+"\n"+`{"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":1}`+"\n", 200)
	f.Add(`{"message":{"role":"assistant","content":"","thinking":"x","tool_calls":[{"function":{"name":"ls","arguments":{"a":[1,{"b":null}]}}}]},"done":false}`+"\n"+`{"done":true,"done_reason":"length"}`+"\n", 200)
	f.Add(`{"message":{"content":"a"}}`+"\n"+`{"error":"llama runner process has terminated"}`+"\n", 200)
	f.Add(`{"error":"model 'x' not found"}`, 404)
	f.Add(`{"error":"unauthorized","signin_url":"https://ollama.com/connect"}`, 401)
	f.Add("not json\n", 500)
	f.Add(`{"message":{"tool_calls":[{"function":{"arguments":"oops"}}]},"done":true}`, 200)
	f.Add(`{"done":true}{"done":true}`+"\n"+`{"done":true,"prompt_eval_count":-5}`, 200)
	f.Fuzz(func(t *testing.T, body string, status int) {
		if status < 100 || status > 599 {
			status = 200
		}
		var rec recorder
		err := rawProvider(t, rawTransport{status: status, body: body}).Stream(context.Background(), userRequest("m", "hi"), rec.emit)
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
		if e.Type == engine.EventToolCall && (e.ToolCall == nil || len(e.ToolCall.Arguments) == 0 || e.ToolCall.ID == "") {
			return fmt.Errorf("tool call event without id or arguments: %+v", e)
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
	if u := events[len(events)-1].Usage; u == nil || u.Input < 0 || u.Output < 0 {
		return fmt.Errorf("message end without sane usage: %+v", u)
	}
	return nil
}

// BenchmarkStream parses a 1,000-line reply.
func BenchmarkStream(b *testing.B) {
	var sb strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&sb, `{"model":"qwen3:1.7b","created_at":"2026-01-01T00:00:00.000000Z","message":{"role":"assistant","content":"tok%d "},"done":false}`+"\n", i)
	}
	sb.WriteString(`{"model":"qwen3:1.7b","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":1,"prompt_eval_count":10,"eval_count":1000}` + "\n")
	body := sb.String()
	p := rawProvider(b, rawTransport{body: body})
	req := userRequest("qwen3:1.7b", "hi")
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

var _ http.RoundTripper = rawTransport{}
