// Package channel is the contract between the gateway and the messaging
// platforms (docs/design.md §3.1, §8): an Adapter turns platform events into
// normalized engine.Inbound messages and normalized Outbound messages into
// platform sends — nothing else. Access control, routing, sessions, the
// outbox and retries live in the gateway; an adapter never decides who may
// talk to the assistant.
//
// Lifecycle (caddy's modules, tailscale's LocalAPI handlers are the models):
// an adapter package constructs an Adapter from its own config; the gateway
// wraps it in a Supervisor, which calls Run in a loop (restarting it with
// backoff when it returns an error), reports its Status, and stops it on
// Stop. Optional capabilities are small interfaces an adapter may implement
// (Typer, Reactor, Editor, MediaSender, Linker, Acker, Streamer,
// Unsender), as is the Inbox's CursorInbox.
//
// Each adapter package can be left out of a build with a build tag
// (nowhatsapp, noimessage, noemail, notelegram) in the wiring (appliance).
package channel

import (
	"context"
	"errors"
	"time"

	"github.com/openclaw-edge/edge/engine"
)

// Adapter is one account of one messaging platform.
type Adapter interface {
	// Channel is the channel name: "whatsapp", "imessage", "email".
	Channel() string
	// Account is the account name within the channel ("default" unless
	// channels.<name>.accounts names others).
	Account() string
	// Run connects and delivers inbound messages to in until ctx is
	// cancelled (it then returns nil) or the link fails (it returns the
	// error; the Supervisor restarts it after a backoff). An error wrapping
	// ErrLoggedOut stops the restarts until the owner links again.
	// Run must not replay history older than what it has already
	// delivered (the adapter keeps its own cursor in the Store it was
	// constructed with); a message delivered twice is dropped by the
	// gateway's dedup, but old history must never arrive as new.
	Run(ctx context.Context, in Inbox) error
	// Send delivers one outbound message. It may be called while Run is
	// not running (the outbox retries); it then returns an error wrapping
	// ErrNotConnected. An error wrapping ErrPermanent is not retried.
	Send(ctx context.Context, m Outbound) (Receipt, error)
	// Status reports the link's state for `openclaw channels list` and
	// /status.
	Status() Status
}

// Inbox receives normalized inbound messages from a running adapter.
type Inbox interface {
	// Deliver hands one message to the gateway. It returns once the message
	// is durably recorded (or deliberately dropped: a duplicate, a blocked
	// sender); the turn it starts runs afterwards, in order per session.
	// An adapter advances its own cursor only after Deliver returned nil.
	// An error means nothing was recorded: the adapter should not advance
	// its cursor (it will see the message again after a restart).
	Deliver(ctx context.Context, m engine.Inbound) error
}

// Screener is an Inbox that says, before an adapter fetches a message's
// attachments, whether the gateway will answer it: a stranger's message,
// an unlisted group's, or one kept only as group context costs no
// download. A hint: the gateway decides again on delivery.
type Screener interface {
	WillAnswer(m engine.Inbound) bool
}

// CursorInbox is an Inbox that records a message and the adapter's cursor
// in one transaction: Store key key set to cursor (JSON) together with the
// inbox record (or, for a duplicate or a blocked sender, alone). A crash
// then can neither lose a message behind the cursor nor repeat one before
// it (Telegram's getUpdates offset). The gateway's Inbox implements it.
type CursorInbox interface {
	DeliverAt(ctx context.Context, m engine.Inbound, key string, cursor any) error
}

