package prompt

import (
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
)

// BenchmarkUserMessageBytes reports what one stored user message adds to
// every later request (issue 24: history is re-sent each turn), in bytes,
// for the default setup's two common cases: the owner on the CLI and the
// owner in a WhatsApp DM, the first message of a session (with the
// runtime line) and a later one.
//
//	go test -run '^$' -bench BenchmarkUserMessageBytes ./engine/prompt/
func BenchmarkUserMessageBytes(b *testing.B) {
	own := true
	ts := time.Date(2026, 11, 29, 8, 55, 53, 0, time.UTC)
	rt := "Runtime: agent=main | session=agent:main:main | host=openclaw | os=linux (arm64) | channel=cli | model=qwen3-1.7b | thinking=off"
	const text = "Please tell me a short story about a red ball."
	for _, c := range []struct {
		name string
		in   engine.Inbound
		t    Trusted
	}{
		{"cli", engine.Inbound{Channel: "cli", ChatType: engine.ChatDirect, MessageID: "m-1a2b3c", Text: text},
			Trusted{Channel: "cli", Provider: "cli", ChatType: engine.ChatDirect}},
		{"whatsapp-dm", engine.Inbound{Channel: "whatsapp", Account: "default", ChatType: engine.ChatDirect, ChatID: "15551234567@s.whatsapp.net",
			SenderID: "+15551234567", SenderName: "Ann", MessageID: "3EB0C767D26A1B2C", Text: text},
			Trusted{Channel: "whatsapp", Provider: "whatsapp", ChatType: engine.ChatDirect, AccountID: "default", SenderIsOwner: &own}},
	} {
		var first, later int
		for range b.N {
			t := c.t
			t.Timestamp = ts
			t.Context = NewTurnContext(nil, rt, nil)
			m1 := UserMessage(c.in, t)
			hist := []engine.Message{engine.UserText(m1), {Role: engine.RoleAssistant, Content: []engine.Block{{Type: engine.BlockText, Text: "Once upon a time…"}}}}
			t.Context = NewTurnContext(hist, rt, nil)
			t.Timestamp = ts.Add(time.Minute)
			t.SenderShown = SenderShown(hist, c.in, t)
			m2 := UserMessage(c.in, t)
			first, later = len(m1)-len(text), len(m2)-len(text)
		}
		b.ReportMetric(float64(first), c.name+"-first-meta-bytes")
		b.ReportMetric(float64(later), c.name+"-later-meta-bytes")
	}
}
