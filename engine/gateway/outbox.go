package gateway

// The outbox (DESIGN.md §3.8): every message to a channel is a record
// written before it is sent — with the end of its turn for a reply — and
// marked sent after. A crash between the two sends it again with the same
// idempotency key, from which adapters derive the platform's message id
// (WhatsApp message id, email Message-ID): where the platform deduplicates,
// the repeat is dropped there; where it cannot, the window in which a
// message may repeat is the send call itself.
//
// One sender goroutine sends the due items in order; a chat whose item
// failed waits (its later chunks are not sent before it) while other chats
// go on. Transient failures back off from 2 s doubling to 10 minutes;
// permanent ones (channel.ErrPermanent, an account no longer configured, 20
// failed attempts) move the item to outbox-dead and are logged.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/access"
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/delivery"
	"github.com/openclaw-edge/edge/engine/session"
)

// Outbox buckets.
const (
	bucketOutbox     = "outbox"      // <created>-<id> → outboxItem
	bucketOutboxSent = "outbox-sent" // idempotency key → sentRecord
	bucketOutboxDead = "outbox-dead" // <created>-<id> → outboxItem
)

// Retry bounds; variables so tests can shorten them.
var (
	outboxMinBackoff = 2 * time.Second
	outboxMaxBackoff = 10 * time.Minute
	outboxMaxTries   = 20
	outboxSendLimit  = 2 * time.Minute
)

type outboxItem struct {
	Key       string           `json:"key"`
	Out       channel.Outbound `json:"out"`
	CreatedAt time.Time        `json:"createdAt"`
	Attempts  int              `json:"attempts,omitempty"`
	NextAt    time.Time        `json:"nextAt,omitzero"`
	LastError string           `json:"lastError,omitempty"`
}

type sentRecord struct {
	Key       string    `json:"key"`
	MessageID string    `json:"messageId,omitempty"`
	SentAt    time.Time `json:"sentAt"`
}

type outbox struct {
	c      *channels
	wakeCh chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	n      int64
}

func newOutbox(c *channels) *outbox {
	return &outbox{c: c, wakeCh: make(chan struct{}, 1)}
}

// records turns a reply to m into outbox records: its text in chunks of the
// account's limit (code fences closed and reopened), media on the last.
func (o *outbox) records(ca *chanAccount, m engine.Inbound, r delivery.Reply) ([]session.Record, error) {
	limit := ca.ChunkLimit
	if limit <= 0 {
		limit = delivery.DefaultChunkLimit
	}
	chunks := delivery.Chunk(r.Text, limit, ca.ChunkMode)
	var media []engine.Media
	for _, p := range r.Media {
		md := engine.Media{Path: p}
		if isURL(p) {
			md = engine.Media{URL: p}
		}
		media = append(media, md)
	}
	if len(chunks) == 0 && len(media) > 0 {
		chunks = []string{""}
	}
	replyTo := ""
	switch {
	case r.ReplyTo != "":
		replyTo = r.ReplyTo
	case r.ReplyToCurrent, m.ChatType != engine.ChatDirect, m.Channel == "email":
		// Groups: say which message is answered; email: thread it.
		replyTo = m.MessageID
	}
	now := o.c.g.cfg.Now()
	base := newID(8)
	var recs []session.Record
	for i, text := range chunks {
		out := channel.Outbound{
			Channel: m.Channel, Account: m.Account, ChatID: m.ChatID, ChatType: m.ChatType,
			Text: text, Thread: m.Thread,
			IdempotencyKey: base + "-" + strconv.Itoa(i),
		}
		if i == 0 {
			out.ReplyTo = replyTo
		}
		if i == len(chunks)-1 && len(media) > 0 {
			out.Media, out.AsVoice = media, r.AudioAsVoice
			if _, ok := ca.Adapter.(channel.MediaSender); !ok {
				out.Media = nil
				for _, md := range media {
					out.Text += "\n" + md.Path + md.URL
				}
			}
		}
		o.mu.Lock()
		o.n++
		key := fmt.Sprintf("%020d-%06d", now.UnixNano(), o.n%1000000)
		o.mu.Unlock()
		v, err := json.Marshal(outboxItem{Key: key, Out: out, CreatedAt: now})
		if err != nil {
			return nil, err
		}
		recs = append(recs, session.Record{Bucket: bucketOutbox, Key: key, Value: v})
	}
	return recs, nil
}

func isURL(s string) bool {
	return len(s) > 8 && (s[:7] == "http://" || s[:8] == "https://")
}

// put writes records outside a turn.
func (o *outbox) put(recs []session.Record) error {
	return o.c.db.UpdateRecords(func(tx engine.RecordTx) error {
		for _, r := range recs {
			if err := tx.Put(r.Bucket, r.Key, json.RawMessage(r.Value)); err != nil {
				return err
			}
		}
		return nil
	})
}

func (o *outbox) wake() {
	select {
	case o.wakeCh <- struct{}{}:
	default:
	}
}

func (o *outbox) start(ctx context.Context) {
	o.done = make(chan struct{})
	go o.loop(ctx)
}

func (o *outbox) stop() {
	if o.done != nil {
		<-o.done
	}
}

func (o *outbox) loop(ctx context.Context) {
	defer close(o.done)
	pruned := o.c.g.cfg.Now()
	for {
		if now := o.c.g.cfg.Now(); now.Sub(pruned) >= time.Hour {
			o.c.prune()
			pruned = now
		}
		next := o.sendDue(ctx)
		wait := time.Minute
		if !next.IsZero() {
			wait = max(time.Until(next), 10*time.Millisecond)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-o.wakeCh:
		case <-t.C:
		}
		t.Stop()
	}
}