// Outbound is one message to send: a chunk of a reply, or a message sent
// with `openclaw message send --channel`.
type Outbound struct {
	Channel  string          `json:"channel"`
	Account  string          `json:"account,omitempty"`
	ChatID   string          `json:"chatId"` // the platform's chat: a JID, a handle or chat id, an address
	ChatType engine.ChatType `json:"chatType,omitempty"`
	Text     string          `json:"text,omitempty"`
	Media    []engine.Media  `json:"media,omitempty"`
	// ReplyTo is the platform message id this message answers (quoted on
	// WhatsApp; In-Reply-To on email). Empty: a plain message.
	ReplyTo string `json:"replyTo,omitempty"`
	// Thread is what the inbound message's adapter put in
	// engine.Inbound.Thread, handed back unchanged (email: the subject and
	// References of the thread). Opaque to the gateway.
	Thread string `json:"thread,omitempty"`
	// IdempotencyKey is stable for this chunk across every retry; adapters
	// derive the platform's own message id from it where the platform
	// deduplicates (WhatsApp message id, email Message-ID, imsg client id).
	IdempotencyKey string `json:"idempotencyKey"`
	// AsVoice asks for audio media to be sent as a voice note.
	AsVoice bool `json:"asVoice,omitempty"`
	// Buttons are shown under the message where the platform has inline
	// buttons (Telegram); a press comes back as an engine.Inbound with
	// Button set and the button's Command as its text. Adapters without
	// buttons ignore them: the text must say how to answer without.
	Buttons []engine.Button `json:"buttons,omitempty"`
	// Replace is the id of a message this adapter sent earlier (a
	// streamed preview, Streamer) to edit into this message instead of
	// sending a new one; an adapter that cannot edit it sends a new one.
	Replace string `json:"replace,omitempty"`
}

// Receipt is what a platform returned for a sent message.
type Receipt struct {
	MessageID string    `json:"messageId,omitempty"`
	SentAt    time.Time `json:"sentAt"`
}

// State is a link's state.
type State string

// States.
const (
	StateStopped    State = "stopped"    // not started (or stopped by the gateway)
	StateConnecting State = "connecting" // starting or reconnecting
	StateLinked     State = "linked"     // connected and receiving
	StateNotLinked  State = "not-linked" // needs `openclaw channels login`
	StateLoggedOut  State = "logged-out" // the platform ended the link
	StateError      State = "error"      // failing; Reason says why, the supervisor retries
)

// Status is a link's state as reported to the owner.
type Status struct {
	Channel string `json:"channel"`
	Account string `json:"account"`
	State   State  `json:"state"`
	// Reason says why the state is not linked, safe to show the owner.
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
	// Self is the account's own identity on the platform (a phone number,
	// an address), when known.
	Self         string    `json:"self,omitempty"`
	LastInbound  time.Time `json:"lastInbound,omitzero"`
	LastOutbound time.Time `json:"lastOutbound,omitzero"`
	Restarts     int       `json:"restarts,omitempty"`
	// Detail is adapter-specific (e.g. "client version outdated").
	Detail string `json:"detail,omitempty"`
}

// Errors an adapter returns (wrapped) so the gateway can act on them.
var (
	// ErrLoggedOut: the platform ended the link; only a new login helps.
	ErrLoggedOut = errors.New("logged out")
	// ErrNotConnected: the link is down now; a retry later may succeed.
	ErrNotConnected = errors.New("not connected")
	// ErrConfig: the account's settings are wrong (a token the platform
	// refuses, a missing secret): the supervisor stops restarting it
	// until the gateway is restarted with a fixed config.
	ErrConfig = errors.New("misconfigured")
	// ErrPermanent: the message can never be sent as it is (unknown
	// recipient, too large, rejected); it is not retried.
	ErrPermanent = errors.New("permanent failure")
)

// Permanent wraps err so that errors.Is(err, ErrPermanent) holds.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanent{err}
}

type permanent struct{ err error }

func (p *permanent) Error() string   { return p.err.Error() }
func (p *permanent) Unwrap() []error { return []error{p.err, ErrPermanent} }

// Store is a small durable key/value space of one adapter account (its
// cursors: IMAP UIDVALIDITY and last UID, imsg's last message rowid).
// Values are JSON. The gateway backs it with bbolt.
type Store interface {
	Get(key string, v any) (bool, error)
	Put(key string, v any) error
}

// Optional capabilities.

// Typer shows a typing indicator while a reply is being generated.
type Typer interface {
	Typing(ctx context.Context, chatID string, on bool) error
}

// Reactor reacts to a message (an emoji; "" removes the reaction).
type Reactor interface {
	React(ctx context.Context, chatID, messageID, emoji string) error
}

