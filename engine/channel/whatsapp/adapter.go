package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waCommon"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/types"
	"google.golang.org/protobuf/proto"

	"github.com/openclaw-edge/edge/engine/channel"
)

// Client is the adapter's send interface: the part of *whatsmeow.Client
// it uses on a live connection (sending, receipts, presence, media).
// WhatsApp's servers can be neither reached nor faithfully faked, so tests
// substitute a fake here, and only here (see Conn and Deps.Dial).
type Client interface {
	SendMessage(ctx context.Context, to types.JID, msg *waE2E.Message, extra ...whatsmeow.SendRequestExtra) (whatsmeow.SendResponse, error)
	Upload(ctx context.Context, plaintext []byte, mediaType whatsmeow.MediaType) (whatsmeow.UploadResponse, error)
	DownloadToFile(ctx context.Context, msg whatsmeow.DownloadableMessage, file whatsmeow.File) error
	SendChatPresence(ctx context.Context, jid types.JID, state types.ChatPresence, media types.ChatPresenceMedia) error
	MarkRead(ctx context.Context, ids []types.MessageID, timestamp time.Time, chat, sender types.JID, receiptTypeExtra ...types.ReceiptType) error
	IsConnected() bool
}

// Conn is a connection as Run drives it: the send interface plus
// connecting and whatsmeow's event handler registration, through which
// every event (messages, connects, logouts) reaches the adapter.
// *whatsmeow.Client is the production Conn; Deps.Dial substitutes another.
type Conn interface {
	Client
	ConnectContext(ctx context.Context) error
	Disconnect()
	AddEventHandlerWithSuccessStatus(handler whatsmeow.EventHandlerWithSuccessStatus) uint32
	RemoveEventHandler(id uint32) bool
}

var _ Conn = (*whatsmeow.Client)(nil)

// Deps are what the gateway hands the adapter.
type Deps struct {
	// Account is the account name ("default").
	Account string
	// StorePath is the SQLite device store, e.g.
	// <state>/whatsapp/<account>.db; created 0600 (its directory 0700).
	StorePath string
	// Store is the account's key/value space. Unused today: WhatsApp's
	// offline queue is the cursor (see the package doc).
	Store channel.Store
	// MediaDir receives downloaded inbound attachments (created 0700).
	// Empty: attachments are not downloaded (the text says so).
	MediaDir string
	Logger   *slog.Logger
	Now      func() time.Time
	// HTTPClient fetches the current WhatsApp Web version; nil means
	// http.DefaultClient.
	HTTPClient *http.Client
	// Dial, for tests of the whole gateway (nil in production), replaces
	// the whatsmeow client: Run still opens the device store and needs a
	// linked device in it (its JID and LID are the adapter's own, its LID
	// map resolves senders), then takes the Conn Dial returns instead of
	// creating a whatsmeow client, and drives it exactly as it drives
	// whatsmeow's (handler registration, ConnectContext, the watchdog).
	// No WhatsApp Web version is fetched or announced: nothing reaches
	// WhatsApp, and Logout refuses while such a Run runs (it has no
	// whatsmeow client to log out with). Package whatsapptest has a fake
	// Conn and links a device store.
	Dial func(ctx context.Context, dev *store.Device) (Conn, error)
}

// Adapter is one WhatsApp account linked as a WhatsApp Web device.
type Adapter struct {
	cfg       Config
	account   string
	storePath string
	mediaDir  string
	log       *slog.Logger
	now       func() time.Time
	hc        *http.Client
	dial      func(ctx context.Context, dev *store.Device) (Conn, error)

	// linkMu is held by Run, Login and a standalone Logout: one user of
	// the device store's Signal state at a time.
	linkMu sync.Mutex

	recent *recentCache

	mu           sync.Mutex
	sess         *session // the running link; nil when Run is not running
	state        channel.State
	reason       string
	since        time.Time
	self         types.JID // phone-number JID
	selfLID      types.JID
	lastInbound  time.Time
	lastOutbound time.Time
	outdated     string // set when the server called us outdated
	version      string // "2.3000.x (web.whatsapp.com|pinned)"
	live         liveness
}

