package imessage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
)

// ChannelName is the channel's name in config, sessions and dedup keys.
const ChannelName = "imessage"

// cursorKey is the Store key of the resume cursor.
const cursorKey = "imsg.cursor"

// Timeouts of the requests Run makes itself.
const (
	probeTimeout     = 60 * time.Second // ssh connect (15 s) + imsg start + database open
	subscribeTimeout = 30 * time.Second
	sendTimeout      = 2 * time.Minute // attachment sends wait up to 8 s for their row; AppleScript can be slow
)

// Deps are what the gateway hands an adapter.
type Deps struct {
	// Account is the account name ("default" when empty).
	Account string
	// Store holds the resume cursor (required).
	Store channel.Store
	// Logger (nil: discard).
	Logger *slog.Logger
	// MediaDir is where inbound attachments are copied (required for
	// inbound media): the gateway may delete what is in it, so a Mac's
	// own file is never handed on by its path (see attachments.go).
	MediaDir string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Adapter is one iMessage account served by `imsg rpc`. It implements
// channel.Adapter and channel.MediaSender.
type Adapter struct {
	cfg  Config
	deps Deps
	log  *slog.Logger

	running atomic.Bool

	mu      sync.Mutex
	conn    *rpcConn // the running imsg, nil when Run is not connected
	tracked bool     // conn advertises send.tracked
	status  channel.Status
}

var (
	_ channel.Adapter     = (*Adapter)(nil)
	_ channel.MediaSender = (*Adapter)(nil)
)

// New returns an adapter for cfg (the imsg backend; see Open for
// bluebubbles).
func New(cfg Config, deps Deps) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.Backend != BackendIMsg {
		return nil, fmt.Errorf("%s.backend: %q is not served by imessage.New (use imessage.Open)", keyPrefix, cfg.Backend)
	}
	if deps.Store == nil {
		return nil, errors.New("imessage: Deps.Store is required (it keeps the resume cursor)")
	}
	if deps.Account == "" {
		deps.Account = "default"
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	a := &Adapter{cfg: cfg, deps: deps, log: deps.Logger.With("channel", ChannelName, "account", deps.Account)}
	a.status = channel.Status{Channel: ChannelName, Account: deps.Account, State: channel.StateStopped, Since: deps.Now()}
	return a, nil
}

// Channel implements channel.Adapter.
func (a *Adapter) Channel() string { return ChannelName }

// Account implements channel.Adapter.
func (a *Adapter) Account() string { return a.deps.Account }

// MaxMediaBytes implements channel.MediaSender: mediaMaxMb.
func (a *Adapter) MaxMediaBytes() int64 { return a.cfg.maxMediaBytes() }

// Status implements channel.Adapter.
func (a *Adapter) Status() channel.Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}

func (a *Adapter) setState(s channel.State, reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.status.State != s || a.status.Reason != reason {
		a.status.Since = a.deps.Now()
	}
	a.status.State, a.status.Reason = s, reason
}

// cursorRecord is the persisted resume point: the last imsg cursor (a
// message rowid) whose message was delivered, and the database it belongs
// to (imsg: cursors are scoped to one chat.db and must be discarded when
// it changes).
type cursorRecord struct {
	Rowid int64  `json:"rowid"`
	DB    string `json:"db,omitempty"`
}

// probeResult is the part of imsg's `initialize` (= `status`) result used.
type probeResult struct {
	Version         string `json:"version"`
	ProtocolVersion int    `json:"protocol_version"`
	Database        struct {
		Path  string `json:"path"`
		Ready bool   `json:"ready"`
		Error string `json:"error"`
	} `json:"database"`
	Methods []string `json:"methods"`
}

// Run implements channel.Adapter: it starts `imsg rpc` (locally or over
// ssh), probes it, subscribes to new messages after the stored cursor and
// delivers them until ctx is cancelled (nil) or imsg exits (an error).
func (a *Adapter) Run(ctx context.Context, in channel.Inbox) error {
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("imessage: Run is already running for this account")
	}
	defer a.running.Store(false)
	err := a.run(ctx, in)
	if ctx.Err() != nil {
		a.setState(channel.StateStopped, "")
		return nil
	}
	return err
}