// Editor edits a message sent earlier.
type Editor interface {
	Edit(ctx context.Context, chatID, messageID, text string) error
}

// MediaSender sends attachments (Outbound.Media). Adapters without it get
// media as links in the text.
type MediaSender interface {
	// MaxMediaBytes is the largest attachment the platform takes.
	MaxMediaBytes() int64
}

// Streamer shows a reply while it is generated: a preview message edited
// as the text grows (Telegram's streamMode partial). to names the chat
// (ChatID, ChatType, Thread, ReplyTo as the reply will have them); deltas
// are the reply's pieces, closed when the reply is complete. Stream
// returns the preview's id ("" when it showed none: streaming off, or
// too little text); the reply's first chunk is then sent with Replace set
// to it, and a reply that turns out silent deletes it (Unsender).
// Stream must read deltas promptly: the turn does not wait for it.
type Streamer interface {
	Stream(ctx context.Context, to Outbound, deltas <-chan string) (Receipt, error)
}

// TargetChecker says whether a chat id typed by a person (`message send
// --target`, `cron --to`) can be one on the platform, so a typo is an
// error then, not a message that dies in the outbox later.
type TargetChecker interface {
	CheckTarget(chatID string) error
}

// Unsender deletes a message it sent (a preview whose reply was silent).
type Unsender interface {
	Unsend(ctx context.Context, chatID, messageID string) error
}

// Acker is told when an inbound message has been handled: its reply is
// queued in the outbox (or it was stored without a reply). Email marks the
// message \Seen then.
type Acker interface {
	Ack(ctx context.Context, m engine.Inbound) error
}

// LoginEvent is one step of an interactive login.
type LoginEvent struct {
	// QR is a code to render as a QR code (WhatsApp link).
	QR string `json:"qr,omitempty"`
	// PairingCode is a code to type on the phone (WhatsApp by number).
	PairingCode string `json:"pairingCode,omitempty"`
	// Message is a line to show the person.
	Message string `json:"message,omitempty"`
	// Done is set on the last event: linked as Self.
	Done bool   `json:"done,omitempty"`
	Self string `json:"self,omitempty"`
}

// LoginOptions configure Linker.Login.
type LoginOptions struct {
	// Phone, when set, asks for a pairing code for this number instead of
	// a QR code.
	Phone string
}

// Linker links and unlinks an account interactively
// (`openclaw channels login|logout`).
type Linker interface {
	Login(ctx context.Context, opts LoginOptions, emit func(LoginEvent)) error
	Logout(ctx context.Context) error
}

// Common holds the keys every channel account has, with OpenClaw's names
// and values; an adapter's Config embeds it (docs/design.md §3.2). The gateway
// enforces them; adapters only carry them.
type Common struct {
	// DMPolicy: pairing (default) | allowlist | open | disabled.
	DMPolicy string `json:"dmPolicy"`
	// AllowFrom lists senders allowed to DM ("*" = anyone; never an owner).
	AllowFrom []string `json:"allowFrom"`
	// GroupPolicy: allowlist (default) | open | disabled.
	GroupPolicy string `json:"groupPolicy"`
	// GroupAllowFrom lists senders allowed to trigger the assistant in
	// groups; empty = AllowFrom.
	GroupAllowFrom []string `json:"groupAllowFrom"`
	// Groups configures groups by chat id, or "*" for every group.
	Groups map[string]Group `json:"groups"`
	// TextChunkLimit and ChunkMode override channels.<name>'s per account.
	TextChunkLimit int    `json:"textChunkLimit"`
	ChunkMode      string `json:"chunkMode"`
}

// Group is channels.<name>.groups.<id|*>.
type Group struct {
	// RequireMention: nil means true (unmentioned messages are kept as
	// context, never answered).
	RequireMention *bool `json:"requireMention"`
	// AllowFrom narrows who may trigger the assistant in this group.
	AllowFrom []string `json:"allowFrom"`
	Enabled   *bool    `json:"enabled"`
	// Topics override these keys per forum topic (engine.Inbound.Topic),
	// OpenClaw's channels.telegram.groups.<id>.topics.<threadId>.
	Topics map[string]Group `json:"topics"`
}