var (
	_ channel.Adapter     = (*Adapter)(nil)
	_ channel.Linker      = (*Adapter)(nil)
	_ channel.Typer       = (*Adapter)(nil)
	_ channel.Reactor     = (*Adapter)(nil)
	_ channel.MediaSender = (*Adapter)(nil)
)

// New returns a stopped adapter; nothing is opened until Run or Login.
func New(cfg Config, deps Deps) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("channels.whatsapp: %w", err)
	}
	if deps.StorePath == "" {
		return nil, errors.New("whatsapp: no device store path")
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
	a := &Adapter{
		cfg:       cfg,
		account:   deps.Account,
		storePath: deps.StorePath,
		mediaDir:  deps.MediaDir,
		log:       deps.Logger.With("channel", ChannelName, "account", deps.Account),
		now:       deps.Now,
		hc:        deps.HTTPClient,
		dial:      deps.Dial,
		recent:    newRecentCache(recentSize),
		state:     channel.StateStopped,
	}
	a.since = a.now()
	return a, nil
}

// Channel implements channel.Adapter.
func (a *Adapter) Channel() string { return ChannelName }

// Account implements channel.Adapter.
func (a *Adapter) Account() string { return a.account }

// MaxMediaBytes implements channel.MediaSender: mediaMaxMb.
func (a *Adapter) MaxMediaBytes() int64 { return a.cfg.MediaMaxBytes() }

// notLinkedReason is the owner-facing reason of StateNotLinked.
const notLinkedReason = "not linked: run `openclaw channels login whatsapp`"

// Status implements channel.Adapter.
func (a *Adapter) Status() channel.Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := channel.Status{
		Channel:      ChannelName,
		Account:      a.account,
		State:        a.state,
		Reason:       a.reason,
		Since:        a.since,
		LastInbound:  a.lastInbound,
		LastOutbound: a.lastOutbound,
	}
	if !a.self.IsEmpty() {
		st.Self = userID(a.self)
	}
	var d []string
	if a.outdated != "" {
		d = append(d, a.outdated)
	}
	if a.sess != nil {
		d = append(d, a.live.describe(a.now()))
	}
	if a.version != "" {
		d = append(d, "client version "+a.version)
	}
	st.Detail = strings.Join(d, "; ")
	return st
}

func (a *Adapter) setState(s channel.State, reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.state != s || a.reason != reason {
		a.since = a.now()
	}
	a.state, a.reason = s, reason
}

func (a *Adapter) setSelf(pn, lid types.JID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !pn.IsEmpty() {
		a.self = pn.ToNonAD()
	}
	if !lid.IsEmpty() {
		a.selfLID = lid.ToNonAD()
	}
}

func (a *Adapter) selfJIDs() []types.JID {
	a.mu.Lock()
	defer a.mu.Unlock()
	var s []types.JID
	if !a.self.IsEmpty() {
		s = append(s, a.self)
	}
	if !a.selfLID.IsEmpty() {
		s = append(s, a.selfLID)
	}
	return s
}

// connected returns the live client, or an error wrapping
// channel.ErrNotConnected.
func (a *Adapter) connected() (Client, error) {
	a.mu.Lock()
	s := a.sess
	a.mu.Unlock()
	if s == nil || s.cli == nil {
		return nil, fmt.Errorf("whatsapp: %w: the link is not running", channel.ErrNotConnected)
	}
	if !s.cli.IsConnected() {
		return nil, fmt.Errorf("whatsapp: %w: reconnecting", channel.ErrNotConnected)
	}
	return s.cli, nil
}