func (a *Adapter) run(ctx context.Context, in channel.Inbox) error {
	a.setState(channel.StateConnecting, "")
	name, args := commandLine(a.cfg, rpcWords(a.cfg)...)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	c, err := startRPC(runCtx, a.log, name, args...)
	if err != nil {
		reason := "cannot start " + name
		if errors.Is(err, exec.ErrNotFound) {
			reason = name + " not found (set channels.imessage.cliPath)"
		}
		a.setState(channel.StateError, reason)
		return fmt.Errorf("imessage: %w", err)
	}
	defer func() {
		a.mu.Lock()
		if a.conn == c {
			a.conn = nil
		}
		a.mu.Unlock()
		stop() // closes imsg's stdin; killed after stopGrace
		<-c.Done()
	}()

	info, err := a.probe(ctx, c)
	if err != nil {
		return err
	}
	a.log.Info("imsg ready", "version", sanitize(info.Version, 40), "db", sanitize(info.Database.Path, 200))

	cur, err := a.loadCursor(info.Database.Path)
	if err != nil {
		a.setState(channel.StateError, "cannot read the iMessage cursor")
		return err
	}
	start := cur.Rowid
	// since_rowid resumes exclusively after the cursor; without one (first
	// run) the watch starts at the current tail: history never arrives as
	// new. attachments only when asked: imsg then resolves paths.
	params := map[string]any{}
	if start > 0 {
		params["since_rowid"] = start
	}
	if a.cfg.IncludeAttachments {
		params["attachments"] = true
	}
	var sub struct {
		Subscription int64 `json:"subscription"`
	}
	sctx, cancel := context.WithTimeout(ctx, subscribeTimeout)
	err = c.call(sctx, "watch.subscribe", params, &sub)
	cancel()
	if err != nil {
		a.setState(channel.StateError, "imsg watch.subscribe failed")
		return fmt.Errorf("imessage: watch.subscribe: %w", err)
	}

	a.mu.Lock()
	a.conn = c
	a.tracked = slices.Contains(info.Methods, "send.tracked")
	a.mu.Unlock()
	a.setState(channel.StateLinked, "")
	a.log.Info("imessage linked", "since_rowid", start, "subscription", sub.Subscription)

	for {
		if w, ok := c.next(); ok {
			if err := a.handle(ctx, in, w, sub.Subscription, start, &cur); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				a.setState(channel.StateError, "delivery failed; reconnecting")
				return err
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.qsig:
		case <-c.Done():
			if c.queued() > 0 {
				continue // deliver what imsg wrote before it exited
			}
			a.setState(channel.StateError, "imsg rpc exited")
			return fmt.Errorf("imessage: %w", c.Err())
		}
	}
}

// probe checks that imsg speaks the protocol and can read the database:
// `initialize` (imsg's readiness snapshot), falling back to `chats.list`
// for builds that predate it.
func (a *Adapter) probe(ctx context.Context, c *rpcConn) (probeResult, error) {
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var info probeResult
	err := c.call(pctx, "initialize", map[string]any{"protocol_version": 1}, &info)
	var re *rpcError
	if errors.As(err, &re) && re.Code == codeMethodNotFound {
		info = probeResult{}
		err = c.call(pctx, "chats.list", map[string]any{"limit": 1}, nil)
		info.Database.Ready = err == nil
	}
	if err != nil {
		reason := "imsg did not answer"
		if errors.As(err, &re) {
			reason = fmt.Sprintf("imsg probe failed (error %d)", re.Code)
			if re.Code == codeDBUnavailable {
				reason = "imsg cannot read the Messages database: grant Full Disk Access or check channels.imessage.dbPath"
			}
		} else if errors.Is(err, errClosed) {
			reason = "imsg rpc exited at start (check cliPath, remoteHost and ssh keys)"
		}
		a.setState(channel.StateError, reason)
		return info, fmt.Errorf("imessage: probe: %w", err)
	}
	if !info.Database.Ready {
		reason := "imsg cannot read the Messages database: grant Full Disk Access or check channels.imessage.dbPath"
		if info.Database.Error != "" {
			// imsg documents database.error as redacted and actionable.
			reason += " (" + sanitize(info.Database.Error, 200) + ")"
		}
		a.setState(channel.StateError, reason)
		return info, errors.New("imessage: " + reason)
	}
	return info, nil
}

