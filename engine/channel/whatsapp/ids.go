package whatsapp

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/types"

	"github.com/openclaw-edge/edge/engine/channel/whatsapp/waconfig"
)

// ParseChatID turns an Outbound.ChatID into a JID: a JID string
// ("15551234567@s.whatsapp.net", "120363…@g.us", "1234…@lid") or an E.164
// phone number ("+15551234567"; spaces, dashes, dots and parentheses are
// ignored). A device part is dropped: messages go to a user or a group,
// never to one of their devices.
func ParseChatID(s string) (types.JID, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return types.EmptyJID, errors.New("empty chat id")
	}
	if !strings.Contains(s, "@") {
		digits, err := phoneDigits(s)
		if err != nil {
			return types.EmptyJID, err
		}
		return types.NewJID(digits, types.DefaultUserServer), nil
	}
	jid, err := types.ParseJID(s)
	if err != nil {
		return types.EmptyJID, fmt.Errorf("chat id %q: %w", s, err)
	}
	jid = jid.ToNonAD()
	if jid.User == "" {
		return types.EmptyJID, fmt.Errorf("chat id %q has no user part", s)
	}
	switch jid.Server {
	case types.DefaultUserServer, types.LegacyUserServer:
		if _, err := phoneDigits(jid.User); err != nil {
			return types.EmptyJID, fmt.Errorf("chat id %q: %w", s, err)
		}
		jid.Server = types.DefaultUserServer
	case types.GroupServer, types.HiddenUserServer:
		if !allDigitsOrDash(jid.User) {
			return types.EmptyJID, fmt.Errorf("chat id %q: unexpected characters in the user part", s)
		}
	default:
		// Broadcast lists, newsletters and bots are not chats the assistant
		// answers in; whatsmeow cannot send to broadcast lists anyway.
		return types.EmptyJID, fmt.Errorf("chat id %q: server %q is not a person or a group", s, jid.Server)
	}
	return jid, nil
}

func phoneDigits(s string) (string, error) { return waconfig.PhoneDigits(s) }

func allDigitsOrDash(s string) bool { return waconfig.AllDigitsOrDash(s) }

// MessageID derives the WhatsApp message id of part `part` of an outbound
// message from its idempotency key, so that a retry of the same chunk
// reuses the id. The format is WhatsApp Web's own ("3EB0" and 18
// upper-case hex digits, what whatsmeow's GenerateMessageID makes), so the
// id is indistinguishable from a web client's. The account is mixed in
// because two accounts may send the same key (one reply to two chats).
func MessageID(account, idempotencyKey string, part int) types.MessageID {
	h := sha256.New()
	h.Write([]byte("openclaw-edge/whatsapp/v1\x00"))
	h.Write([]byte(account))
	h.Write([]byte{0})
	h.Write([]byte(idempotencyKey))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(part)))
	sum := h.Sum(nil)
	return whatsmeow.WebMessageIDPrefix + strings.ToUpper(hex.EncodeToString(sum[:9]))
}

// userID is how a person appears in engine.Inbound (SenderID, Mentions):
// "+<user>" for a phone-number JID whose user part is ASCII digits (what
// WhatsApp puts there: the E.164 number without its "+"), so that it
// matches allowFrom entries written as E.164 numbers; otherwise the JID
// without its device, as it is ("…@lid": WhatsApp hides the number of some
// group members behind a LID). Nothing is cleaned: the access layer
// compares ids (access.Canonical), and a user part with anything but
// digits stays a JID that equals no phone number.
func userID(jid types.JID) string {
	jid = jid.ToNonAD()
	if (jid.Server == types.DefaultUserServer || jid.Server == types.LegacyUserServer) && jid.User != "" && strings.Trim(jid.User, "0123456789") == "" {
		return "+" + jid.User
	}
	return jid.String()
}

// sameUser reports whether a and b are the same account, ignoring devices
// (and treating c.us as s.whatsapp.net).
func sameUser(a, b types.JID) bool {
	if a.User == "" || b.User == "" || a.User != b.User {
		return false
	}
	norm := func(s string) string {
		if s == types.LegacyUserServer {
			return types.DefaultUserServer
		}
		return s
	}
	return norm(a.Server) == norm(b.Server)
}
