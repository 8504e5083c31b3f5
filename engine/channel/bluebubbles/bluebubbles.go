// Package bluebubbles is the BlueBubbles backend of the iMessage channel
// (channels.imessage.backend "bluebubbles"): a BlueBubbles server on the
// Mac does the Messages work, this adapter talks to its REST API for sends
// and receives its webhooks for inbound messages. It implements the same
// channel.Adapter contract as the imsg backend and reports itself as the
// "imessage" channel.
//
// # What it is based on
//
// OpenClaw's docs/channels/bluebubbles.md (serverUrl, password, webhookPath,
// mediaMaxMb; webhooks authenticated by the password in the URL's query;
// GET /api/v1/ping) and extensions/bluebubbles/src/{send,monitor-normalize}.ts
// (POST /api/v1/message/text?password=… with {chatGuid, tempGuid, message};
// the response's data.guid; webhook bodies {"type":"new-message","data":
// Message} with guid, text, isFromMe, handle.address, chats[].guid /
// chatIdentifier / displayName, dateCreated in Unix milliseconds,
// threadOriginatorGuid, associatedMessageGuid/associatedMessageType for
// tapbacks; chat guids "service;-;handle" for direct chats and
// "service;+;id" for groups).
//
// # Choices
//
//   - The webhook is served on its own listener (webhookListen, e.g. a
//     loopback or LAN address), POST only, bodies up to 1 MiB, and every
//     request must carry the server password as the `password` (or `guid`)
//     query parameter, compared in constant time. Unlike OpenClaw, requests
//     from localhost are not trusted without it.
//   - Only "new-message" events from others are delivered; the server's
//     other events, is-from-me echoes and tapbacks are acknowledged and
//     dropped. ChatID is the chat guid (what sends address); SenderID the
//     handle address exactly as sent (the access layer compares ids,
//     access.Canonical). A Deliver error answers 500.
//   - Webhooks are not replayed: messages that arrive while the gateway is
//     down are not caught up (a catch-up through the server's message query
//     is left to do). Run pings the server first and reports linked.
//   - Send posts /api/v1/message/text with tempGuid derived from
//     Outbound.IdempotencyKey (BlueBubbles deduplicates sends by tempGuid).
//     A bare handle is addressed as the direct chat "iMessage;-;<handle>".
//     4xx answers (but 408 and 429) are permanent; 5xx, timeouts and
//     network errors are retried. Attachments are not sent (no
//     MediaSender: the gateway sends media as links) and inbound
//     attachments are not downloaded yet.
package bluebubbles

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
)

// ChannelName: BlueBubbles is a backend of the iMessage channel.
const ChannelName = "imessage"

// maxWebhookBody bounds one webhook request body.
const maxWebhookBody = 1 << 20

// Deps are what the gateway hands the adapter.
type Deps struct {
	Account string       // "default" when empty
	Logger  *slog.Logger // nil: discard
	Now     func() time.Time
	// HTTPClient for REST calls (nil: a client with a 30 s timeout).
	HTTPClient *http.Client
}

// Adapter is one BlueBubbles account.
type Adapter struct {
	cfg  Config
	deps Deps
	log  *slog.Logger
	base *url.URL

	mu     sync.Mutex
	status channel.Status
	addr   string // the webhook listener's address while Run serves
}

var _ channel.Adapter = (*Adapter)(nil)