func (a *Adapter) loadCursor(db string) (cursorRecord, error) {
	var cur cursorRecord
	ok, err := a.deps.Store.Get(cursorKey, &cur)
	if err != nil {
		return cur, fmt.Errorf("imessage: read cursor: %w", err)
	}
	if ok && cur.DB != "" && db != "" && cur.DB != db {
		// A rowid of another database means nothing here; start at the
		// new database's tail instead of replaying or skipping.
		a.log.Warn("imessage: the Messages database changed; starting at its newest message", "was", sanitize(cur.DB, 200), "now", sanitize(db, 200))
		cur = cursorRecord{}
	}
	if db != "" {
		cur.DB = db
	}
	return cur, nil
}

// handle acts on one notification. An error ends Run: the message was not
// delivered and will come again after the restart, from the cursor.
func (a *Adapter) handle(ctx context.Context, in channel.Inbox, w *wireMsg, sub, start int64, cur *cursorRecord) error {
	switch w.Method {
	case "message":
	case "watch.overflow":
		// imsg ended the subscription after its buffer filled; resubscribe
		// from our cursor (which covers only what was delivered).
		return errors.New("imessage: imsg dropped the watch (buffer_limit_exceeded); resuming from the cursor")
	default:
		a.log.Debug("imessage: ignoring notification", "method", sanitize(w.Method, 60))
		return nil
	}
	n, err := parseMessageParams(w)
	if err != nil {
		a.log.Warn("imessage: unreadable message notification", "err", err)
		return nil
	}
	if n.Subscription != sub {
		return nil
	}
	m := &n.Message
	if m.ID > 0 && m.ID <= start {
		return nil // already delivered before the restart (imsg's watch is at-least-once)
	}
	if !m.IsFromMe && !m.IsReaction {
		inb := a.inbound(ctx, m)
		if inb.Text == "" && len(inb.Media) == 0 {
			a.log.Debug("imessage: skipping a message with neither text nor media", "guid", m.GUID)
		} else if err := in.Deliver(ctx, inb); err != nil {
			return fmt.Errorf("imessage: deliver %s: %w", m.GUID, err)
		} else {
			a.mu.Lock()
			a.status.LastInbound = a.deps.Now()
			a.mu.Unlock()
		}
	}
	if pos := m.position(); pos > cur.Rowid {
		cur.Rowid = pos
		if err := a.deps.Store.Put(cursorKey, cur); err != nil {
			// Not fatal: a restart then replays from the older cursor and
			// the gateway's dedup drops what it has seen.
			a.log.Warn("imessage: saving the cursor failed", "err", err)
		}
	}
	return nil
}

// inbound normalizes an imsg message.
func (a *Adapter) inbound(ctx context.Context, m *imsgMessage) engine.Inbound {
	inb := engine.Inbound{
		Channel:    ChannelName,
		Account:    a.deps.Account,
		ChatID:     m.chatID(),
		ChatType:   engine.ChatDirect,
		SenderID:   m.Sender, // imsg's raw handle: access.Canonical compares it
		SenderName: m.SenderName,
		MessageID:  m.GUID,
		Text:       m.Text,
		ReplyTo:    m.ReplyToGUID,
		Timestamp:  m.timestamp(),
	}
	if m.IsGroup {
		inb.ChatType = engine.ChatGroup
	}
	if inb.SenderID == "" && !m.IsGroup {
		inb.SenderID = m.ChatIdentifier // a direct chat's identifier is the other handle
	}
	if inb.Timestamp.IsZero() {
		inb.Timestamp = a.deps.Now()
	}
	if a.cfg.IncludeAttachments && len(m.Attachments) > 0 {
		var notes []string
		inb.Media, notes = a.media(ctx, m)
		if len(notes) > 0 {
			inb.Text = strings.TrimSpace(inb.Text + "\n" + strings.Join(notes, "\n"))
		}
	}
	return inb
}

