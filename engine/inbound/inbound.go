// Package inbound is the path of a message from a messaging platform to its
// turn (docs/design.md §3): the durable inbox with its dedup, one worker per
// chat, access control, routing, pairing codes, group context and the
// owner's notices. It holds the gateway (engine/gateway) and hands turns
// over through Gateway.RunTurn — the door a scheduler uses too — and queues
// every reply on the outbox (engine/outbox). In the order it runs:
//
//  1. An adapter's Run calls inbox.Deliver. Deliver drops a message seen
//     before (its dedup key in inboxSeen) and otherwise writes it to the
//     durable inbox — both in one transaction — and hands it to its chat's
//     worker. Only then does the adapter advance its cursor.
//  2. The chat's worker (one per channel/account/chat: messages of a chat
//     are handled in order) runs process: access control (engine/access),
//     routing (engine/routing), then one of: drop; a pairing code reply;
//     group context kept for later; a slash command; a turn (turn.go).
//  3. A turn's reply is split into chunks and written to the outbox in the
//     transaction that ends the turn (Origin.Reply → EndTurnWith). Replies
//     without a turn (pairing codes, command answers, notices) are written
//     to the outbox directly.
//  4. The adapter is told (Acker: email marks the message \Seen), then
//     the inbox item is deleted: a crash in between acks it again.
//  5. The outbox sender (engine/outbox) sends each item, then marks it sent.
//
// After a crash, inbox items left are handled again at start (the session
// store's dedup makes a turn that was already committed a no-op) and
// outbox items are sent again with their idempotency keys.
//
// Where things are: inbound.go the message's path; control.go what the
// control API asks of the channel side (statuses, outbound sends, pairing
// decisions, login and logout).
package inbound

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/access"
	"github.com/openclaw-edge/edge/engine/access/identity"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/crashpoint"
	"github.com/openclaw-edge/edge/engine/delivery"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/outbox"
	"github.com/openclaw-edge/edge/engine/prompt"
	"github.com/openclaw-edge/edge/engine/routing"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/tool"
)

// Record buckets of the channel pipeline.
const (
	bucketInbox     = "inbox"      // <seq> → inboxItem
	bucketInboxSeen = "inbox-seen" // <dedup key> → time first seen
	bucketGroupCtx  = "group-context"
	bucketChanState = "channel-state" // <channel>/<account>/<key> → adapter cursor (channel.Store)
)

// Group context kept for the next answered message of a group.
const (
	groupContextMax      = 20
	groupContextMaxChars = 4000
	// seenTTL is how long a dedup key is remembered (the outbox keeps
	// sent-message records as long).
	seenTTL = 14 * 24 * time.Hour
	// maxInboundText bounds a message's text; longer text is cut.
	maxInboundText = 32 << 10
	// Bounds of the other fields a sender chooses (M2 of the review: they
	// reach the prompt, some of them its trusted block).
	maxInboundQuoted = 4 << 10
	maxInboundName   = 128
	maxInboundID     = 256
	maxMentions      = 64
	// chatQueue is a chat's in-memory queue; maxChatWorkers bounds the
	// chats handled at once (each is a goroutine and a queue).
	chatQueue      = 64
	maxChatWorkers = 512
	// maxHandleTries: a message whose handling fails (a full disk, a
	// store error) is tried again with backoff, then given up (logged).
	maxHandleTries = 5
)

// normalize fills in what an adapter may leave out (a direct chat; the
// sender's chat) and bounds the rest: m as access control reads it.
func normalize(m *engine.Inbound) {
	if m.ChatType == "" {
		m.ChatType = engine.ChatDirect
	}
	if m.ChatID == "" {
		m.ChatID = m.SenderID
	}
	bound(m)
}

// bound cuts the fields of m a sender chooses to sane sizes, and replaces
// ids that are not plain tokens (they are written in the prompt's trusted
// metadata) by a hash of themselves.
func bound(m *engine.Inbound) {
	if len(m.Text) > maxInboundText {
		m.Text = strings.ToValidUTF8(m.Text[:maxInboundText], "") + "\n[… message cut at 32 KiB]"
	}
	if len(m.Quoted) > maxInboundQuoted {
		m.Quoted = strings.ToValidUTF8(m.Quoted[:maxInboundQuoted], "") + " […]"
	}
	if len(m.SenderName) > maxInboundName {
		m.SenderName = strings.ToValidUTF8(m.SenderName[:maxInboundName], "")
	}
	if len(m.Mentions) > maxMentions {
		m.Mentions = m.Mentions[:maxMentions]
	}
	m.MessageID = plainID(m.MessageID)
	m.ReplyTo = plainID(m.ReplyTo)
	m.Topic = plainID(m.Topic)
	// A MIME type is written in the prompt's trusted block: a sender's
	// "text/plain; SYSTEM NOTE: …" must not be (adapters clean it too).
	for i := range m.Media {
		mt, _, _ := strings.Cut(m.Media[i].MimeType, ";")
		if mt = strings.ToLower(strings.TrimSpace(mt)); !plainMIME(mt) {
			mt = "application/octet-stream"
		}
		m.Media[i].MimeType = mt
	}
	// A handle that is not a plain token matches no allowFrom entry
	// (identity.ConfigID refuses such entries): hashed like an id.
	m.SenderUsername = plainID(m.SenderUsername)
}

// plainMIME reports whether s is empty or "type/subtype" of lower-case
// letters, digits and .+- (at most 100 bytes).
func plainMIME(s string) bool {
	if s == "" {
		return true
	}
	if len(s) > 100 || strings.Count(s, "/") != 1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("/.+-", c) >= 0) {
			return false
		}
	}
	return true
}

