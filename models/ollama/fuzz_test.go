package ollama

import (
	"fmt"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/models/providertest"
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
		providertest.CheckStream(t, rawProvider(t, ndjson(status, body)), userRequest("m", "hi"), providertest.Invariants{CallIDs: true, SaneUsage: true})
	})
}

// BenchmarkStream parses a 1,000-line reply.
func BenchmarkStream(b *testing.B) {
	var sb strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&sb, `{"model":"qwen3:1.7b","created_at":"2026-01-01T00:00:00.000000Z","message":{"role":"assistant","content":"tok%d "},"done":false}`+"\n", i)
	}
	sb.WriteString(`{"model":"qwen3:1.7b","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":1,"prompt_eval_count":10,"eval_count":1000}` + "\n")
	body := sb.String()
	p := rawProvider(b, ndjson(0, body))
	providertest.BenchmarkStream(b, p, userRequest("qwen3:1.7b", "hi"), len(body))
}
