package inbound

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
)

// streamer is the WhatsApp fake with a preview (channel.Streamer): it
// reads the deltas, takes delay to "send" the preview p1, and records
// what it deletes.
type streamer struct {
	*gatewaytest.Adapter
	delay time.Duration
	mu    sync.Mutex
	text  string
	gone  []string
}

func (s *streamer) Stream(ctx context.Context, to channel.Outbound, deltas <-chan string) (channel.Receipt, error) {
	var b strings.Builder
	for d := range deltas {
		b.WriteString(d)
	}
	time.Sleep(s.delay)
	s.mu.Lock()
	s.text = b.String()
	s.mu.Unlock()
	return channel.Receipt{MessageID: "p1"}, nil
}

func (s *streamer) Unsend(ctx context.Context, chatID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone = append(s.gone, id)
	return nil
}

func (s *streamer) deleted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.gone...)
}

// TestPreview: a streamed reply replaces its preview; a silent one
// deletes it; one whose preview outlasted previewWait is sent as a new
// message and the preview is deleted once it exists.
func TestPreview(t *testing.T) {
	t.Run("the reply replaces the preview", func(t *testing.T) {
		var s *streamer
		h := newChanHarnessWith(t, "", channel.Common{}, nil, func(a *gatewaytest.Adapter) channel.Adapter { s = &streamer{Adapter: a}; return s },
			gatewaytest.Reply("A reply long enough to be previewed."))
		h.wa.Deliver(t, dm(owner, "P1", "hi"))
		sent := h.wa.WaitSent(t, 1)
		if sent[0].Replace != "p1" || sent[0].Text != "A reply long enough to be previewed." {
			t.Errorf("sent %+v", sent[0])
		}
		if s.text != "A reply long enough to be previewed." || len(s.deleted()) != 0 {
			t.Errorf("preview %q, deleted %v", s.text, s.deleted())
		}
	})
	t.Run("a silent reply deletes the preview", func(t *testing.T) {
		var s *streamer
		h := newChanHarnessWith(t, "", channel.Common{}, nil, func(a *gatewaytest.Adapter) channel.Adapter { s = &streamer{Adapter: a}; return s },
			gatewaytest.Reply("NO_REPLY"))
		sends := 0
		h.wa.Mu.Lock()
		h.wa.Fail = func(channel.Outbound) error { sends++; return nil } // called under Mu
		h.wa.Mu.Unlock()
		h.wa.Deliver(t, dm(owner, "P2", "hi"))
		waitFor(t, func() bool { return len(s.deleted()) == 1 })
		time.Sleep(50 * time.Millisecond)
		h.wa.Mu.Lock()
		defer h.wa.Mu.Unlock()
		if sends != 0 {
			t.Errorf("a silent reply sent %d messages", sends)
		}
	})
	t.Run("text before a tool call, then an empty reply: the preview goes", func(t *testing.T) {
		var s *streamer
		pre := func(_ context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
			emit(engine.Event{Type: engine.EventTextDelta, Text: "Let me look that up for you, one moment please."})
			raw, _ := json.Marshal(map[string]string{"path": "MEMORY.md"})
			emit(engine.Event{Type: engine.EventToolCall, ToolCall: &engine.ToolCall{ID: "c1", Name: "read", Arguments: raw}})
			emit(engine.Event{Type: engine.EventMessageEnd, StopReason: engine.StopToolUse, Usage: &engine.Usage{Input: 5, Output: 5, TotalTokens: 10}})
			return nil
		}
		empty := func(_ context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
			emit(engine.Event{Type: engine.EventMessageEnd, StopReason: engine.StopEnd, Usage: &engine.Usage{Input: 5, Output: 1, TotalTokens: 6}})
			return nil
		}
		h := newChanHarnessWith(t, "", channel.Common{}, nil, func(a *gatewaytest.Adapter) channel.Adapter { s = &streamer{Adapter: a}; return s }, pre, empty)
		h.wa.Deliver(t, dm(owner, "P4", "what is in memory?"))
		waitFor(t, func() bool { return len(s.deleted()) == 1 })
	})
	t.Run("a preview slower than previewWait: a new message, the preview deleted later", func(t *testing.T) {
		defer func(d time.Duration) { previewWait = d }(previewWait)
		previewWait = 50 * time.Millisecond
		var s *streamer
		h := newChanHarnessWith(t, "", channel.Common{}, nil, func(a *gatewaytest.Adapter) channel.Adapter {
			s = &streamer{Adapter: a, delay: 400 * time.Millisecond}
			return s
		},
			gatewaytest.Reply("A reply whose preview was slow."))
		h.wa.Deliver(t, dm(owner, "P3", "hi"))
		sent := h.wa.WaitSent(t, 1)
		if sent[0].Replace != "" {
			t.Errorf("replaced a preview that was not there yet: %+v", sent[0])
		}
		waitFor(t, func() bool { return len(s.deleted()) == 1 })
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
