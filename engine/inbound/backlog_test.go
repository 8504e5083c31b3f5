package inbound

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
)

// TestBacklog: with an adapter whose cursor moves with each message
// (DeliverAt, Telegram), a chat whose turn runs long holds no other chat:
// its flood is recorded and waits — far more than its queue — while
// another chat is answered; nothing recorded is left for a restart, even
// when deliveries race; once the turn ends the chat's messages are all
// handled, in order, before a later one.
func TestBacklog(t *testing.T) {
	release := make(chan struct{})
	block := func(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return gatewaytest.Reply("first done")(ctx, req, emit)
	}
	h := newChanHarness(t, "", channel.Common{GroupPolicy: "open"}, block, gatewaytest.Reply("hello owner"), gatewaytest.Reply("later answer"))
	const chat = "whatsapp/default/777@g.us"
	grp := func(id, text string, mentioned bool) engine.Inbound {
		return engine.Inbound{Channel: "whatsapp", Account: "default", ChatType: engine.ChatGroup, ChatID: "777@g.us", SenderID: owner, MessageID: id, Text: text, Mentioned: mentioned, Timestamp: time.Now()}
	}
	cur := func(i int) *cursorPut { return &cursorPut{key: "whatsapp/default/offset", value: i} }
	h.wa.Deliver(t, grp("G0", "claw, a long question", true)) // its turn holds the chat
	waitFor(t, func() bool { return len(h.model.Requests()) == 1 })
	const flood = 1200 // the queue holds 64
	for n := 1; n <= flood; n++ {
		if err := h.in.deliver(grp(fmt.Sprintf("G%d", n), fmt.Sprintf("chatter %d", n), false), cur(n)); err != nil {
			t.Fatalf("deliver %d: %v", n, err)
		}
	}
	var wg sync.WaitGroup
	for k := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.in.deliver(grp(fmt.Sprintf("R%d", k), fmt.Sprintf("race %d", k), false), cur(10000+k)); err != nil {
				t.Errorf("racing delivery %d: %v", k, err)
			}
		}()
	}
	wg.Wait()
	h.in.mu.Lock()
	waiting := h.in.waitingN + len(h.in.workers[chat])
	h.in.mu.Unlock()
	if inbox := h.inboxKeys(); len(inbox) != waiting+1 { // +1: G0, being handled
		t.Errorf("%d messages in the inbox, %d waiting in memory: some would wait for a restart", len(inbox), waiting)
	}
	// Another chat is answered meanwhile.
	h.wa.Deliver(t, dm(owner, "OWN1", "hello"))
	if sent := h.wa.WaitSent(t, 1); sent[0].Text != "hello owner" {
		t.Fatalf("the owner's DM: %+v", sent)
	}
	close(release)
	waitFor(t, func() bool { return len(h.inboxKeys()) == 0 })
	h.wa.Deliver(t, grp("LATE", "claw, a later question", true))
	waitFor(t, func() bool { return len(h.model.Requests()) == 3 })
	// The later answer's context is the flood's newest lines, in order.
	last := h.model.Requests()[2]
	text := fmt.Sprint(last.Messages[len(last.Messages)-1])
	if !strings.Contains(text, "chatter 1200") && !strings.Contains(text, "race ") {
		t.Errorf("the flood is not in the next answer's context:\n%s", text)
	}
}

// inboxKeys lists the message ids left in the inbox.
func (h *chanHarness) inboxKeys() []string {
	var out []string
	_ = h.db.ViewRecords(func(tx engine.RecordTx) error {
		return tx.ForEach(bucketInbox, "", func(k string, _ []byte) error { out = append(out, k); return nil })
	})
	return out
}