// Send implements channel.Adapter. Text goes as a plain message, or as an
// extended text message quoting ReplyTo. Each attachment is its own
// message (WhatsApp has no multi-attachment message); the text is the
// first one's caption when it can carry one. Part i of the message gets
// the id MessageID(account, IdempotencyKey, i), so a retry after a partial
// failure resends the same ids (see the package doc for what WhatsApp does
// with them). The receipt carries the first part's id.
func (a *Adapter) Send(ctx context.Context, m channel.Outbound) (channel.Receipt, error) {
	to, err := ParseChatID(m.ChatID)
	if err != nil {
		return channel.Receipt{}, channel.Permanent(fmt.Errorf("whatsapp: %w", err))
	}
	text := m.Text
	var files []mediaFile
	for _, md := range m.Media {
		switch {
		case md.Path != "":
			f, err := a.openMedia(md)
			if err != nil {
				return channel.Receipt{}, err
			}
			files = append(files, f)
		case md.URL != "":
			// Fetching arbitrary URLs from the box is not this adapter's
			// job; WhatsApp previews links on its own.
			text = strings.TrimSpace(text + "\n" + md.URL)
		}
	}
	if strings.TrimSpace(text) == "" && len(files) == 0 {
		return channel.Receipt{}, channel.Permanent(errors.New("whatsapp: empty message"))
	}
	cli, err := a.connected()
	if err != nil {
		return channel.Receipt{}, err
	}

	var quote *waE2E.ContextInfo
	if m.ReplyTo != "" {
		quote = a.quoteContext(to, m.ReplyTo)
	}
	var parts []*waE2E.Message
	textSent := false
	if text != "" && (len(files) == 0 || !files[0].kind.captioned()) {
		parts = append(parts, textMessage(text, quote))
		textSent, quote = true, nil
	}
	for i, f := range files {
		caption := ""
		if i == 0 && !textSent {
			caption = text
		}
		part, err := a.uploadMedia(ctx, cli, f, caption, quote, m.AsVoice)
		if err != nil {
			return channel.Receipt{}, err
		}
		quote = nil
		parts = append(parts, part)
	}

	var rcpt channel.Receipt
	for i, part := range parts {
		var extra whatsmeow.SendRequestExtra
		if m.IdempotencyKey != "" {
			extra.ID = MessageID(a.account, m.IdempotencyKey, i)
		}
		resp, err := cli.SendMessage(ctx, to, part, extra)
		if err != nil {
			return channel.Receipt{}, sendError(err)
		}
		id := resp.ID
		if id == "" {
			id = extra.ID
		}
		a.recent.add(id, recentMsg{chat: to, fromMe: true, text: messageText(part)})
		if i == 0 {
			rcpt = channel.Receipt{MessageID: id, SentAt: resp.Timestamp}
		}
	}
	now := a.now()
	if rcpt.SentAt.IsZero() {
		rcpt.SentAt = now
	}
	a.mu.Lock()
	a.lastOutbound = now
	a.mu.Unlock()
	return rcpt, nil
}

func textMessage(text string, quote *waE2E.ContextInfo) *waE2E.Message {
	if quote == nil {
		return &waE2E.Message{Conversation: proto.String(text)}
	}
	return &waE2E.Message{ExtendedTextMessage: &waE2E.ExtendedTextMessage{
		Text:        proto.String(text),
		ContextInfo: quote,
	}}
}

func messageText(m *waE2E.Message) string {
	t, _, att := content(m)
	if t == "" && att != nil {
		t = "<media:" + att.kind + ">"
	}
	return t
}

