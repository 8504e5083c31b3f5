package message

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/tool"
)

// fakeSender records the last send; it refuses the recipient "stranger".
type fakeSender struct {
	calls                      int
	channel, account, to, text string
}

func (f *fakeSender) Send(_ context.Context, ch, account, to, text string) (string, error) {
	f.calls++
	f.channel, f.account, f.to, f.text = ch, account, to, text
	if to == "stranger" {
		return "", errors.New("not someone this assistant may write to")
	}
	if ch == "" {
		ch = "last"
	}
	return ch + ":" + to, nil
}

func TestMessage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   tool.Env
		args  map[string]any
		want  string
		isErr bool
		// sent is what reached the sender: channel, to, text ("" none).
		sent string
	}{
		{"owner", tool.Env{}, map[string]any{"channel": "WhatsApp", "to": "+15551234567", "text": " hi "}, "Queued for whatsapp:+15551234567.", false, "whatsapp|+15551234567|hi"},
		{"openclawNames", tool.Env{}, map[string]any{"action": "send", "channel": "imessage", "target": "kate@example.com", "message": "late"}, "Queued for imessage:kate@example.com", false, "imessage|kate@example.com|late"},
		{"last", tool.Env{}, map[string]any{"text": "done"}, "Queued for last:", false, "||done"},
		{"stranger", tool.Env{}, map[string]any{"channel": "whatsapp", "to": "stranger", "text": "hi"}, "not sent: not someone", true, "whatsapp|stranger|hi"},
		{"empty", tool.Env{}, map[string]any{"to": "x", "text": "  "}, "text is empty", true, ""},
		{"tooLong", tool.Env{}, map[string]any{"text": strings.Repeat("é", 4001)}, "text is 4001 characters; at most 4000", true, ""},
		{"otherAction", tool.Env{}, map[string]any{"action": "delete", "text": "x"}, `action "delete" is not supported`, true, ""},
		{"subagent", tool.Env{Depth: 1}, map[string]any{"text": "hi"}, "a sub-agent cannot send messages", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSender{}
			raw, _ := json.Marshal(tc.args)
			r := Tool(Config{Sender: f}).Run(context.Background(), tc.env, raw)
			got := ""
			for _, b := range r.Content {
				got += b.Text
			}
			if r.IsError != tc.isErr || !strings.Contains(got, tc.want) {
				t.Errorf("%q (error %v), want %q (error %v)", got, r.IsError, tc.want, tc.isErr)
			}
			sent := ""
			if f.calls > 0 {
				sent = f.channel + "|" + f.to + "|" + f.text
			}
			if sent != tc.sent {
				t.Errorf("sent %q, want %q", sent, tc.sent)
			}
		})
	}
}
