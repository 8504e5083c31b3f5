// Package outbox is the durable path of every message to a channel
// (docs/design.md §3.8): every message to a channel is a record
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
//
// It is given the record store and a lookup of the configured adapters;
// it knows nothing of turns, access or the control API. Sent-message
// records and undeliverable items are pruned here, hourly.
package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/access"
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/crashpoint"
	"github.com/openclaw-edge/edge/engine/delivery"
	"github.com/openclaw-edge/edge/engine/session"
)

// Outbox buckets.
const (
	bucketOutbox     = "outbox"      // <created>-<id> → Item
	bucketOutboxSent = "outbox-sent" // idempotency key → sentRecord
	bucketOutboxDead = "outbox-dead" // <created>-<id> → Item
)

// seenTTL is how long a sent message's record is remembered (as long as
// the inbox's dedup keys); deadTTL how long an undeliverable message is
// kept.
const (
	seenTTL = 14 * 24 * time.Hour
	deadTTL = 30 * 24 * time.Hour
)

// MinBackoff is the first retry's wait; a variable so tests can shorten it.
var MinBackoff = 2 * time.Second

// Retry bounds.
var (
	outboxMaxBackoff = 10 * time.Minute
	outboxMaxTries   = 20
	outboxSendLimit  = 2 * time.Minute
)