// pending returns the outbox items in order.
func (o *outbox) pending() ([]outboxItem, error) {
	var items []outboxItem
	err := o.c.db.ViewRecords(func(tx engine.RecordTx) error {
		return tx.ForEach(bucketOutbox, "", func(k string, raw []byte) error {
			var it outboxItem
			if err := json.Unmarshal(raw, &it); err != nil {
				o.c.g.log.Error("unreadable outbox item", "key", k, "err", err)
				return nil
			}
			it.Key = k
			items = append(items, it)
			return nil
		})
	})
	return items, err
}

// sendDue sends what is due and returns when the next item is due (zero:
// nothing waits).
func (o *outbox) sendDue(ctx context.Context) time.Time {
	items, err := o.pending()
	if err != nil {
		o.c.g.log.Error("could not read the outbox", "err", err)
		return o.c.g.cfg.Now().Add(outboxMinBackoff)
	}
	var next time.Time
	blocked := map[string]bool{}
	for _, it := range items {
		if ctx.Err() != nil {
			return time.Time{}
		}
		chat := accountKey(it.Out.Channel, it.Out.Account) + "/" + it.Out.ChatID
		if blocked[chat] {
			continue
		}
		now := o.c.g.cfg.Now()
		if it.NextAt.After(now) {
			blocked[chat] = true
			if next.IsZero() || it.NextAt.Before(next) {
				next = it.NextAt
			}
			continue
		}
		if !o.sendOne(ctx, it) {
			blocked[chat] = true
			if n := o.c.g.cfg.Now().Add(o.backoff(it.Attempts + 1)); next.IsZero() || n.Before(next) {
				next = n
			}
		}
	}
	return next
}

func (o *outbox) backoff(attempts int) time.Duration {
	d := outboxMinBackoff
	for i := 1; i < attempts && d < outboxMaxBackoff; i++ {
		d *= 2
	}
	return min(d, outboxMaxBackoff)
}

// sendOne sends one item and records the outcome; false: it failed and
// stays (its chat waits).
func (o *outbox) sendOne(ctx context.Context, it outboxItem) bool {
	log := o.c.g.log.With("channel", it.Out.Channel, "account", it.Out.Account, "chat", access.Display(it.Out.ChatID), "key", it.Out.IdempotencyKey)
	ca := o.c.accounts[accountKey(it.Out.Channel, it.Out.Account)]
	if ca == nil {
		o.dead(it, "the channel account is no longer configured", log)
		return true
	}
	sctx, cancel := context.WithTimeout(ctx, outboxSendLimit)
	rcpt, err := ca.Adapter.Send(sctx, it.Out)
	cancel()
	if err == nil {
		crashpoint("after-send")
		if rcpt.SentAt.IsZero() {
			rcpt.SentAt = o.c.g.cfg.Now()
		}
		err := o.c.db.UpdateRecords(func(tx engine.RecordTx) error {
			if err := tx.Delete(bucketOutbox, it.Key); err != nil {
				return err
			}
			return tx.Put(bucketOutboxSent, it.Out.IdempotencyKey, sentRecord{Key: it.Key, MessageID: rcpt.MessageID, SentAt: rcpt.SentAt})
		})
		if err != nil {
			// Sent but not marked: it is sent again (same key) later.
			log.Error("sent, but could not mark the message sent", "err", err)
			return false
		}
		log.Debug("sent", "messageId", rcpt.MessageID)
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	it.Attempts++
	if errors.Is(err, channel.ErrPermanent) || it.Attempts >= outboxMaxTries {
		o.dead(it, err.Error(), log)
		return true
	}
	it.LastError = err.Error()
	it.NextAt = o.c.g.cfg.Now().Add(o.backoff(it.Attempts))
	if errors.Is(err, channel.ErrNotConnected) {
		log.Info("channel not connected; the message waits", "attempt", it.Attempts)
	} else {
		log.Warn("send failed; retrying", "err", err, "attempt", it.Attempts, "next", it.NextAt)
	}
	if e := o.c.db.UpdateRecords(func(tx engine.RecordTx) error { return tx.Put(bucketOutbox, it.Key, it) }); e != nil {
		log.Error("could not record a failed send", "err", e)
	}
	return false
}

func (o *outbox) dead(it outboxItem, why string, log interface{ Error(string, ...any) }) {
	it.LastError = why
	log.Error("message could not be delivered; moved to outbox-dead", "err", why)
	if err := o.c.db.UpdateRecords(func(tx engine.RecordTx) error {
		if err := tx.Delete(bucketOutbox, it.Key); err != nil {
			return err
		}
		return tx.Put(bucketOutboxDead, it.Key, it)
	}); err != nil {
		log.Error("could not move an undeliverable message", "err", err)
	}
}

// counts returns the pending and dead items per channel account.
func (o *outbox) counts() (pending, dead map[string]int) {
	pending, dead = map[string]int{}, map[string]int{}
	count := func(tx engine.RecordTx, bucket string, m map[string]int) error {
		return tx.ForEach(bucket, "", func(_ string, raw []byte) error {
			var it outboxItem
			if json.Unmarshal(raw, &it) == nil {
				m[accountKey(it.Out.Channel, it.Out.Account)]++
			}
			return nil
		})
	}
	_ = o.c.db.ViewRecords(func(tx engine.RecordTx) error {
		if err := count(tx, bucketOutbox, pending); err != nil {
			return err
		}
		return count(tx, bucketOutboxDead, dead)
	})
	return pending, dead
}