// New returns an adapter for cfg.
func New(cfg Config, deps Deps) (*Adapter, error) {
	if err := cfg.Validate(""); err != nil {
		return nil, err
	}
	if cfg.WebhookPath == "" {
		cfg.WebhookPath = DefaultWebhookPath
	}
	if cfg.MediaMaxMB == 0 {
		cfg.MediaMaxMB = DefaultMediaMaxMB
	}
	base, err := url.Parse(strings.TrimRight(cfg.ServerURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("bluebubbles.serverUrl: %w", err)
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
	if deps.HTTPClient == nil {
		deps.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	a := &Adapter{cfg: cfg, deps: deps, base: base, log: deps.Logger.With("channel", ChannelName, "backend", "bluebubbles", "account", deps.Account)}
	a.status = channel.Status{Channel: ChannelName, Account: deps.Account, State: channel.StateStopped, Since: deps.Now()}
	return a, nil
}

// Channel implements channel.Adapter.
func (a *Adapter) Channel() string { return ChannelName }

// Account implements channel.Adapter.
func (a *Adapter) Account() string { return a.deps.Account }

// Status implements channel.Adapter.
func (a *Adapter) Status() channel.Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}

// WebhookAddr is the listener's address while Run serves ("" otherwise);
// with webhookListen port 0 it tells which port was chosen.
func (a *Adapter) WebhookAddr() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.addr
}

func (a *Adapter) setState(s channel.State, reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.status.State != s || a.status.Reason != reason {
		a.status.Since = a.deps.Now()
	}
	a.status.State, a.status.Reason = s, reason
}

// apiURL is base+path with the password query parameter BlueBubbles uses
// for authentication.
func (a *Adapter) apiURL(path string) string {
	u := *a.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawQuery = url.Values{"password": {a.cfg.Password}}.Encode()
	return u.String()
}

// Run implements channel.Adapter: ping the server, then serve the webhook
// until ctx is cancelled (nil) or the listener fails (an error).
func (a *Adapter) Run(ctx context.Context, in channel.Inbox) error {
	a.setState(channel.StateConnecting, "")
	if err := a.ping(ctx); err != nil {
		if ctx.Err() != nil {
			a.setState(channel.StateStopped, "")
			return nil
		}
		a.setState(channel.StateError, "BlueBubbles server unreachable or password rejected")
		return err
	}
	ln, err := net.Listen("tcp", a.cfg.WebhookListen)
	if err != nil {
		a.setState(channel.StateError, "cannot listen on webhookListen")
		return fmt.Errorf("bluebubbles: webhook listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(a.cfg.WebhookPath, a.webhookHandler(in))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	a.mu.Lock()
	a.addr = ln.Addr().String()
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.addr = ""
		a.mu.Unlock()
	}()
	a.setState(channel.StateLinked, "")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			a.log.Warn("bluebubbles: webhook shutdown", "err", err)
		}
		<-errc
		a.setState(channel.StateStopped, "")
		return nil
	case err := <-errc:
		a.setState(channel.StateError, "webhook listener stopped")
		return fmt.Errorf("bluebubbles: webhook listener: %w", err)
	}
}

func (a *Adapter) ping(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.apiURL("/api/v1/ping"), nil)
	if err != nil {
		return fmt.Errorf("bluebubbles: ping: %w", err)
	}
	resp, err := a.deps.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("bluebubbles: ping: %w", redact(err, a.cfg.Password))
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) //nolint:errcheck // draining for reuse only
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("bluebubbles: ping: HTTP %d", resp.StatusCode)
	}
	return nil
}

// redact removes the password from an error (url.Error includes the URL,
// whose query carries it).
func redact(err error, password string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	if password != "" && strings.Contains(err.Error(), password) {
		return errors.New(strings.ReplaceAll(err.Error(), password, "…"))
	}
	return err
}

func (a *Adapter) webhookHandler(in channel.Inbox) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		q := r.URL.Query()
		got := q.Get("password")
		if got == "" {
			got = q.Get("guid")
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(a.cfg.Password)) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
		if err != nil {
			http.Error(w, "body too large or unreadable", http.StatusRequestEntityTooLarge)
			return
		}
		ev, err := parseWebhook(body)
		if err != nil {
			a.log.Warn("bluebubbles: bad webhook", "err", err)
			http.Error(w, "bad payload", http.StatusBadRequest)
			return
		}
		m, ok := ev.inbound(a.deps.Account)
		if !ok {
			w.WriteHeader(http.StatusNoContent) // another event type, an echo or a tapback
			return
		}
		if m.Timestamp.IsZero() {
			m.Timestamp = a.deps.Now()
		}
		if err := in.Deliver(r.Context(), m); err != nil {
			a.log.Warn("bluebubbles: deliver failed", "guid", m.MessageID, "err", err)
			http.Error(w, "not recorded", http.StatusInternalServerError)
			return
		}
		a.mu.Lock()
		a.status.LastInbound = a.deps.Now()
		a.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
}