// Item is one queued message.
type Item struct {
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

// Config is what New needs.
type Config struct {
	Records engine.Records
	// Adapter finds the adapter of a configured channel account; nil when
	// the account is no longer configured (its items go to outbox-dead).
	Adapter func(channel, account string) channel.Adapter
	Logger  *slog.Logger
	Now     func() time.Time
}

// Outbox queues and sends messages to channels. It is safe for
// concurrent use.
type Outbox struct {
	cfg    Config
	log    *slog.Logger
	wakeCh chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	n      int64
}

// New returns an Outbox over cfg.Records; Start sends.
func New(cfg Config) *Outbox {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Outbox{cfg: cfg, log: cfg.Logger, wakeCh: make(chan struct{}, 1)}
}

// Chunking is how an account's replies are cut (0: delivery.DefaultChunkLimit).
type Chunking struct {
	Limit int
	Mode  delivery.ChunkMode
}

// AccountKey is the key of a channel account in the outbox's counts.
func AccountKey(ch, account string) string { return ch + "/" + account }

// Records turns a reply to m into outbox records: its text in chunks of the
// account's limit (code fences closed and reopened), media on the last.
// They are written with the end of a turn (session.Record) or by Put.
func (o *Outbox) Records(ad channel.Adapter, ck Chunking, m engine.Inbound, r delivery.Reply) ([]session.Record, error) {
	limit := ck.Limit
	if limit <= 0 {
		limit = delivery.DefaultChunkLimit
	}
	chunks := delivery.Chunk(r.Text, limit, ck.Mode)
	var media []engine.Media
	for _, p := range r.Media {
		md := engine.Media{Path: p}
		if IsURL(p) {
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
	now := o.cfg.Now()
	base := engine.NewID(8)
	var recs []session.Record
	for i, text := range chunks {
		out := channel.Outbound{
			Channel: m.Channel, Account: m.Account, ChatID: m.ChatID, ChatType: m.ChatType,
			Text: text, Thread: m.Thread,
			IdempotencyKey: base + "-" + strconv.Itoa(i),
		}
		if i == 0 {
			out.ReplyTo, out.Replace = replyTo, r.Replace
		}
		if i == len(chunks)-1 {
			out.Buttons = r.Buttons
		}
		if i == len(chunks)-1 && len(media) > 0 {
			out.Media, out.AsVoice = media, r.AudioAsVoice
			if _, ok := ad.(channel.MediaSender); !ok {
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
		v, err := json.Marshal(Item{Key: key, Out: out, CreatedAt: now})
		if err != nil {
			return nil, err
		}
		recs = append(recs, session.Record{Bucket: bucketOutbox, Key: key, Value: v})
	}
	return recs, nil
}

// IsURL reports whether a MEDIA: reference is a URL (sent as text, never
// fetched) rather than a local file.
func IsURL(s string) bool {
	return len(s) > 8 && (s[:7] == "http://" || s[:8] == "https://")
}

// Put writes records outside a turn.
func (o *Outbox) Put(recs []session.Record) error {
	return o.cfg.Records.UpdateRecords(func(tx engine.RecordTx) error {
		for _, r := range recs {
			if err := tx.Put(r.Bucket, r.Key, json.RawMessage(r.Value)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Wake makes the sender look at the queue now.
func (o *Outbox) Wake() {
	select {
	case o.wakeCh <- struct{}{}:
	default:
	}
}

// Start prunes old records and starts the sender; it stops with ctx.
func (o *Outbox) Start(ctx context.Context) {
	o.Prune()
	o.done = make(chan struct{})
	go o.loop(ctx)
}

// Stop waits for the sender, once ctx of Start is done.
func (o *Outbox) Stop() {
	if o.done != nil {
		<-o.done
	}
}

func (o *Outbox) loop(ctx context.Context) {
	defer close(o.done)
	pruned := o.cfg.Now()
	for {
		if now := o.cfg.Now(); now.Sub(pruned) >= time.Hour {
			o.Prune()
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
func (o *Outbox) pending() ([]Item, error) {
	var items []Item
	err := o.cfg.Records.ViewRecords(func(tx engine.RecordTx) error {
		return tx.ForEach(bucketOutbox, "", func(k string, raw []byte) error {
			var it Item
			if err := json.Unmarshal(raw, &it); err != nil {
				o.log.Error("unreadable outbox item", "key", k, "err", err)
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
func (o *Outbox) sendDue(ctx context.Context) time.Time {
	items, err := o.pending()
	if err != nil {
		o.log.Error("could not read the outbox", "err", err)
		return o.cfg.Now().Add(MinBackoff)
	}
	var next time.Time
	blocked := map[string]bool{}
	for _, it := range items {
		if ctx.Err() != nil {
			return time.Time{}
		}
		chat := AccountKey(it.Out.Channel, it.Out.Account) + "/" + it.Out.ChatID
		if blocked[chat] {
			continue
		}
		now := o.cfg.Now()
		if it.NextAt.After(now) {
			blocked[chat] = true
			if next.IsZero() || it.NextAt.Before(next) {
				next = it.NextAt
			}
			continue
		}
		if !o.sendOne(ctx, it) {
			blocked[chat] = true
			if n := o.cfg.Now().Add(o.backoff(it.Attempts + 1)); next.IsZero() || n.Before(next) {
				next = n
			}
		}
	}
	return next
}

func (o *Outbox) backoff(attempts int) time.Duration {
	d := MinBackoff
	for i := 1; i < attempts && d < outboxMaxBackoff; i++ {
		d *= 2
	}
	return min(d, outboxMaxBackoff)
}

// sendOne sends one item and records the outcome; false: it failed and
// stays (its chat waits).
func (o *Outbox) sendOne(ctx context.Context, it Item) bool {
	log := o.log.With("channel", it.Out.Channel, "account", it.Out.Account, "chat", access.Display(it.Out.ChatID), "key", it.Out.IdempotencyKey)
	ad := o.cfg.Adapter(it.Out.Channel, it.Out.Account)
	if ad == nil {
		o.dead(it, "the channel account is no longer configured", log)
		return true
	}
	sctx, cancel := context.WithTimeout(ctx, outboxSendLimit)
	rcpt, err := ad.Send(sctx, it.Out)
	cancel()
	if err == nil {
		crashpoint.At("after-send")
		if rcpt.SentAt.IsZero() {
			rcpt.SentAt = o.cfg.Now()
		}
		err := o.cfg.Records.UpdateRecords(func(tx engine.RecordTx) error {
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
	it.NextAt = o.cfg.Now().Add(o.backoff(it.Attempts))
	if errors.Is(err, channel.ErrNotConnected) {
		log.Info("channel not connected; the message waits", "attempt", it.Attempts)
	} else {
		log.Warn("send failed; retrying", "err", err, "attempt", it.Attempts, "next", it.NextAt)
	}
	if e := o.cfg.Records.UpdateRecords(func(tx engine.RecordTx) error { return tx.Put(bucketOutbox, it.Key, it) }); e != nil {
		log.Error("could not record a failed send", "err", e)
	}
	return false
}

func (o *Outbox) dead(it Item, why string, log interface{ Error(string, ...any) }) {
	it.LastError = why
	log.Error("message could not be delivered; moved to outbox-dead", "err", why)
	if err := o.cfg.Records.UpdateRecords(func(tx engine.RecordTx) error {
		if err := tx.Delete(bucketOutbox, it.Key); err != nil {
			return err
		}
		return tx.Put(bucketOutboxDead, it.Key, it)
	}); err != nil {
		log.Error("could not move an undeliverable message", "err", err)
	}
}

// Counts returns the pending and dead items per channel account
// (AccountKey).
func (o *Outbox) Counts() (pending, dead map[string]int) {
	pending, dead = map[string]int{}, map[string]int{}
	count := func(tx engine.RecordTx, bucket string, m map[string]int) error {
		return tx.ForEach(bucket, "", func(_ string, raw []byte) error {
			var it Item
			if json.Unmarshal(raw, &it) == nil {
				m[AccountKey(it.Out.Channel, it.Out.Account)]++
			}
			return nil
		})
	}
	_ = o.cfg.Records.ViewRecords(func(tx engine.RecordTx) error {
		if err := count(tx, bucketOutbox, pending); err != nil {
			return err
		}
		return count(tx, bucketOutboxDead, dead)
	})
	return pending, dead
}

// Prune forgets sent-message records older than seenTTL and undeliverable
// messages older than deadTTL (run at start and hourly: these buckets
// would otherwise only grow).
func (o *Outbox) Prune() {
	now := o.cfg.Now()
	sentAt := func(raw []byte) (time.Time, bool) {
		var r sentRecord
		return r.SentAt, json.Unmarshal(raw, &r) == nil
	}
	deadAt := func(raw []byte) (time.Time, bool) {
		var it Item
		return it.CreatedAt, json.Unmarshal(raw, &it) == nil
	}
	for _, r := range []struct {
		bucket string
		cut    time.Time
		at     func(raw []byte) (time.Time, bool)
	}{
		{bucketOutboxSent, now.Add(-seenTTL), sentAt},
		{bucketOutboxDead, now.Add(-deadTTL), deadAt},
	} {
		if err := PruneBucket(o.cfg.Records, r.bucket, r.cut, r.at); err != nil {
			o.log.Warn("could not prune old records", "bucket", r.bucket, "err", err)
		}
	}
}

// PruneBucket deletes the records of bucket whose time (at) is before cut,
// or that at cannot read. The inbound side prunes its dedup keys with it.
func PruneBucket(db engine.Records, bucket string, cut time.Time, at func(raw []byte) (time.Time, bool)) error {
	var old []string
	_ = db.ViewRecords(func(tx engine.RecordTx) error {
		return tx.ForEach(bucket, "", func(k string, raw []byte) error {
			if t, ok := at(raw); !ok || t.Before(cut) {
				old = append(old, k)
			}
			return nil
		})
	})
	if len(old) == 0 {
		return nil
	}
	return db.UpdateRecords(func(tx engine.RecordTx) error {
		for _, k := range old {
			if err := tx.Delete(bucket, k); err != nil {
				return err
			}
		}
		return nil
	})
}
