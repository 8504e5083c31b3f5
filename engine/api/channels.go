package api

import (
	"strconv"
	"time"
)

// Channel endpoints (issue 9: channels, pairing, outbound messages).
const (
	PathChannels       = "/v1/channels"        // GET → []ChannelStatus
	PathChannelLogin   = "/v1/channels/login"  // POST LoginRequest → text/event-stream of LoginEvent
	PathChannelLogout  = "/v1/channels/logout" // POST LoginRequest → ChannelStatus
	PathPairing        = "/v1/pairing"         // GET ?channel= → []PairingRequest
	PathPairingApprove = "/v1/pairing/approve" // POST PairingDecision → PairingRequest
	PathPairingDeny    = "/v1/pairing/deny"    // POST PairingDecision → PairingRequest
	PathMessageSend    = "/v1/message/send"    // POST OutboundRequest → OutboundResult
)

// ChannelStatus is one channel account's link, as `openclaw channels list`
// shows it.
type ChannelStatus struct {
	Channel      string    `json:"channel"`
	Account      string    `json:"account"`
	State        string    `json:"state"` // linked | connecting | not-linked | logged-out | error | stopped
	Reason       string    `json:"reason,omitempty"`
	Since        time.Time `json:"since,omitzero"`
	Self         string    `json:"self,omitempty"`
	LastInbound  time.Time `json:"lastInbound,omitzero"`
	LastOutbound time.Time `json:"lastOutbound,omitzero"`
	Restarts     int       `json:"restarts,omitempty"`
	Detail       string    `json:"detail,omitempty"`
	DMPolicy     string    `json:"dmPolicy"`
	GroupPolicy  string    `json:"groupPolicy"`
	// OutboxPending counts messages waiting to be sent; OutboxDead those
	// given up (logged).
	OutboxPending int `json:"outboxPending"`
	OutboxDead    int `json:"outboxDead,omitempty"`
	// Linkable: the account is linked by `channels login` (WhatsApp), not
	// by its config alone (Telegram's token, iMessage, e-mail).
	Linkable bool `json:"linkable,omitempty"`
}

// LoginRequest names the account to link or unlink.
type LoginRequest struct {
	Channel string `json:"channel"`
	Account string `json:"account,omitempty"` // "" = default
	// Phone asks for a pairing code for this number instead of a QR code
	// (WhatsApp).
	Phone string `json:"phone,omitempty"`
}

// LoginEvent is one step of a login stream.
type LoginEvent struct {
	Type        string `json:"type"` // qr | code | message | done | error
	QR          string `json:"qr,omitempty"`
	PairingCode string `json:"pairingCode,omitempty"`
	Message     string `json:"message,omitempty"`
	Self        string `json:"self,omitempty"`
	Error       *Error `json:"error,omitempty"`
}

// PairingRequest is a pending pairing request of an unknown sender.
// SenderID is the id exactly as the platform sent it (JSON escapes what
// it must); show it to a person only through EscapeID.
type PairingRequest struct {
	Channel    string    `json:"channel"`
	Account    string    `json:"account"`
	Code       string    `json:"code"`
	SenderID   string    `json:"senderId"`
	SenderName string    `json:"senderName,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// PairingDecision approves or denies a code on a channel.
type PairingDecision struct {
	Channel string `json:"channel"`
	Code    string `json:"code"`
}

// OutboundRequest sends a message without a turn (`openclaw message send
// --channel`).
type OutboundRequest struct {
	Channel string   `json:"channel"`
	Account string   `json:"account,omitempty"`
	Target  string   `json:"target"` // a chat: phone, JID, handle, chat id, address
	Message string   `json:"message"`
	Media   []string `json:"media,omitempty"` // local paths or URLs
}

// OutboundResult says what was queued.
type OutboundResult struct {
	OK     bool     `json:"ok"`
	Queued int      `json:"queued"` // chunks
	Keys   []string `json:"keys"`   // their idempotency keys
}

// EscapeID shows a sender or chat id to a person (pairing lists, notices,
// logs): as it is when it is printable ASCII without spaces, quotes or
// backslashes, else Go-quoted with every non-ASCII character escaped
// ("\u212aate@example.com"), so that a look-alike of the owner's id
// (U+212A KELVIN SIGN, Cyrillic letters, full-width digits) never reads as
// the owner and bidi or zero-width characters cannot hide. The same rule
// as identity.Display: not called from here because channel adapters
// link this package and may not import anything under engine/access.
func EscapeID(id string) string {
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return strconv.QuoteToASCII(id)
		}
	}
	if id == "" {
		return `""`
	}
	return id
}