// webhookEvent is a BlueBubbles webhook body.
type webhookEvent struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
	msg  bbMessage
}

// bbMessage is the part of a BlueBubbles Message used.
type bbMessage struct {
	GUID                  string  `json:"guid"`
	Text                  *string `json:"text"`
	IsFromMe              bool    `json:"isFromMe"`
	DateCreated           float64 `json:"dateCreated"`
	ThreadOriginatorGUID  *string `json:"threadOriginatorGuid"`
	AssociatedMessageGUID *string `json:"associatedMessageGuid"`
	AssociatedMessageType any     `json:"associatedMessageType"`
	Handle                *struct {
		Address string `json:"address"`
	} `json:"handle"`
	Chats []struct {
		GUID           string `json:"guid"`
		ChatIdentifier string `json:"chatIdentifier"`
		DisplayName    string `json:"displayName"`
	} `json:"chats"`
}

// parseWebhook parses and checks a webhook body; it never panics.
func parseWebhook(body []byte) (webhookEvent, error) {
	var ev webhookEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return ev, fmt.Errorf("webhook: %w", err)
	}
	if ev.Type == "" {
		return ev, errors.New("webhook: no type")
	}
	if ev.Type != "new-message" {
		return ev, nil
	}
	if len(ev.Data) == 0 || ev.Data[0] != '{' {
		return ev, errors.New("webhook: new-message data is not an object")
	}
	if err := json.Unmarshal(ev.Data, &ev.msg); err != nil {
		return ev, fmt.Errorf("webhook: message: %w", err)
	}
	m := &ev.msg
	switch {
	case m.GUID == "" || len(m.GUID) > 1024 || strings.ContainsFunc(m.GUID, unicode.IsControl):
		return ev, errors.New("webhook: message guid missing or malformed")
	case len(m.Chats) == 0 || m.Chats[0].GUID == "" || len(m.Chats[0].GUID) > 1024:
		return ev, errors.New("webhook: message has no chat guid")
	case m.DateCreated < 0 || m.DateCreated > 1e15:
		return ev, errors.New("webhook: dateCreated out of range")
	}
	return ev, nil
}

// inbound normalizes a new-message event; false for anything not to
// deliver.
func (ev *webhookEvent) inbound(account string) (engine.Inbound, bool) {
	m := &ev.msg
	if ev.Type != "new-message" || m.IsFromMe {
		return engine.Inbound{}, false
	}
	if m.AssociatedMessageGUID != nil && *m.AssociatedMessageGUID != "" && m.AssociatedMessageType != nil {
		return engine.Inbound{}, false // a tapback on another message
	}
	chat := m.Chats[0]
	in := engine.Inbound{
		Channel:   ChannelName,
		Account:   account,
		ChatID:    chat.GUID,
		ChatType:  engine.ChatDirect,
		MessageID: m.GUID,
	}
	if strings.Contains(chat.GUID, ";+;") {
		in.ChatType = engine.ChatGroup
	}
	if m.Text != nil {
		in.Text = *m.Text
	}
	// The handle exactly as the server sent it: comparing ids (case,
	// look-alikes, phone formatting) is the access layer's job alone
	// (access.Canonical), so nothing is lower-cased or stripped here.
	if m.Handle != nil {
		in.SenderID = m.Handle.Address
	}
	if in.SenderID == "" && in.ChatType == engine.ChatDirect {
		if _, h, ok := strings.Cut(chat.GUID, ";-;"); ok {
			in.SenderID = h
		}
	}
	if m.ThreadOriginatorGUID != nil && *m.ThreadOriginatorGUID != m.GUID {
		in.ReplyTo = *m.ThreadOriginatorGUID
	}
	if m.DateCreated > 0 {
		in.Timestamp = time.UnixMilli(int64(m.DateCreated)).UTC()
	}
	if strings.TrimSpace(in.Text) == "" {
		return in, false // attachments only: not downloaded yet
	}
	return in, true
}