// quoteContext builds the ContextInfo of a reply. WhatsApp renders the
// quote from QuotedMessage and attributes it to Participant; both come
// from the recent-message cache (inbound messages and our own sends since
// Run started). A message older than that is still quoted by id, which
// the apps resolve from their own history.
func (a *Adapter) quoteContext(chat types.JID, id string) *waE2E.ContextInfo {
	ci := &waE2E.ContextInfo{StanzaID: proto.String(id)}
	r, ok := a.recent.get(id)
	switch {
	case ok && r.chat == chat:
		sender := r.sender
		if r.fromMe {
			sender = a.selfJID()
		}
		if !sender.IsEmpty() {
			ci.Participant = proto.String(sender.ToNonAD().String())
		}
		if r.text != "" {
			ci.QuotedMessage = &waE2E.Message{Conversation: proto.String(r.text)}
		}
	case chat.Server != types.GroupServer:
		// In a direct chat the assistant answers the other person's
		// message far more often than its own.
		ci.Participant = proto.String(chat.String())
	}
	return ci
}

func (a *Adapter) selfJID() types.JID {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.self
}

// sendError classifies a whatsmeow send error for the outbox.
func sendError(err error) error {
	var disc *whatsmeow.DisconnectedError
	switch {
	case errors.Is(err, whatsmeow.ErrNotConnected), errors.Is(err, whatsmeow.ErrNotLoggedIn), errors.As(err, &disc):
		return fmt.Errorf("whatsapp: send: %w: %w", channel.ErrNotConnected, err)
	case errors.Is(err, whatsmeow.ErrBroadcastListUnsupported), errors.Is(err, whatsmeow.ErrUnknownServer),
		errors.Is(err, whatsmeow.ErrRecipientADJID), errors.Is(err, whatsmeow.ErrInvalidInlineBotID):
		return channel.Permanent(fmt.Errorf("whatsapp: send: %w", err))
	}
	return fmt.Errorf("whatsapp: send: %w", err)
}

// Typing implements channel.Typer with WhatsApp's chat state (composing /
// paused).
func (a *Adapter) Typing(ctx context.Context, chatID string, on bool) error {
	chat, err := ParseChatID(chatID)
	if err != nil {
		return channel.Permanent(fmt.Errorf("whatsapp: %w", err))
	}
	cli, err := a.connected()
	if err != nil {
		return err
	}
	state := types.ChatPresencePaused
	if on {
		state = types.ChatPresenceComposing
	}
	if err := cli.SendChatPresence(ctx, chat, state, types.ChatPresenceMediaText); err != nil {
		return fmt.Errorf("whatsapp: typing: %w", err)
	}
	return nil
}

// React implements channel.Reactor. The reaction's key needs the target's
// author (ours or, in a group, the member's JID), taken from the recent
// cache; an unknown message is assumed to be someone else's, which is what
// the assistant reacts to. "" removes the reaction.
func (a *Adapter) React(ctx context.Context, chatID, messageID, emoji string) error {
	chat, err := ParseChatID(chatID)
	if err != nil {
		return channel.Permanent(fmt.Errorf("whatsapp: %w", err))
	}
	if messageID == "" {
		return channel.Permanent(errors.New("whatsapp: react: no message id"))
	}
	cli, err := a.connected()
	if err != nil {
		return err
	}
	key := &waCommon.MessageKey{
		RemoteJID: proto.String(chat.String()),
		ID:        proto.String(messageID),
		FromMe:    proto.Bool(false),
	}
	if r, ok := a.recent.get(messageID); ok && r.chat == chat {
		key.FromMe = proto.Bool(r.fromMe)
		if !r.fromMe && chat.Server == types.GroupServer && !r.sender.IsEmpty() {
			key.Participant = proto.String(r.sender.ToNonAD().String())
		}
	}
	msg := &waE2E.Message{ReactionMessage: &waE2E.ReactionMessage{
		Key:               key,
		Text:              proto.String(emoji),
		SenderTimestampMS: proto.Int64(a.now().UnixMilli()),
	}}
	// No fixed id: a reaction is idempotent by nature (the latest one from
	// us replaces the previous).
	if _, err := cli.SendMessage(ctx, chat, msg); err != nil {
		return sendError(err)
	}
	return nil
}

// versionString formats a WhatsApp Web version and its source.
func versionString(v store.WAVersionContainer, src string) string {
	return v.String() + " (" + src + ")"
}