// Send implements channel.Adapter with imsg's `send` (or `send.tracked`,
// see the package doc on idempotency).
func (a *Adapter) Send(ctx context.Context, m channel.Outbound) (channel.Receipt, error) {
	a.mu.Lock()
	c, tracked := a.conn, a.tracked
	a.mu.Unlock()
	if c == nil {
		return channel.Receipt{}, fmt.Errorf("imessage send: %w", channel.ErrNotConnected)
	}
	target, err := parseTarget(m.ChatID)
	if err != nil {
		return channel.Receipt{}, channel.Permanent(fmt.Errorf("imessage send: %w", err))
	}
	if target.service == "" {
		target.service = a.cfg.Service
	}
	text := m.Text
	var files []string
	max := a.cfg.maxMediaBytes()
	for _, md := range m.Media {
		if md.Path == "" {
			if md.URL != "" {
				// imsg sends local files only; a link is the fallback the
				// contract gives adapters without media.
				text = strings.TrimSpace(text + "\n" + md.URL)
			}
			continue
		}
		st, err := os.Stat(md.Path)
		if err != nil {
			return channel.Receipt{}, channel.Permanent(fmt.Errorf("imessage send: attachment: %w", err))
		}
		if !st.Mode().IsRegular() {
			return channel.Receipt{}, channel.Permanent(fmt.Errorf("imessage send: attachment %s is not a regular file", filepath.Base(md.Path)))
		}
		if st.Size() > max {
			return channel.Receipt{}, channel.Permanent(fmt.Errorf("imessage send: attachment %s is %d bytes, over mediaMaxMb (%d MB)", filepath.Base(md.Path), st.Size(), a.cfg.MediaMaxMB))
		}
		if a.cfg.RemoteHost != "" {
			return channel.Receipt{}, channel.Permanent(errors.New("imessage send: attachments are not sent over remoteHost yet"))
		}
		files = append(files, md.Path)
	}
	if strings.TrimSpace(text) == "" && len(files) == 0 {
		return channel.Receipt{}, channel.Permanent(errors.New("imessage send: nothing to send"))
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, sendTimeout)
		defer cancel()
	}
	var r channel.Receipt
	if tracked && len(files) == 0 && m.IdempotencyKey != "" && target.isChat() {
		r, err = a.sendTracked(ctx, c, target, text, m.IdempotencyKey)
	} else {
		r, err = a.sendPlain(ctx, c, target, text, files)
	}
	if err != nil {
		return r, err
	}
	a.mu.Lock()
	a.status.LastOutbound = r.SentAt
	a.mu.Unlock()
	return r, nil
}

// sendResult is imsg's send result: {"ok":true,"id":1979,"guid":"…"}.
type sendResult struct {
	OK        bool   `json:"ok"`
	GUID      string `json:"guid"`
	MessageID string `json:"message_id"`
}

func (a *Adapter) sendPlain(ctx context.Context, c *rpcConn, t target, text string, files []string) (channel.Receipt, error) {
	// imsg's send takes one file: the text goes with the first file, each
	// further file in a send of its own.
	var r channel.Receipt
	for i := 0; i == 0 || i < len(files); i++ {
		p := t.params(a.cfg.Region)
		if i == 0 && text != "" {
			p["text"] = text
		}
		if i < len(files) {
			p["file"] = files[i]
		}
		var res sendResult
		if err := c.call(ctx, "send", p, &res); err != nil {
			return r, a.sendError(c, err, i)
		}
		if r.MessageID == "" {
			r.MessageID = cmpOr(res.GUID, res.MessageID)
		}
	}
	r.SentAt = a.deps.Now()
	return r, nil
}

// sendTracked sends text with a GUID derived from the idempotency key, so
// a retry after a lost response finds the first attempt instead of sending
// again.
func (a *Adapter) sendTracked(ctx context.Context, c *rpcConn, t target, text, key string) (channel.Receipt, error) {
	guid := attemptUUID(key)
	var st struct {
		SendState    string          `json:"send_state"`
		StatusFields json.RawMessage `json:"status_fields"`
	}
	if err := c.call(ctx, "message.send_status", map[string]any{"guid": guid}, &st); err != nil {
		return channel.Receipt{}, a.sendError(c, err, 0)
	}
	if len(st.StatusFields) > 0 && string(st.StatusFields) != "null" {
		if st.SendState == "failed" {
			return channel.Receipt{}, channel.Permanent(fmt.Errorf("imessage send: an earlier attempt of this message failed (guid %s)", guid))
		}
		return channel.Receipt{MessageID: guid, SentAt: a.deps.Now()}, nil // sent by an earlier attempt
	}
	p := t.params(a.cfg.Region)
	p["text"] = text
	p["attempt_id"] = guid
	var res sendResult
	err := c.call(ctx, "send.tracked", p, &res)
	var re *rpcError
	if errors.As(err, &re) && (re.Code == codeBridgeMissing || re.Code == codeMethodNotFound) {
		// The bridge went away since the probe; imsg guarantees nothing
		// was dispatched, so the plain send is not a duplicate.
		return a.sendPlain(ctx, c, t, text, nil)
	}
	if err != nil {
		return channel.Receipt{}, a.sendError(c, err, 0)
	}
	return channel.Receipt{MessageID: cmpOr(res.GUID, res.MessageID, guid), SentAt: a.deps.Now()}, nil
}

