package inbound

import (
	"context"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
)

// previewWait bounds how long the end of a turn waits for its preview's
// last send or edit (the reply is queued either way); a variable so tests
// can shorten it.
var previewWait = 10 * time.Second

// preview is a turn's streamed reply on an adapter that shows one
// (channel.Streamer: Telegram's streamMode partial). The turn's text
// deltas go to the adapter, which owns the throttling and the edits; at
// the end the reply's first chunk replaces the preview (finish), or a
// reply that turned out silent deletes it (drop). nil: no preview.
type preview struct {
	mu     sync.Mutex
	ch     chan string
	closed bool
	done   chan string
	id     string
	over   bool
	got    bool // done was read: id is the preview's (or "": none)
}

// startPreview starts the preview of a reply to m, or returns nil.
func (c *Inbound) startPreview(ctx context.Context, ca *chanAccount, m engine.Inbound) *preview {
	s, ok := ca.Adapter.(channel.Streamer)
	if !ok {
		return nil
	}
	p := &preview{ch: make(chan string, 1024), done: make(chan string, 1)}
	to := channel.Outbound{Channel: m.Channel, Account: m.Account, ChatID: m.ChatID, ChatType: m.ChatType, Thread: m.Thread}
	if m.ChatType != engine.ChatDirect {
		to.ReplyTo = m.MessageID // as outbox.Records quotes in groups
	}
	go func() {
		r, err := s.Stream(ctx, to, p.ch)
		if err != nil {
			c.log.Debug("reply preview failed", "err", err)
		}
		p.done <- r.MessageID
	}()
	return p
}

// add passes a piece of the reply on; never blocks the turn (a piece the
// adapter is too slow for is left out of the preview, not the reply).
func (p *preview) add(s string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	select {
	case p.ch <- s:
	default:
	}
}

// finish ends the deltas and returns the preview's message id ("" when
// none was shown).
func (p *preview) finish() string {
	if p == nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.ch)
		select {
		case p.id = <-p.done:
			p.got = true
		case <-time.After(previewWait):
		}
	}
	p.over = true
	return p.id
}

// release undoes finish's hand-over: no reply took the preview, so drop
// deletes it.
func (p *preview) release() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.over = false
}

// drop runs when the turn is over: a preview no reply took over (a
// silent reply, a duplicate, a turn cut short) is deleted.
func (p *preview) drop(ctx context.Context, ca *chanAccount, chatID string, log interface{ Warn(string, ...any) }) {
	if p == nil {
		return
	}
	p.mu.Lock()
	taken := p.over
	p.mu.Unlock()
	if !taken {
		p.finish() // (closes the deltas, or only reads the id again)
	}
	p.mu.Lock()
	id, got := p.id, p.got
	p.mu.Unlock()
	u, ok := ca.Adapter.(channel.Unsender)
	switch {
	case !ok:
	case !got:
		// Its last send outlasted previewWait, so the reply went as a
		// new message: the preview goes when that send ends.
		go func() {
			if id := <-p.done; id != "" {
				if err := u.Unsend(context.WithoutCancel(ctx), chatID, id); err != nil {
					log.Warn("could not delete a reply preview", "err", err)
				}
			}
		}()
	case !taken && id != "":
		if err := u.Unsend(context.WithoutCancel(ctx), chatID, id); err != nil {
			// Left in the chat: said in the log.
			log.Warn("could not delete a reply preview", "err", err)
		}
	}
}