// targetHandle is the handle of an outbound bare target, which a person
// typed (`openclaw message send --target`, an ownerAllowFrom entry): a
// phone number written with ASCII spaces, dashes, dots or parentheses
// becomes "+<digits>" when that is all it has, as Messages stores it;
// anything else is sent as written (an e-mail handle's case does not
// matter to Messages). Never used on inbound ids.
func targetHandle(h string) string {
	if !strings.HasPrefix(h, "+") {
		return h
	}
	digits := strings.Map(func(r rune) rune {
		switch r {
		case ' ', '-', '(', ')', '.':
			return -1
		}
		return r
	}, h[1:])
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return h
	}
	return "+" + digits
}

// Send implements channel.Adapter.
func (a *Adapter) Send(ctx context.Context, m channel.Outbound) (channel.Receipt, error) {
	chatGUID, err := chatGUIDFor(m.ChatID)
	if err != nil {
		return channel.Receipt{}, channel.Permanent(fmt.Errorf("bluebubbles send: %w", err))
	}
	text := m.Text
	for _, md := range m.Media {
		if md.URL != "" {
			text = strings.TrimSpace(text + "\n" + md.URL)
		}
	}
	if strings.TrimSpace(text) == "" {
		return channel.Receipt{}, channel.Permanent(errors.New("bluebubbles send: nothing to send (attachments are not supported)"))
	}
	payload := map[string]any{"chatGuid": chatGUID, "tempGuid": tempGUID(m.IdempotencyKey), "message": text}
	body, err := json.Marshal(payload)
	if err != nil {
		return channel.Receipt{}, fmt.Errorf("bluebubbles send: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.apiURL("/api/v1/message/text"), bytes.NewReader(body))
	if err != nil {
		return channel.Receipt{}, fmt.Errorf("bluebubbles send: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.deps.HTTPClient.Do(req)
	if err != nil {
		return channel.Receipt{}, fmt.Errorf("bluebubbles send: %w: %w", channel.ErrNotConnected, redact(err, a.cfg.Password))
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return channel.Receipt{}, fmt.Errorf("bluebubbles send: read response: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		err := fmt.Errorf("bluebubbles send: HTTP %d: %s", resp.StatusCode, sanitize(string(rb), 200))
		if resp.StatusCode/100 == 4 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests {
			return channel.Receipt{}, channel.Permanent(err)
		}
		return channel.Receipt{}, err
	}
	var res struct {
		Data struct {
			GUID string `json:"guid"`
		} `json:"data"`
	}
	_ = json.Unmarshal(rb, &res) // the send happened; a receipt without a guid is still a receipt
	now := a.deps.Now()
	a.mu.Lock()
	a.status.LastOutbound = now
	a.mu.Unlock()
	return channel.Receipt{MessageID: res.Data.GUID, SentAt: now}, nil
}

// chatGUIDFor maps an Outbound.ChatID to a BlueBubbles chat guid.
func chatGUIDFor(id string) (string, error) {
	id = strings.TrimSpace(id)
	if strings.HasPrefix(strings.ToLower(id), "chat_guid:") {
		id = strings.TrimSpace(id[len("chat_guid:"):])
	}
	switch {
	case id == "":
		return "", errors.New("empty chat id")
	case strings.ContainsFunc(id, unicode.IsControl):
		return "", errors.New("chat id has control characters")
	case strings.Count(id, ";") >= 2:
		return id, nil // service;-;handle or service;+;chat
	case strings.Contains(id, ":"):
		return "", fmt.Errorf("target %q is not supported by the BlueBubbles backend (use a chat guid or a handle)", id)
	}
	return "iMessage;-;" + targetHandle(id), nil
}

// tempGUID derives the send's tempGuid from the idempotency key, so that
// BlueBubbles recognizes a retry; without a key every call is new.
func tempGUID(key string) string {
	b := make([]byte, 16)
	if key == "" {
		rand.Read(b) // never fails (crypto/rand)
	} else {
		sum := sha256.Sum256([]byte("openclaw-edge/bluebubbles\x00" + key))
		copy(b, sum[:16])
	}
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func sanitize(s string, n int) string {
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