// sendError classifies an imsg error for the outbox: invalid requests and
// deliveries imsg calls unsafe to retry are permanent; the rest (busy,
// database or bridge unavailable, the process gone) are retried.
func (a *Adapter) sendError(c *rpcConn, err error, part int) error {
	where := "imessage send"
	if part > 0 {
		where = fmt.Sprintf("imessage send (attachment %d; earlier parts were sent)", part+1)
	}
	var re *rpcError
	if errors.As(err, &re) {
		d := re.delivery()
		switch {
		case re.Code == codeLanePoisoned:
			// imsg blocks every later send until it restarts; restart it
			// (Run returns, the supervisor starts a fresh imsg).
			c.fail(errors.New("imsg's send lane is blocked by an uncertain earlier send; restarting imsg"))
			return fmt.Errorf("%s: %w", where, err)
		case re.Code == codeInvalidParams, re.Code == codeInvalidRequest, re.Code == codeParseError, re.Code == codeMethodNotFound:
			return channel.Permanent(fmt.Errorf("%s: %w", where, err))
		case d.RetrySafe != nil && !*d.RetrySafe, re.Code == codeMaybeDelivered && d.RetrySafe == nil:
			// The message may have been delivered: imsg says never to
			// retry automatically, a duplicate being the worse outcome.
			return channel.Permanent(fmt.Errorf("%s: delivery outcome unknown, not retried: %w", where, err))
		}
		return fmt.Errorf("%s: %w", where, err)
	}
	if errors.Is(err, errClosed) {
		return fmt.Errorf("%s: %w: %w", where, channel.ErrNotConnected, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}

// attemptUUID derives a UUID (version 8, RFC 9562) from an idempotency key.
func attemptUUID(key string) string {
	sum := sha256.Sum256([]byte("openclaw-edge/imessage\x00" + key))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func cmpOr(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// target is where a send goes: exactly one of to, chatID, chatGUID,
// chatIdentifier (imsg rejects more than one).
type target struct {
	to, chatGUID, chatIdentifier string
	chatID                       int64
	service                      string
}

func (t target) isChat() bool { return t.to == "" }

// params are the send params for t; service and region only when set.
func (t target) params(region string) map[string]any {
	p := map[string]any{}
	switch {
	case t.chatID > 0:
		p["chat_id"] = t.chatID
	case t.chatGUID != "":
		p["chat_guid"] = t.chatGUID
	case t.chatIdentifier != "":
		p["chat_identifier"] = t.chatIdentifier
	default:
		p["to"] = t.to
	}
	if t.service != "" {
		p["service"] = t.service
	}
	if region != "" {
		p["region"] = region
	}
	return p
}

// parseTarget reads an Outbound.ChatID: the ChatID this adapter put on
// inbound messages (a decimal chat_id), or OpenClaw's target forms
// chat_id:N, chat_guid:G, chat_identifier:I, imessage:H, sms:H, auto:H, or
// a bare handle (phone or email).
func parseTarget(s string) (target, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return target{}, errors.New("empty chat id")
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return target{}, errors.New("chat id has control characters")
	}
	kind, rest, ok := strings.Cut(s, ":")
	if !ok {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && strings.Trim(s, "0123456789") == "" {
			if n <= 0 {
				return target{}, fmt.Errorf("chat_id %d is not positive", n)
			}
			return target{chatID: n}, nil
		}
		return target{to: s}, nil
	}
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return target{}, fmt.Errorf("%q has nothing after the prefix", s)
	}
	switch strings.ToLower(kind) {
	case "chat_id":
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || n <= 0 {
			return target{}, fmt.Errorf("chat_id %q is not a positive integer", rest)
		}
		return target{chatID: n}, nil
	case "chat_guid":
		return target{chatGUID: rest}, nil
	case "chat_identifier":
		return target{chatIdentifier: rest}, nil
	case "imessage", "sms", "auto":
		return target{to: rest, service: strings.ToLower(kind)}, nil
	case "mailto", "tel":
		return target{to: rest}, nil
	}
	return target{to: s}, nil
}
