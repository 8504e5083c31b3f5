package whatsapp

import (
	"errors"
	"strings"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"

	"github.com/openclaw-edge/edge/engine"
)

// ChannelName is the channel's name in config, session keys and dedup keys.
const ChannelName = "whatsapp"

// Convert turns a whatsmeow message event into an engine.Inbound. It is pure:
// no network, no store, no clock. self lists our own JIDs (the phone-number
// JID and, when known, the LID: WhatsApp addresses us by either, and groups
// that hide numbers mention us by LID).
//
// The bool is false when there is nothing to deliver:
//   - our own messages (IsFromMe: echoes of what we sent and what the owner
//     types on the phone; self-chat mode is the adapter's exception),
//   - status updates (status@broadcast), newsletters (channels),
//   - reactions, revokes, edits and other protocol messages: they change a
//     message already delivered, and the engine has no vocabulary for
//     that; a reaction is not something to answer,
//   - content without text or a supported attachment (stickers, polls,
//     calls, locations, contacts, sender-key distribution messages).
//
// Media (image, video, document, audio) is described, not downloaded: the
// text is the caption, or a placeholder "<media:image>" (OpenClaw's) when
// there is none; the adapter downloads the attachment into Media.
//
// An error means the event is malformed (no id or chat); it will not get
// better, so the adapter logs it and acknowledges the message.
func Convert(evt *events.Message, self ...types.JID) (engine.Inbound, bool, error) {
	return convert(evt, self, false)
}

// convert is Convert with self-chat mode: when selfChat is set, a message
// we sent to ourselves (the "message yourself" chat) is delivered as the
// owner's.
func convert(evt *events.Message, self []types.JID, selfChat bool) (engine.Inbound, bool, error) {
	if evt == nil {
		return engine.Inbound{}, false, errors.New("nil message event")
	}
	info := &evt.Info
	if info.ID == "" {
		return engine.Inbound{}, false, errors.New("message without an id")
	}
	if info.Chat.IsEmpty() || info.Chat.User == "" && info.Chat.Server != types.BroadcastServer {
		return engine.Inbound{}, false, errors.New("message " + info.ID + " without a chat")
	}
	msg := evt.Message
	if msg == nil {
		return engine.Inbound{}, false, nil
	}

	chat := info.Chat.ToNonAD()
	m := engine.Inbound{
		Channel:    ChannelName,
		MessageID:  info.ID,
		SenderName: info.PushName,
		Timestamp:  info.Timestamp,
		ChatType:   engine.ChatDirect,
		ChatID:     chat.String(),
		SenderID:   senderID(info),
	}
	switch {
	case chat.Server == types.NewsletterServer:
		return engine.Inbound{}, false, nil
	case chat.Server == types.BroadcastServer:
		if chat.User == types.StatusBroadcastJID.User || info.Sender.IsEmpty() {
			return engine.Inbound{}, false, nil
		}
		// A broadcast list message shows up in the direct chat with its
		// sender, and that is where the answer goes.
		m.ChatID = info.Sender.ToNonAD().String()
	case chat.Server == types.GroupServer:
		m.ChatType = engine.ChatGroup
	}
	if info.IsFromMe {
		if !selfChat || m.ChatType != engine.ChatDirect || !isSelf(chat, self) {
			return engine.Inbound{}, false, nil
		}
		// The owner writing in the self chat: the sender is our own number.
		if pn := selfPN(self); !pn.IsEmpty() {
			m.SenderID = userID(pn)
		}
	}

	if msg.ProtocolMessage != nil || msg.ReactionMessage != nil || msg.EncReactionMessage != nil ||
		msg.PollUpdateMessage != nil || msg.KeepInChatMessage != nil || msg.PinInChatMessage != nil {
		return engine.Inbound{}, false, nil
	}
	text, ci, att := content(msg)
	if text == "" && att == nil {
		return engine.Inbound{}, false, nil
	}
	if text == "" {
		text = "<media:" + att.kind + ">"
	}
	m.Text = text

	if ci != nil {
		m.ReplyTo = ci.GetStanzaID()
		if q := ci.GetQuotedMessage(); q != nil {
			qt, _, qa := content(q)
			if qt == "" && qa != nil {
				qt = "<media:" + qa.kind + ">"
			}
			m.Quoted = qt
		}
		for _, s := range ci.GetMentionedJID() {
			j, err := types.ParseJID(s)
			if err != nil || !isUserJID(j) {
				continue // a malformed mention is not worth dropping the message for
			}
			m.Mentions = append(m.Mentions, userID(j))
			if isSelf(j, self) {
				m.Mentioned = true
			}
		}
		// A reply to one of our messages addresses the assistant as surely
		// as an @mention does.
		if p := ci.GetParticipant(); p != "" {
			if j, err := types.ParseJID(p); err == nil && isSelf(j, self) {
				m.Mentioned = true
			}
		}
	}
	return m, true, nil
}

