package imessage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// imsgMessage is imsg's Message object (docs/json.md "Message"), the fields
// this adapter reads. Unknown fields are ignored: imsg's schema grows
// additively.
type imsgMessage struct {
	ID             int64            `json:"id"`
	Cursor         int64            `json:"cursor"`
	ChatID         int64            `json:"chat_id"`
	ChatIdentifier string           `json:"chat_identifier"`
	ChatGUID       string           `json:"chat_guid"`
	ChatName       string           `json:"chat_name"`
	Participants   []string         `json:"participants"`
	IsGroup        bool             `json:"is_group"`
	GUID           string           `json:"guid"`
	ReplyToGUID    string           `json:"reply_to_guid"`
	Sender         string           `json:"sender"`
	SenderName     string           `json:"sender_name"`
	IsFromMe       bool             `json:"is_from_me"`
	Text           string           `json:"text"`
	CreatedAt      string           `json:"created_at"`
	Attachments    []imsgAttachment `json:"attachments"`
	IsReaction     bool             `json:"is_reaction"`
}

// messageNotification is the params of a `message` notification.
type messageNotification struct {
	Subscription int64       `json:"subscription"`
	Message      imsgMessage `json:"message"`
}

// Bounds on one message, far above anything Messages produces; past them
// the notification is refused (and logged) rather than handed on.
const (
	maxTextBytes   = 1 << 20
	maxIDBytes     = 1024
	maxAttachments = 100
)

// parseNotification parses one stdout line as a `message` notification.
// Anything else — another method, a response, a wrong type, a message
// without the fields a delivery needs — is an error; it never panics.
func parseNotification(line []byte) (messageNotification, error) {
	var w wireMsg
	if err := json.Unmarshal(line, &w); err != nil {
		return messageNotification{}, fmt.Errorf("not JSON-RPC: %w", err)
	}
	return parseMessageParams(&w)
}

func parseMessageParams(w *wireMsg) (messageNotification, error) {
	var n messageNotification
	if w.JSONRPC != "2.0" {
		return n, fmt.Errorf("jsonrpc is %q, not 2.0", sanitize(w.JSONRPC, 20))
	}
	if w.Method != "message" {
		return n, fmt.Errorf("method %q is not message", sanitize(w.Method, 40))
	}
	if len(w.ID) > 0 && !bytes.Equal(w.ID, []byte("null")) {
		return n, errors.New("a notification has no id")
	}
	if len(w.Params) == 0 || w.Params[0] != '{' {
		return n, errors.New("params is not an object")
	}
	if err := json.Unmarshal(w.Params, &n); err != nil {
		return n, fmt.Errorf("message params: %w", err)
	}
	m := &n.Message
	switch {
	case m.GUID == "":
		return n, errors.New("message has no guid")
	case len(m.GUID) > maxIDBytes, len(m.Sender) > maxIDBytes, len(m.ChatGUID) > maxIDBytes,
		len(m.ChatIdentifier) > maxIDBytes, len(m.ReplyToGUID) > maxIDBytes, len(m.SenderName) > maxIDBytes,
		len(m.ChatName) > maxIDBytes:
		return n, errors.New("message has an overlong id or name")
	case len(m.Text) > maxTextBytes:
		return n, fmt.Errorf("message text is over %d bytes", maxTextBytes)
	case len(m.Attachments) > maxAttachments:
		return n, fmt.Errorf("message has more than %d attachments", maxAttachments)
	case m.ID < 0, m.Cursor < 0, m.ChatID < 0:
		return n, errors.New("message has a negative id, cursor or chat_id")
	case strings.ContainsFunc(m.GUID, unicode.IsControl):
		return n, errors.New("message guid has control characters")
	}
	for _, a := range m.Attachments {
		if a.ByteSize < 0 || a.TotalBytes < 0 {
			return n, errors.New("attachment has a negative total_bytes or byte_size")
		}
	}
	return n, nil
}

// position is the resume cursor a message advances to: imsg's live-watch
// `cursor` when present (the authoritative frontier), else its rowid.
func (m *imsgMessage) position() int64 {
	if m.Cursor > 0 {
		return m.Cursor
	}
	return m.ID
}

// chatID is the id replies are addressed by. imsg's chat_id (chat.ROWID)
// is its "preferred routing handle" and what OpenClaw keys
// channels.imessage.groups by ("42"), so it is the decimal chat_id when
// present; a row without one (imsg drops those in live watch, older builds
// may not) falls back to the chat guid, then the sender's handle as imsg
// sent it (comparing ids is the access layer's job, access.Canonical).
func (m *imsgMessage) chatID() string {
	switch {
	case m.ChatID > 0:
		return strconv.FormatInt(m.ChatID, 10)
	case m.ChatGUID != "":
		return "chat_guid:" + m.ChatGUID
	case m.ChatIdentifier != "" && m.IsGroup:
		return "chat_identifier:" + m.ChatIdentifier
	default:
		return m.Sender
	}
}

// timestamp parses created_at (ISO 8601 with a zone); zero if absent or bad.
func (m *imsgMessage) timestamp() time.Time {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000Z0700", "2006-01-02T15:04:05Z0700"} {
		if t, err := time.Parse(layout, m.CreatedAt); err == nil {
			return t
		}
	}
	return time.Time{}
}
