package openai

import (
	"fmt"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/models/providertest"
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
		rt := providertest.RawTransport{Body: body}
		if asJSON {
			rt.ContentType = "application/json"
		}
		providertest.CheckStream(t, rawProvider(rt), userRequest("hi"), providertest.Invariants{})
	})
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
	p := rawProvider(providertest.RawTransport{Body: body})
	providertest.BenchmarkStream(b, p, userRequest("hi"), len(body))
}