// senderID is the sender as "+<digits>" when WhatsApp tells us the phone
// number (the sender JID itself, or its alternative address on
// LID-addressed messages), else the sender's LID JID.
func senderID(info *types.MessageInfo) string {
	s := info.Sender.ToNonAD()
	if s.Server == types.DefaultUserServer || s.Server == types.LegacyUserServer {
		return userID(s)
	}
	if alt := info.SenderAlt.ToNonAD(); alt.Server == types.DefaultUserServer && alt.User != "" {
		return userID(alt)
	}
	if s.IsEmpty() {
		return ""
	}
	return s.String()
}

// isUserJID reports whether j names a person: digits at a phone-number
// or LID server.
func isUserJID(j types.JID) bool {
	switch j.Server {
	case types.DefaultUserServer, types.LegacyUserServer, types.HiddenUserServer:
		return allDigitsOrDash(j.User) && !strings.Contains(j.User, "-")
	}
	return false
}

func isSelf(j types.JID, self []types.JID) bool {
	j = j.ToNonAD()
	for _, s := range self {
		if sameUser(j, s.ToNonAD()) {
			return true
		}
	}
	return false
}

func selfPN(self []types.JID) types.JID {
	for _, s := range self {
		if s.Server == types.DefaultUserServer {
			return s.ToNonAD()
		}
	}
	return types.EmptyJID
}

// attachment is a downloadable part of a message.
type attachment struct {
	kind     string // image, video, document, audio
	msg      whatsmeow.DownloadableMessage
	mimeType string
	size     uint64 // as declared by the sender
	voice    bool
}

// content extracts the text, the context (reply, mentions) and the
// attachment of a message.
func content(msg *waE2E.Message) (string, *waE2E.ContextInfo, *attachment) {
	switch {
	case msg.GetConversation() != "":
		return msg.GetConversation(), nil, nil
	case msg.ExtendedTextMessage != nil:
		x := msg.ExtendedTextMessage
		return x.GetText(), x.GetContextInfo(), nil
	case msg.ImageMessage != nil:
		x := msg.ImageMessage
		return x.GetCaption(), x.GetContextInfo(), &attachment{kind: "image", msg: x, mimeType: x.GetMimetype(), size: x.GetFileLength()}
	case msg.VideoMessage != nil:
		x := msg.VideoMessage
		return x.GetCaption(), x.GetContextInfo(), &attachment{kind: "video", msg: x, mimeType: x.GetMimetype(), size: x.GetFileLength()}
	case msg.DocumentMessage != nil:
		x := msg.DocumentMessage
		return x.GetCaption(), x.GetContextInfo(), &attachment{kind: "document", msg: x, mimeType: x.GetMimetype(), size: x.GetFileLength()}
	case msg.AudioMessage != nil:
		x := msg.AudioMessage
		return "", x.GetContextInfo(), &attachment{kind: "audio", msg: x, mimeType: x.GetMimetype(), size: x.GetFileLength(), voice: x.GetPTT()}
	}
	return "", nil, nil
}