// plainID returns id if it is a plain token (letters, digits and
// ._@:+-<>=/ up to 256 bytes), else "h-" and a hash of it: still unique
// and stable (dedup works), but unable to carry words into the prompt.
func plainID(id string) string {
	ok := len(id) <= maxInboundID
	for i := 0; ok && i < len(id); i++ {
		b := id[i]
		ok = b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("._@:+-<>=/", b) >= 0
	}
	if ok {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "h-" + hex.EncodeToString(sum[:12])
}

// removeMedia deletes the local attachments of a message nobody will read
// (dropped, pending pairing, kept as group context): a stranger's uploads
// must not pile up on the box. Only files the adapter itself wrote go:
// those in its account's MediaDir (removeOwnMedia). Anything else a
// message names — the owner's own file on a Mac, a path an adapter got
// wrong — is left alone and logged: deleting what we did not create is
// data loss, a leftover copy is not.
func (c *Inbound) removeMedia(m engine.Inbound) {
	ca := c.accounts[accountKey(m.Channel, m.Account)]
	for _, md := range m.Media {
		if md.Path == "" {
			continue
		}
		dir := ""
		if ca != nil {
			dir = ca.MediaDir
		}
		if err := removeOwnMedia(dir, md.Path); err != nil {
			c.log.Warn("attachment of an unread message left in place", "channel", m.Channel, "path", md.Path, "err", err)
		}
	}
}

// removeOwnMedia removes the file p if it lies in dir: lexically below it,
// reached through no symlink that leaves it (os.Root refuses those), and
// not a directory. A symlink there is unlinked, never its target. A file
// already gone is no error.
func removeOwnMedia(dir, p string) error {
	if dir == "" {
		return errors.New("the channel has no media directory")
	}
	rel, err := filepath.Rel(dir, p)
	if err != nil || !filepath.IsLocal(rel) {
		return errors.New("not in the channel's media directory")
	}
	root, err := os.OpenRoot(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("media directory: %w", err)
	}
	defer root.Close()
	st, err := root.Lstat(rel)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case st.IsDir():
		return errors.New("a directory, not an attachment")
	}
	if err := root.Remove(rel); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Account is one configured channel account, built by the wiring.
type Account struct {
	Adapter channel.Adapter
	Policy  *access.Policy
	// ChunkLimit and ChunkMode split replies (0: delivery.DefaultChunkLimit).
	ChunkLimit int
	ChunkMode  delivery.ChunkMode
	// MediaDir is where the adapter writes inbound attachments; the
	// gateway deletes unread attachments only there ("": never).
	MediaDir string
}

type chanAccount struct {
	Account
	sup *channel.Supervisor
}

func (ca *chanAccount) chunking() outbox.Chunking {
	return outbox.Chunking{Limit: ca.ChunkLimit, Mode: ca.ChunkMode}
}

func accountKey(ch, account string) string { return outbox.AccountKey(ch, account) }

type inboxItem struct {
	Seq     string         `json:"seq"`
	Inbound engine.Inbound `json:"inbound"`
	Tries   int            `json:"tries,omitempty"`
}

type groupLine struct {
	Sender string    `json:"sender"`
	Text   string    `json:"text"`
	At     time.Time `json:"at"`
}

// Config is what New needs.
type Config struct {
	// Channels are the configured channel accounts; they need Records
	// (the inbox, the outbox, pairing).
	Channels []Account
	Records  engine.Records
	// Bindings and DMScope route channel messages (engine/routing).
	Bindings []routing.Binding
	DMScope  string
	// Owners is commands.ownerAllowFrom.
	Owners []string
	// StateDir holds media/out, where a non-owner's attachments are
	// copied when the account has no media directory.
	StateDir string
	Logger   *slog.Logger
	Now      func() time.Time
}

// Inbound is the gateway's channel side. It is safe for concurrent use.
type Inbound struct {
	g        *gateway.Gateway
	cfg      Config
	log      *slog.Logger
	db       engine.Records
	pairing  *access.Pairing
	router   routing.Router
	accounts map[string]*chanAccount // by accountKey
	order    []string

	mu      sync.Mutex
	workers map[string]chan inboxItem // by chat
	// backlog lists recorded messages waiting for room on their chat's
	// queue or for a worker (enqueue, drain), by inbox key only: the
	// message itself is read back from the inbox when its turn comes.
	// backlogged counts them by chat, so a chat's later messages queue
	// behind them.
	backlog  map[string][]string // chat → inbox keys, oldest first
	waitingN int                 // entries in backlog
	urgent   int                 // owner commands being handled beside the queues (dispatch)
	stopping bool
	seq      int64
	// lastOwner caches the owner's last direct contact (announce.go).
	lastOwner *lastContact
	wg        sync.WaitGroup
	ctx       context.Context
	cancel    context.CancelFunc

	outbox *outbox.Outbox
}

// ChannelStore returns the channel.Store of one adapter account: its
// cursors, kept in the state database.
func ChannelStore(db engine.Records, ch, account string) channel.Store {
	return &chanStore{db: db, prefix: accountKey(ch, account) + "/"}
}

type chanStore struct {
	db     engine.Records
	prefix string
}

func (s *chanStore) Get(key string, v any) (bool, error) {
	var found bool
	err := s.db.ViewRecords(func(tx engine.RecordTx) error {
		var err error
		found, err = tx.Get(bucketChanState, s.prefix+key, v)
		return err
	})
	return found, err
}

func (s *chanStore) Put(key string, v any) error {
	return s.db.UpdateRecords(func(tx engine.RecordTx) error { return tx.Put(bucketChanState, s.prefix+key, v) })
}

// New returns the channel side of g over cfg; Start runs it. It adds the
// channel accounts to g's status.
func New(g *gateway.Gateway, cfg Config) (*Inbound, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Inbound{
		g:        g,
		cfg:      cfg,
		log:      cfg.Logger,
		db:       cfg.Records,
		accounts: map[string]*chanAccount{},
		workers:  map[string]chan inboxItem{},
		backlog:  map[string][]string{},
		router: routing.Router{
			Bindings: cfg.Bindings, DefaultAgent: g.DefaultAgent(),
			MainKey: g.MainKey(), DMScope: cfg.DMScope,
		},
	}
	if len(cfg.Channels) > 0 && c.db == nil {
		return nil, errors.New("gateway: channels need a records store")
	}
	if c.db != nil {
		c.pairing = access.NewPairing(c.db, cfg.Now)
	}
	for _, a := range cfg.Channels {
		if a.Adapter == nil || a.Policy == nil {
			return nil, errors.New("gateway: a channel account needs an adapter and a policy")
		}
		k := accountKey(a.Adapter.Channel(), a.Adapter.Account())
		if _, dup := c.accounts[k]; dup {
			return nil, fmt.Errorf("gateway: channel account %s is configured twice", k)
		}
		if err := a.Policy.Validate(); err != nil {
			return nil, err
		}
		ca := &chanAccount{Account: a}
		ca.sup = channel.NewSupervisor(a.Adapter, &accountInbox{c: c, ch: a.Adapter.Channel(), account: a.Adapter.Account()}, channel.SupervisorConfig{
			Logger:  c.log,
			OnState: c.linkChanged,
		})
		c.accounts[k] = ca
		c.order = append(c.order, k)
	}
	c.outbox = outbox.New(outbox.Config{Records: c.db, Adapter: c.adapter, Logger: c.log, Now: cfg.Now})
	g.OnStatus(func(st *api.Status) {
		if len(c.order) > 0 {
			st.Channels = c.ChannelStatuses()
		}
	})
	return c, nil
}

// adapter is the outbox's lookup of a configured account's adapter.
func (c *Inbound) adapter(ch, account string) channel.Adapter {
	if ca := c.accounts[accountKey(ch, account)]; ca != nil {
		return ca.Adapter
	}
	return nil
}

// start resumes the inbox and the outbox left by the last run, then starts
// every adapter.
func (c *Inbound) start(ctx context.Context) error {
	if c.db == nil {
		return nil
	}
	c.mu.Lock()
	c.ctx, c.cancel = context.WithCancel(ctx)
	c.mu.Unlock()
	var left []inboxItem
	err := c.db.ViewRecords(func(tx engine.RecordTx) error {
		return tx.ForEach(bucketInbox, "", func(_ string, raw []byte) error {
			var it inboxItem
			if err := json.Unmarshal(raw, &it); err != nil {
				c.log.Error("unreadable inbox item dropped", "err", err)
				return nil
			}
			left = append(left, it)
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("read the inbox: %w", err)
	}
	for _, it := range left {
		v, verr := c.decide(it.Inbound)
		c.dispatch(it, verr == nil && isUrgent(it.Inbound, v))
	}
	if len(left) > 0 {
		c.log.Info("resuming inbound messages left by the last run", "count", len(left))
	}
	c.prune()
	c.wg.Add(1)
	go c.pruneHourly()
	c.outbox.Start(c.ctx)
	for _, k := range c.order {
		c.accounts[k].sup.Start(c.ctx)
	}
	return nil
}

// isStopping reports whether stop has begun: a channel turn aborted now
// was cut by a restart, and its sender is told so.
func (c *Inbound) isStopping() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopping
}

// stop stops the adapters, the workers and the outbox.
func (c *Inbound) stop() {
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	for _, k := range c.order {
		c.accounts[k].sup.Stop()
	}
	c.mu.Lock()
	if c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
	c.outbox.Stop()
	c.wg.Wait()
}

// accountInbox is the channel.Inbox of one account.
type accountInbox struct {
	c           *Inbound
	ch, account string
}

func (in *accountInbox) Deliver(ctx context.Context, m engine.Inbound) error {
	// The adapter's word on which channel and account it is, not the
	// message's: a message cannot claim another account's policy.
	m.Channel, m.Account = in.ch, in.account
	return in.c.deliver(m, nil)
}

// WillAnswer is channel.Screener: whether access control lets m through
// to a turn (or a command).
func (in *accountInbox) WillAnswer(m engine.Inbound) bool {
	m.Channel, m.Account = in.ch, in.account
	normalize(&m)
	v, err := in.c.decide(m)
	return err == nil && v.Action == access.Answer
}

// DeliverAt is channel.CursorInbox: m and the adapter's cursor in one
// transaction.
func (in *accountInbox) DeliverAt(ctx context.Context, m engine.Inbound, key string, cursor any) error {
	m.Channel, m.Account = in.ch, in.account
	return in.c.deliver(m, &cursorPut{key: accountKey(in.ch, in.account) + "/" + key, value: cursor})
}

// cursorPut is an adapter cursor written with the message it is past
// (channel.CursorInbox), in the bucket of channel.Store (ChannelStore).
type cursorPut struct {
	key   string
	value any
}

func (p *cursorPut) put(tx engine.RecordTx) error {
	if p == nil {
		return nil
	}
	return tx.Put(bucketChanState, p.key, p.value)
}

// putCursor writes cur alone: its message costs nothing durable.
func (c *Inbound) putCursor(cur *cursorPut) error {
	if cur == nil {
		return nil
	}
	return c.db.UpdateRecords(cur.put)
}

// deliver records m in the inbox (or drops a duplicate) and hands it on;
// cur, when set, is written in the same transaction (or alone, when m is
// dropped).
func (c *Inbound) deliver(m engine.Inbound, cur *cursorPut) error {
	normalize(&m)
	if m.ChatID == "" {
		return errors.New("inbound message without a chat or sender id")
	}
	if m.Timestamp.IsZero() {
		m.Timestamp = c.cfg.Now()
	}
	// A sender nobody may hear from (a blocked DM, an unlisted group, a
	// group member who may not trigger) costs nothing durable: no inbox
	// record, no dedup key, no worker, no kept attachment.
	v, verr := c.decide(m)
	if verr == nil && v.Action == access.Drop {
		c.log.Debug("inbound message dropped", "channel", m.Channel, "chat", access.Display(m.ChatID), "reason", v.Reason)
		c.removeMedia(m)
		return c.putCursor(cur)
	}
	// A button only its owner's press may work: anyone else's (a group
	// member, a stranger forwarded the message) does nothing, not even
	// a pairing code or a refusal to read.
	if m.Button && (verr != nil || !v.Owner) {
		if verr == nil {
			c.log.Warn("button pressed by someone who is not an owner: ignored", "channel", m.Channel, "sender", access.Display(m.SenderID))
		}
		c.removeMedia(m)
		if verr != nil {
			return verr
		}
		return c.putCursor(cur)
	}
	// An owner's /approve does not wait for the chat's queue (dispatch),
	// so a busy chat does not refuse it either.
	urgent := verr == nil && isUrgent(m, v)
	chat := accountKey(m.Channel, m.Account) + "/" + m.ChatID
	c.mu.Lock()
	switch {
	case cur != nil:
		// An adapter whose cursor moves with the message (Telegram) would
		// hold every other chat behind a refused one: it is recorded and
		// waits in the backlog instead (a key each; the message is in
		// the inbox), refused only when that is full.
		if c.waitingN >= maxBacklog && !urgent {
			c.mu.Unlock()
			return fmt.Errorf("%d messages are waiting for their chats; try again shortly", c.waitingN)
		}
	default:
		if q, ok := c.workers[chat]; ok && len(q) >= cap(q) && !urgent {
			c.mu.Unlock()
			// Not recorded, so the platform keeps it (no ack, no cursor
			// advance) and delivers it again once the chat has caught up.
			return fmt.Errorf("chat %s is busy: %d messages waiting", m.ChatID, cap(q))
		}
		if len(c.workers) >= maxChatWorkers && !urgent {
			if _, ok := c.workers[chat]; !ok {
				c.mu.Unlock()
				return fmt.Errorf("too many active chats (%d); try again shortly", maxChatWorkers)
			}
		}
	}
	c.seq++
	seq := fmt.Sprintf("%020d-%06d", c.cfg.Now().UnixNano(), c.seq%1000000)
	c.mu.Unlock()
	it := inboxItem{Seq: seq, Inbound: m}
	dup := false
	err := c.db.UpdateRecords(func(tx engine.RecordTx) error {
		if k := m.DedupKey(); k != "" {
			var at time.Time
			if found, err := tx.Get(bucketInboxSeen, k, &at); err != nil {
				return err
			} else if found {
				dup = true
				return cur.put(tx)
			}
			if err := tx.Put(bucketInboxSeen, k, c.cfg.Now()); err != nil {
				return err
			}
		}
		if err := cur.put(tx); err != nil {
			return err
		}
		return tx.Put(bucketInbox, seq, it)
	})
	if err != nil {
		return fmt.Errorf("record an inbound %s message: %w", m.Channel, err)
	}
	if dup {
		c.log.Debug("duplicate inbound message dropped", "key", m.DedupKey())
		return nil
	}
	crashpoint.At("after-inbox")
	c.dispatch(it, urgent)
	return nil
}

// maxUrgent bounds the owner's commands handled beside the chat queues at
// once; more wait in their chat's queue.
const maxUrgent = 16

// isUrgent reports whether m, with its access verdict v, is an owner's
// /approve or /deny, or a /stop. Those are handled at once, beside the
// chat's queue: the turn they answer or stop holds that queue (each chat
// has one worker, handling its messages in order). Anyone else's
// /approve goes through the queue and is refused there, as before.
func isUrgent(m engine.Inbound, v access.Verdict) bool {
	if v.Action != access.Answer {
		return false
	}
	name, _, ok := gateway.ParseCommand(strings.TrimSpace(m.Text))
	// /stop from anyone who may talk in a direct chat (it stops their own
	// session's turn); in a group, whose session many share, an owner's.
	return ok && (v.Owner && (name == "approve" || name == "deny" || name == "stop") ||
		name == "stop" && m.ChatType == engine.ChatDirect)
}

// dispatch queues it on its chat's worker, starting one if needed; an
// owner's /approve or /deny (urgent: isUrgent of the verdict the caller
// already has) is handled at once instead, on its own goroutine. Either way handle processes, acks and removes the inbox
// item once, as for any message; after a crash it is handled again at
// start like the rest.
func (c *Inbound) dispatch(it inboxItem, urgent bool) {
	chat := accountKey(it.Inbound.Channel, it.Inbound.Account) + "/" + it.Inbound.ChatID
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil || c.ctx.Err() != nil {
		return // stopping: the item stays in the inbox for the next start
	}
	if urgent && c.urgent < maxUrgent {
		c.urgent++
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.handle(it)
			c.mu.Lock()
			c.urgent--
			c.mu.Unlock()
		}()
		return
	}
	c.enqueue(chat, it)
}

// maxBacklog is where deliveries with a cursor start being refused (the
// platform keeps them): a backlog entry is a few dozen bytes, so this
// holds a long flood, and the check in deliver is only admission —
// enqueue never drops what was recorded.
const maxBacklog = 100_000

// enqueue puts it on its chat's queue, starting a worker if needed, or,
// when the queue is full, the workers are all busy, or the chat already
// has messages waiting, at the end of the chat's backlog (drain moves
// them on, in order). It is already in the inbox: nothing is dropped.
// c.mu is held.
func (c *Inbound) enqueue(chat string, it inboxItem) {
	if len(c.backlog[chat]) == 0 && c.tryQueue(chat, it) {
		return
	}
	c.backlog[chat] = append(c.backlog[chat], it.Seq)
	c.waitingN++
}

// tryQueue puts it on chat's queue if there is room. c.mu is held.
func (c *Inbound) tryQueue(chat string, it inboxItem) bool {
	q, ok := c.workers[chat]
	if !ok {
		if len(c.workers) >= maxChatWorkers {
			return false
		}
		q = make(chan inboxItem, chatQueue)
		c.workers[chat] = q
		c.wg.Add(1)
		go c.work(chat, q)
	}
	select {
	case q <- it:
		return true
	default:
		return false
	}
}

// drain moves waiting messages of every chat on to their queues where
// there is room now (a worker's place came free). c.mu is held.
func (c *Inbound) drain() {
	for chat := range c.backlog {
		c.drainChat(chat)
	}
}

// drainChat moves chat's waiting messages on to its queue, oldest first,
// while it has room, reading each back from the inbox. c.mu is held.
func (c *Inbound) drainChat(chat string) {
	for len(c.backlog[chat]) > 0 && c.ctx != nil && c.ctx.Err() == nil && c.hasRoom(chat) {
		seq := c.backlog[chat][0]
		var it inboxItem
		found := false
		// A read of the memory-mapped file: no lock of ours is taken.
		err := c.db.ViewRecords(func(tx engine.RecordTx) error {
			var err error
			found, err = tx.Get(bucketInbox, seq, &it)
			return err
		})
		if err != nil {
			c.log.Error("could not read a waiting message back from the inbox; it is handled at the next start", "err", err)
		} else if found && !c.tryQueue(chat, it) {
			return
		}
		c.backlog[chat] = c.backlog[chat][1:]
		c.waitingN--
	}
	if len(c.backlog[chat]) == 0 {
		delete(c.backlog, chat)
	}
}

// hasRoom reports whether chat's queue (or a new worker) can take an item
// now. c.mu is held.
func (c *Inbound) hasRoom(chat string) bool {
	if q, ok := c.workers[chat]; ok {
		return len(q) < cap(q)
	}
	return len(c.workers) < maxChatWorkers
}

// work handles one chat's messages in order; it exits when idle.
func (c *Inbound) work(chat string, q chan inboxItem) {
	defer c.wg.Done()
	for {
		select {
		case it := <-q:
			c.handle(it)
			c.mu.Lock()
			c.drainChat(chat) // room in this chat's queue
			c.mu.Unlock()
		case <-time.After(time.Minute):
			c.mu.Lock()
			if len(q) == 0 {
				delete(c.workers, chat)
				c.drain() // a worker's place is free
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
		case <-c.ctx.Done():
			return
		}
	}
}

// handle processes one inbox item and then removes it. An error leaves it
// for the next start.
func (c *Inbound) handle(it inboxItem) {
	m := it.Inbound
	log := c.log.With("channel", m.Channel, "account", m.Account, "chat", access.Display(m.ChatID), "msg", m.MessageID)
	if err := c.process(c.ctx, m, log); err != nil {
		if c.ctx.Err() != nil {
			return // shutting down: handled again at the next start
		}
		it.Tries++
		if it.Tries < maxHandleTries {
			// A store error, a full disk: the message stays in the inbox
			// and is tried again (the chat waits: order is kept).
			wait := time.Duration(1<<it.Tries) * time.Second
			log.Warn("could not handle an inbound message; trying again", "err", err, "try", it.Tries, "in", wait)
			if e := c.db.UpdateRecords(func(tx engine.RecordTx) error { return tx.Put(bucketInbox, it.Seq, it) }); e != nil {
				log.Error("could not record the failed try", "err", e)
			}
			select {
			case <-time.After(wait):
				c.handle(it)
			case <-c.ctx.Done():
			}
			return
		}
		log.Error("gave up on an inbound message", "err", err, "tries", it.Tries)
	}
	var ack channel.Acker
	if ca := c.accounts[accountKey(m.Channel, m.Account)]; ca != nil {
		ack, _ = ca.Adapter.(channel.Acker)
	}
	if ack == nil {
		c.handled(it, log)
		return
	}
	c.ack(ack, it, log)
}

// handled removes a handled item from the inbox.
func (c *Inbound) handled(it inboxItem, log interface{ Error(string, ...any) }) {
	if err := c.db.UpdateRecords(func(tx engine.RecordTx) error { return tx.Delete(bucketInbox, it.Seq) }); err != nil {
		log.Error("could not mark an inbound message handled", "err", err)
	}
}

// ackTries bounds the background retries of an Ack whose link is down
// (about half an hour with the backoff capped at a minute).
const ackTries = 40

// ack tells the adapter that it was handled, then removes it from the
// inbox. In that order: a crash in between handles the item again at the
// next start (its turn is recorded: no second reply) and acks it again,
// where the other order loses the platform's mark (email: \Seen) for
// good. An item handled again at start runs before its adapter has
// connected: ErrNotConnected is retried in the background, with backoff,
// until the link is up; the item stays in the inbox meanwhile (for the
// next start, should the gateway stop first).
func (c *Inbound) ack(ack channel.Acker, it inboxItem, log interface {
	Warn(string, ...any)
	Error(string, ...any)
}) {
	err := ack.Ack(c.ctx, it.Inbound)
	if err != nil && c.ctx.Err() != nil {
		return // stopping: acked and removed at the next start
	}
	if err == nil || !errors.Is(err, channel.ErrNotConnected) {
		if err != nil {
			log.Warn("could not acknowledge a message to its platform", "err", err)
		}
		c.handled(it, log)
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		wait := 500 * time.Millisecond
		for range ackTries {
			select {
			case <-time.After(wait):
			case <-c.ctx.Done():
				return
			}
			err = ack.Ack(c.ctx, it.Inbound)
			if err == nil || !errors.Is(err, channel.ErrNotConnected) {
				break
			}
			wait = min(2*wait, time.Minute)
		}
		if err != nil && c.ctx.Err() != nil {
			return
		}
		if err != nil {
			log.Warn("could not acknowledge a message to its platform", "err", err)
		}
		c.handled(it, log)
	}()
}

// process decides and acts on one message.
func (c *Inbound) process(ctx context.Context, m engine.Inbound, log interface {
	Info(string, ...any)
	Debug(string, ...any)
	Warn(string, ...any)
}) error {
	ca := c.accounts[accountKey(m.Channel, m.Account)]
	if ca == nil {
		log.Warn("message for a channel account that is no longer configured: dropped")
		return nil
	}
	v, err := c.decide(m)
	if err != nil {
		return err
	}
	log.Debug("access", "action", v.Action.String(), "reason", v.Reason, "owner", v.Owner)
	route := c.router.Resolve(m, v.Owner)
	if m.Button {
		// deliver let only an owner's press through.
		if !v.Owner {
			return nil
		}
		return c.button(ca, m, route, log)
	}
	switch v.Action {
	case access.Drop:
		c.removeMedia(m)
		return nil
	case access.Pair:
		c.removeMedia(m)
		return c.pair(ca, m, log)
	case access.Context:
		c.removeMedia(m)
		return c.keepContext(route.Key, m)
	}
	ag := c.g.Agent(route.AgentID)
	if ag == nil {
		return fmt.Errorf("binding names agent %q, which is not configured", route.AgentID)
	}
	text := strings.TrimSpace(m.Text)
	if word, _, _ := strings.Cut(strings.TrimPrefix(text, "/"), " "); strings.HasPrefix(text, "/") && access.Reserved(word) {
		if !v.Owner {
			log.Warn("owner-only command refused", "command", word, "sender", access.Display(m.SenderID))
			return c.send(ca, m, "Only the owner can use /"+strings.ToLower(word)+".", false)
		}
		return c.send(ca, m, "/"+strings.ToLower(word)+" is not available from a channel; use the openclaw CLI on the gateway.", false)
	}
	if name, args, ok := gateway.ParseCommand(text); ok {
		if access.Privileged(name) && !v.Owner {
			log.Warn("owner-only command refused", "command", name, "sender", access.Display(m.SenderID))
			return c.send(ca, m, "Only the owner can use /"+name+".", false)
		}
		if name != "new" && name != "reset" || args == "" {
			res, err := c.g.Command(ctx, ag, route.Key, name, args, func(api.Event) {})
			if err != nil {
				var ae *api.Error
				if errors.As(err, &ae) {
					return c.send(ca, m, ae.Message, false)
				}
				return err
			}
			if res != nil && res.Reply != "" {
				return c.send(ca, m, res.Reply, false)
			}
			return nil
		}
		// "/new <message>": a fresh session, then the message.
		if _, err := c.g.Command(ctx, ag, route.Key, name, "", func(api.Event) {}); err != nil {
			return err
		}
		m.Text = args
	}
	return c.turn(ctx, ca, ag, route, v, m)
}

// decide runs access control on m.
func (c *Inbound) decide(m engine.Inbound) (access.Verdict, error) {
	ca := c.accounts[accountKey(m.Channel, m.Account)]
	if ca == nil {
		return access.Verdict{Action: access.Drop, Reason: "account not configured"}, nil
	}
	approved := false
	if m.ChatType == engine.ChatDirect && !ca.Policy.IsOwner(m.SenderID) {
		var err error
		if approved, err = c.pairing.Approved(m.Channel, m.Account, m.SenderID); err != nil {
			return access.Verdict{}, err
		}
	}
	return ca.Policy.Decide(m, approved), nil
}

// turn runs a model turn for m; its reply goes to the outbox with the end
// of the turn.
func (c *Inbound) turn(ctx context.Context, ca *chanAccount, ag *gateway.Agent, route routing.Route, v access.Verdict, m engine.Inbound) error {
	history, err := c.takeContext(route.Key)
	if err != nil {
		return err
	}
	name := m.SenderName
	if name == "" {
		name = m.SenderID
	}
	if m.ChatType != engine.ChatDirect {
		name = m.ChatID
	}
	owner := v.Owner
	if owner {
		c.noteOwner(m) // where "last" sends a reminder (announce.go)
	}
	// SharedWithOwner: a non-owner in the owner's main session
	// (session.dmScope "main") has their text marked as not the owner's.
	o := &gateway.Origin{
		In:      m,
		Trusted: prompt.Trusted{Channel: m.Channel, Provider: m.Channel, ChatType: m.ChatType, AccountID: m.Account, MessageID: m.MessageID, WasMentioned: v.Mentioned, History: history, SenderIsOwner: &owner, SharedWithOwner: route.Main && !owner},
		Meta:    session.Meta{ChatType: string(m.ChatType), Channel: m.Channel, DisplayName: name},
		// MEMORY.md only for the owner, even where session.dmScope puts
		// others in the main session.
		Main:     route.Main && v.Owner,
		Owner:    v.Owner,
		Created:  &tool.Created{},
		Stopping: c.isStopping,
	}
	pv := c.startPreview(ctx, ca, m)
	o.Reply = func(r delivery.Reply) ([]session.Record, error) {
		r.Media = c.confineMedia(ag, m, v.Owner, o.Created, r.Media, ca.MediaDir)
		// The streamed preview becomes the reply's first message; a
		// reply with nothing to send (empty text after a tool call)
		// leaves it to drop, which deletes it.
		r.Replace = pv.finish()
		recs, err := c.outbox.Records(ca.Adapter, ca.chunking(), m, r)
		if err != nil || len(recs) == 0 {
			pv.release()
		}
		return recs, err
	}
	defer pv.drop(ctx, ca, m.ChatID, c.log)
	emit := func(ev api.Event) {
		switch {
		case ev.Type == api.EventApproval && ev.Approval != nil:
			c.approvalNotice(ca, m, v.Owner, ev.Approval)
		case ev.Type == api.EventDelta:
			pv.add(ev.Text)
		}
	}
	if t, ok := ca.Adapter.(channel.Typer); ok {
		_ = t.Typing(ctx, m.ChatID, true) // best effort: a cosmetic
		defer func() { _ = t.Typing(context.WithoutCancel(ctx), m.ChatID, false) }()
	}
	res, err := c.g.RunTurn(ctx, ag, route.Key, o, m.DedupKey(), emit)
	if err == nil && res != nil && res.Command == "duplicate" {
		// Handled before a crash: answered (its reply is in the outbox),
		// or cut by the crash and closed at start — then the sender hears
		// so instead of silence.
		if out, ok, e := c.g.Sessions().Outcome(m.DedupKey()); e == nil && ok && out.State == session.OutcomeInterrupted {
			return c.send(ca, m, "⚠️ I was restarted before I could answer that. Please send it again.", false)
		}
	}
	c.outbox.Wake()
	var ae *api.Error
	if errors.As(err, &ae) && ae.Code != api.CodeInternal {
		return nil // a failed turn: recorded, and its notice queued
	}
	return err
}

// confineMedia keeps the MEDIA: attachments of a model's reply that its
// recipients may get. A reply is model output, and anyone it answers can
// ask the model for a line "MEDIA:<path>":
//
//   - The owner, alone in a direct chat, gets URLs and files inside the
//     agent's workspace (after symlinks): a model talked into
//     "MEDIA:/var/lib/openclaw/state.db" must not mail the state, the
//     config or a channel's device keys even to the owner's own chat.
//   - Everyone else (a non-owner, or a group, where non-owners read too)
//     gets URLs (sent as text, never fetched), files this turn's file
//     tools created that still hold what they wrote (tool.Created: a hard
//     link, a symlink or a copy made by a command is not one), and the
//     media the sender sent in with this message — never a bootstrap
//     file, MEMORY.md or memory/, whatever the name or link it is reached
//     by. Non-owners' turns have no tools today (runTurn), so for them it
//     is only their own media.
//
// What is withheld is logged (escaped) and, once per reply, the owner is
// told; the recipient only misses the attachment.
//
// For anyone but the owner in a DM, what is sent is never the workspace
// path that was checked: a file the turn created is copied, checked and
// copied in one read, into mediaDir/out (a process could swap the name
// for a link to MEMORY.md before the outbox reads it), and the sender's
// own media is sent from the adapter's copy.
func (c *Inbound) confineMedia(ag *gateway.Agent, m engine.Inbound, owner bool, created *tool.Created, media []string, mediaDir string) []string {
	strict := !owner || m.ChatType != engine.ChatDirect
	var out, withheld []string
	root, err := filepath.EvalSymlinks(ag.Workspace)
	if err != nil {
		root = ag.Workspace
	}
	// One file named several ways (MEMORY.md, ./MEMORY.md, its absolute
	// path, a symlink to it) is sent once.
	seen := map[string]bool{}
	keep := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range media {
		if outbox.IsURL(p) {
			keep(p)
			continue
		}
		full := p
		if !filepath.IsAbs(full) {
			full = filepath.Join(ag.Workspace, full)
		}
		real, err := filepath.EvalSymlinks(full)
		switch {
		case err != nil:
		case !strict:
			if inside(root, real) {
				keep(real)
				continue
			}
		case ownerFile(root, real):
		default:
			if own, ok := sentIn(m, real); ok {
				keep(own)
				continue
			}
			if mediaDir == "" && c.cfg.StateDir != "" {
				mediaDir = filepath.Join(c.cfg.StateDir, "media")
			}
			if mediaDir == "" {
				break // nowhere of our own to take the copy: withheld
			}
			if snap, ok := created.Snapshot(real, filepath.Join(mediaDir, "out")); ok {
				keep(snap)
				continue
			}
		}
		if !strict {
			c.log.Warn("reply attachment refused: not a file inside the workspace", "agent", ag.ID, "path", api.EscapeControl(p))
			continue
		}
		c.log.Warn("reply attachment withheld: the recipient is not the owner and the turn did not create it",
			"agent", ag.ID, "channel", m.Channel, "chat", access.Display(m.ChatID), "sender", access.Display(m.SenderID), "path", api.EscapeControl(p))
		withheld = append(withheld, p)
	}
	if len(withheld) > 0 {
		shown := withheld[:min(len(withheld), 5)]
		for i, p := range shown {
			shown[i] = api.EscapeLimit(p, 120) // escaped, never folded: a newline in a name shows as \n
		}
		more := ""
		if n := len(withheld) - len(shown); n > 0 {
			more = fmt.Sprintf(" and %d more", n)
		}
		// EscapeID, as in the pairing note: a look-alike of the owner's id
		// ("\u212aate@…") must not read as the owner's own.
		where := "a reply to " + api.EscapeID(m.SenderID)
		if m.ChatType != engine.ChatDirect {
			where += " in group " + api.EscapeID(m.ChatID)
		}
		c.notifyOwner("", fmt.Sprintf("Withheld %d attachment(s) from %s on %s: %s%s. Only files the turn itself created, or media the sender sent, go to anyone but you; send it yourself if it was meant for them.",
			len(withheld), where, m.Channel, strings.Join(shown, ", "), more))
	}
	return out
}

// inside reports whether real (symlinks resolved) is root or below it.
func inside(root, real string) bool {
	rel, err := filepath.Rel(root, real)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// ownerNames are the workspace files that are the owner's whoever asks: the
// bootstrap files and the long-term memory (memory/ is a folder).
var ownerNames = []string{"AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md", "IDENTITY.md", "HEARTBEAT.md", "BOOTSTRAP.md", "MEMORY.md", "memory"}

// ownerFile reports whether real (symlinks resolved) is one of ownerNames
// of the workspace root, lies under one, or is the same file as one of
// them by another name (a hard link). Names compare case-insensitively:
// on a case-insensitive file system "memory.MD" is MEMORY.md.
func ownerFile(root, real string) bool {
	if inside(root, real) {
		rel, _ := filepath.Rel(root, real)
		first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		for _, n := range ownerNames {
			if strings.EqualFold(first, n) {
				return true
			}
		}
	}
	fi, err := os.Stat(real)
	if err != nil {
		return true // unreadable: not attachable anyway
	}
	for _, n := range ownerNames {
		if o, err := os.Stat(filepath.Join(root, n)); err == nil && os.SameFile(fi, o) {
			return true
		}
	}
	return false
}

// sentIn reports whether real is the same file as one of m's own media,
// and returns that media's own path (the adapter's copy, outside the
// workspace), which is what is sent.
func sentIn(m engine.Inbound, real string) (string, bool) {
	fi, err := os.Stat(real)
	if err != nil {
		return "", false
	}
	for _, md := range m.Media {
		if md.Path == "" {
			continue
		}
		if o, err := os.Stat(md.Path); err == nil && os.SameFile(fi, o) {
			return md.Path, true
		}
	}
	return "", false
}

// send queues a reply that is not a turn's (a command's answer, a notice).
func (c *Inbound) send(ca *chanAccount, m engine.Inbound, text string, quote bool, buttons ...engine.Button) error {
	r := delivery.Reply{Text: text, ReplyToCurrent: quote, Buttons: buttons}
	recs, err := c.outbox.Records(ca.Adapter, ca.chunking(), m, r)
	if err != nil {
		return err
	}
	if err := c.outbox.Put(recs); err != nil {
		return err
	}
	c.outbox.Wake()
	return nil
}

// pair gives an unknown sender a pairing code, once per request.
func (c *Inbound) pair(ca *chanAccount, m engine.Inbound, log interface {
	Info(string, ...any)
	Debug(string, ...any)
	Warn(string, ...any)
}) error {
	req, created, err := c.pairing.Request(m.Channel, m.Account, m.SenderID, m.SenderName, m.ChatID)
	if errors.Is(err, access.ErrTooMany) {
		log.Warn("pairing request refused: too many pending on this account", "sender", access.Display(m.SenderID))
		return nil
	}
	if err != nil {
		return err
	}
	if !created && req.Told {
		return nil // they have their code; nothing they write reaches the model
	}
	log.Info("new pairing request", "sender", access.Display(m.SenderID), "code", req.Code)
	text := fmt.Sprintf("Hi! This assistant only talks to people its owner has approved. Your pairing code is %s (valid for 1 hour). Ask the owner to run: openclaw pairing approve %s %s", req.Code, m.Channel, req.Code)
	if err := c.send(ca, m, text, false); err != nil {
		return err
	}
	// Queued, then marked: a crash in between tells the sender twice
	// rather than never.
	if err := c.pairing.MarkTold(m.Channel, m.Account, req.Code); err != nil {
		return err
	}
	if !created {
		return nil // the owner heard of it when it was made
	}
	// Escaped: a name is the sender's to choose (bidi overrides,
	// zero-width characters, "already approved by security").
	// EscapeID: a look-alike of an owner's id shows escaped
	// ("\u212aate@…"), never as the owner.
	// Not oneLine: folding white space first would hide what the id is.
	who := api.EscapeID(m.SenderID)
	if m.SenderName != "" {
		who += " (name: " + api.EscapeControl(oneLine(m.SenderName, 40)) + ")"
	}
	c.notifyOwner("", fmt.Sprintf("Pairing request on %s from %s. Approve: openclaw pairing approve %s %s", m.Channel, who, m.Channel, req.Code), pairingButtons(m.Channel, req.Code)...)
	return nil
}

// keepContext keeps an unmentioned group message for the next answered
// message of the group (bounded: the newest groupContextMax lines).
func (c *Inbound) keepContext(key engine.SessionKey, m engine.Inbound) error {
	sender := m.SenderName
	if sender == "" {
		sender = m.SenderID
	}
	line := groupLine{Sender: oneLine(sender, 80), Text: oneLine(m.Text, 500), At: m.Timestamp}
	return c.db.UpdateRecords(func(tx engine.RecordTx) error {
		var lines []groupLine
		if _, err := tx.Get(bucketGroupCtx, string(key), &lines); err != nil {
			lines = nil // unreadable: start over
		}
		lines = append(lines, line)
		total := 0
		for i := len(lines) - 1; i >= 0; i-- {
			total += len(lines[i].Text)
			if len(lines)-i > groupContextMax || total > groupContextMaxChars {
				lines = lines[i+1:]
				break
			}
		}
		return tx.Put(bucketGroupCtx, string(key), lines)
	})
}

// takeContext returns and clears the group context kept for key.
func (c *Inbound) takeContext(key engine.SessionKey) ([]prompt.HistoryLine, error) {
	var lines []groupLine
	err := c.db.UpdateRecords(func(tx engine.RecordTx) error {
		found, err := tx.Get(bucketGroupCtx, string(key), &lines)
		if err != nil || !found {
			lines = nil
			return nil
		}
		return tx.Delete(bucketGroupCtx, string(key))
	})
	if err != nil {
		return nil, fmt.Errorf("read the group context: %w", err)
	}
	out := make([]prompt.HistoryLine, len(lines))
	for i, l := range lines {
		out[i] = prompt.HistoryLine{Sender: l.Sender, Text: l.Text, At: l.At}
	}
	return out, nil
}

// approvalNotice tells the owner about a pending exec approval: in the
// chat of the turn when the sender is an owner, else on the owner's
// channel. The command is shown exactly, escaped (a newline shows as \n:
// "grep x .\nrm -rf memory" is two commands and reads as two), never
// folded; one too long for a chat is cut visibly (noticeCommand).
func (c *Inbound) approvalNotice(ca *chanAccount, m engine.Inbound, owner bool, a *api.Approval) {
	var extra strings.Builder
	if len(a.Env) > 0 {
		extra.WriteString("\nwith env " + api.EscapeLimit(strings.Join(a.Env, " "), gateway.MaxNoticeCommand/4))
	}
	if a.Background {
		extra.WriteString("\nruns in the background (keeps running after the reply)")
	}
	text := fmt.Sprintf("Approval needed (%s): %s\nin %s%s\nReply /approve %s or /deny %s",
		api.EscapeControl(a.SessionKey), gateway.NoticeCommand(a.Command), api.EscapeControl(a.Cwd), extra.String(), a.ID, a.ID)
	if owner {
		if err := c.send(ca, m, text, false, approvalButtons(a.ID)...); err != nil {
			c.log.Error("could not queue an approval notice", "err", err)
		}
		return
	}
	c.notifyOwner("", text, approvalButtons(a.ID)...)
}

// linkChanged is the supervisors' state callback: a link that fails or is
// logged out is reported to the owner on another channel.
func (c *Inbound) linkChanged(st channel.Status) {
	if st.State != channel.StateLoggedOut && st.State != channel.StateError {
		return // not-linked: never was; nothing died
	}
	what := "failed"
	if st.State == channel.StateLoggedOut {
		what = "was logged out; link it again with `openclaw channels login " + st.Channel + "`"
	}
	c.notifyOwner(st.Channel, fmt.Sprintf("The %s link (%s) %s: %s", st.Channel, st.Account, what, st.Reason))
}

// notifyOwner queues text to the first owner (commands.ownerAllowFrom, in
// order) reachable on a configured channel account of a channel other than
// skip ("" skips nothing). Nobody reachable: logged.
func (c *Inbound) notifyOwner(skip, text string, buttons ...engine.Button) {
	for _, o := range c.cfg.Owners {
		// The entry as IsOwner reads it (trimmed, channel case-folded,
		// "+1 (555) …" tidied): a note to the raw text would be lost.
		ch, oid, err := identity.Owner(o)
		if err != nil || (skip != "" && ch == skip) {
			continue // the failing channel cannot carry the news
		}
		id := oid.Key
		for _, k := range c.order {
			ca := c.accounts[k]
			if ca.Adapter.Channel() != ch || ca.sup.Status().State != channel.StateLinked {
				continue // a note queued on a dead link would wait unseen
			}
			m := engine.Inbound{Channel: ch, Account: ca.Adapter.Account(), ChatType: engine.ChatDirect, ChatID: id, SenderID: id}
			if err := c.send(ca, m, text, false, buttons...); err != nil {
				c.log.Error("could not queue a note to the owner", "err", err)
				continue
			}
			return
		}
	}
	c.log.Warn("no owner reachable on another channel for a note", "note", text)
}

// prune forgets dedup keys older than seenTTL (run at start and hourly,
// pruneHourly: the bucket would otherwise only grow); the outbox prunes
// its own records.
func (c *Inbound) prune() {
	seenAt := func(raw []byte) (time.Time, bool) {
		var at time.Time
		return at, json.Unmarshal(raw, &at) == nil
	}
	if err := outbox.PruneBucket(c.db, bucketInboxSeen, c.cfg.Now().Add(-seenTTL), seenAt); err != nil {
		c.log.Warn("could not prune old records", "bucket", bucketInboxSeen, "err", err)
	}
}

// pruneHourly prunes on its own ticker until the channel side stops.
func (c *Inbound) pruneHourly() {
	defer c.wg.Done()
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
			c.prune()
		}
	}
}

// oneLine flattens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}
