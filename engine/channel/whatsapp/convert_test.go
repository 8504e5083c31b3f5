package whatsapp

import (
	"reflect"
	"testing"
	"time"

	"go.mau.fi/whatsmeow/proto/waCommon"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"
	"google.golang.org/protobuf/proto"

	"github.com/openclaw-edge/edge/engine"
)

var (
	selfPNJID  = types.NewJID("15550000001", types.DefaultUserServer)
	selfLIDJID = types.NewJID("99990000001", types.HiddenUserServer)
	alice      = types.NewJID("15551234567", types.DefaultUserServer)
	aliceDev   = types.JID{User: "15551234567", Device: 3, Server: types.DefaultUserServer}
	bobLID     = types.NewJID("88881234567", types.HiddenUserServer)
	bobPN      = types.NewJID("447700900123", types.DefaultUserServer)
	group      = types.NewJID("120363025246125486", types.GroupServer)
	ts         = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

// dm is a direct message from alice.
func dm(id string, msg *waE2E.Message) *events.Message {
	return &events.Message{
		Info: types.MessageInfo{
			MessageSource: types.MessageSource{Chat: alice, Sender: aliceDev},
			ID:            id, PushName: "Alice", Timestamp: ts,
		},
		Message: msg,
	}
}

// inGroup is a group message from sender (with its phone number as alt
// when the sender is a LID).
func inGroup(id string, sender, alt types.JID, msg *waE2E.Message) *events.Message {
	return &events.Message{
		Info: types.MessageInfo{
			MessageSource: types.MessageSource{Chat: group, Sender: sender, SenderAlt: alt, IsGroup: true, AddressingMode: types.AddressingModeLID},
			ID:            id, PushName: "Bob", Timestamp: ts,
		},
		Message: msg,
	}
}

func text(s string) *waE2E.Message { return &waE2E.Message{Conversation: proto.String(s)} }

func TestConvert(t *testing.T) {
	quoteCtx := &waE2E.ContextInfo{
		StanzaID:      proto.String("3EB0QUOTED"),
		Participant:   proto.String(alice.String()),
		QuotedMessage: text("what's the weather?"),
		MentionedJID:  []string{alice.String(), selfPNJID.String()},
	}
	tests := []struct {
		name   string
		evt    *events.Message
		want   engine.Inbound
		ok     bool
		hasErr bool
	}{
		{
			name: "text",
			evt:  dm("ID1", text("hello")),
			ok:   true,
			want: engine.Inbound{Channel: "whatsapp", ChatID: "15551234567@s.whatsapp.net", ChatType: engine.ChatDirect,
				SenderID: "+15551234567", SenderName: "Alice", MessageID: "ID1", Text: "hello", Timestamp: ts},
		},
		{
			name: "extended text quoting, mentioning us",
			evt:  dm("ID2", &waE2E.Message{ExtendedTextMessage: &waE2E.ExtendedTextMessage{Text: proto.String("@me answer"), ContextInfo: quoteCtx}}),
			ok:   true,
			want: engine.Inbound{Channel: "whatsapp", ChatID: "15551234567@s.whatsapp.net", ChatType: engine.ChatDirect,
				SenderID: "+15551234567", SenderName: "Alice", MessageID: "ID2", Text: "@me answer", Timestamp: ts,
				ReplyTo: "3EB0QUOTED", Quoted: "what's the weather?", Mentions: []string{"+15551234567", "+15550000001"}, Mentioned: true},
		},
		{
			name: "reply to our message is a mention",
			evt: dm("ID3", &waE2E.Message{ExtendedTextMessage: &waE2E.ExtendedTextMessage{Text: proto.String("thanks"), ContextInfo: &waE2E.ContextInfo{
				StanzaID: proto.String("3EB0OURS"), Participant: proto.String(selfPNJID.String()),
				QuotedMessage: &waE2E.Message{ExtendedTextMessage: &waE2E.ExtendedTextMessage{Text: proto.String("sunny")}},
			}}}),
			ok: true,
			want: engine.Inbound{Channel: "whatsapp", ChatID: "15551234567@s.whatsapp.net", ChatType: engine.ChatDirect,
				SenderID: "+15551234567", SenderName: "Alice", MessageID: "ID3", Text: "thanks", Timestamp: ts,
				ReplyTo: "3EB0OURS", Quoted: "sunny", Mentioned: true},
		},
		{
			name: "group message mentioning our LID, sender with phone alt",
			evt: inGroup("G1", bobLID, bobPN, &waE2E.Message{ExtendedTextMessage: &waE2E.ExtendedTextMessage{
				Text: proto.String("@assistant hi"), ContextInfo: &waE2E.ContextInfo{MentionedJID: []string{selfLIDJID.String()}},
			}}),
			ok: true,
			want: engine.Inbound{Channel: "whatsapp", ChatID: "120363025246125486@g.us", ChatType: engine.ChatGroup,
				SenderID: "+447700900123", SenderName: "Bob", MessageID: "G1", Text: "@assistant hi", Timestamp: ts,
				Mentions: []string{"99990000001@lid"}, Mentioned: true},
		},
		{
			name: "group message without mention, LID sender without alt",
			evt:  inGroup("G2", types.JID{User: "88881234567", Device: 2, Server: types.HiddenUserServer}, types.EmptyJID, text("chatter")),
			ok:   true,
			want: engine.Inbound{Channel: "whatsapp", ChatID: "120363025246125486@g.us", ChatType: engine.ChatGroup,
				SenderID: "88881234567@lid", SenderName: "Bob", MessageID: "G2", Text: "chatter", Timestamp: ts},
		},
		{
			name: "group mention of someone else",
			evt: inGroup("G3", alice, types.EmptyJID, &waE2E.Message{ExtendedTextMessage: &waE2E.ExtendedTextMessage{
				Text: proto.String("@bob look"), ContextInfo: &waE2E.ContextInfo{MentionedJID: []string{bobLID.String(), "not a jid@x@y"}},
			}}),
			ok: true,
			want: engine.Inbound{Channel: "whatsapp", ChatID: "120363025246125486@g.us", ChatType: engine.ChatGroup,
				SenderID: "+15551234567", SenderName: "Bob", MessageID: "G3", Text: "@bob look", Timestamp: ts,
				Mentions: []string{"88881234567@lid"}},
		},
		{
			name: "image with caption",
			evt:  dm("IMG1", &waE2E.Message{ImageMessage: &waE2E.ImageMessage{Caption: proto.String("look"), Mimetype: proto.String("image/jpeg")}}),
			ok:   true,
			want: engine.Inbound{Channel: "whatsapp", ChatID: "15551234567@s.whatsapp.net", ChatType: engine.ChatDirect,
				SenderID: "+15551234567", SenderName: "Alice", MessageID: "IMG1", Text: "look", Timestamp: ts},
		},
		{
			name: "image without caption",
			evt:  dm("IMG2", &waE2E.Message{ImageMessage: &waE2E.ImageMessage{Mimetype: proto.String("image/jpeg")}}),
			ok:   true,
			want: engine.Inbound{Channel: "whatsapp", ChatID: "15551234567@s.whatsapp.net", ChatType: engine.ChatDirect,
				SenderID: "+15551234567", SenderName: "Alice", MessageID: "IMG2", Text: "<media:image>", Timestamp: ts},
		},
		{
			name: "document with caption, replying",
			evt: dm("DOC1", &waE2E.Message{DocumentMessage: &waE2E.DocumentMessage{
				Caption: proto.String("the contract"), FileName: proto.String("../../etc/passwd"), Mimetype: proto.String("application/pdf"),
				ContextInfo: &waE2E.ContextInfo{StanzaID: proto.String("Q"), QuotedMessage: &waE2E.Message{ImageMessage: &waE2E.ImageMessage{}}},
			}}),
			ok: true,
			want: engine.Inbound{Channel: "whatsapp", ChatID: "15551234567@s.whatsapp.net", ChatType: engine.ChatDirect,
				SenderID: "+15551234567", SenderName: "Alice", MessageID: "DOC1", Text: "the contract", Timestamp: ts,
				ReplyTo: "Q", Quoted: "<media:image>"},
		},
		{
			name: "voice note",
			evt:  dm("AUD1", &waE2E.Message{AudioMessage: &waE2E.AudioMessage{PTT: proto.Bool(true), Mimetype: proto.String("audio/ogg; codecs=opus")}}),
			ok:   true,
			want: engine.Inbound{Channel: "whatsapp", ChatID: "15551234567@s.whatsapp.net", ChatType: engine.ChatDirect,
				SenderID: "+15551234567", SenderName: "Alice", MessageID: "AUD1", Text: "<media:audio>", Timestamp: ts},
		},
		{
			name: "reaction",
			evt: dm("R1", &waE2E.Message{ReactionMessage: &waE2E.ReactionMessage{
				Key: &waCommon.MessageKey{ID: proto.String("3EB0X"), RemoteJID: proto.String(alice.String())}, Text: proto.String("👍"),
			}}),
		},
		{
			name: "revoke",
			evt: dm("P1", &waE2E.Message{ProtocolMessage: &waE2E.ProtocolMessage{
				Type: waE2E.ProtocolMessage_REVOKE.Enum(), Key: &waCommon.MessageKey{ID: proto.String("3EB0X")},
			}}),
		},
		{
			name: "own echo",
			evt: func() *events.Message {
				e := dm("E1", text("sent from the phone"))
				e.Info.IsFromMe = true
				e.Info.Sender = selfPNJID
				return e
			}(),
		},
		{
			name: "status broadcast",
			evt: &events.Message{Info: types.MessageInfo{
				MessageSource: types.MessageSource{Chat: types.StatusBroadcastJID, Sender: alice}, ID: "S1",
			}, Message: text("my holiday")},
		},
		{
			name: "broadcast list lands in the direct chat",
			evt: &events.Message{Info: types.MessageInfo{
				MessageSource: types.MessageSource{Chat: types.NewJID("1234567890", types.BroadcastServer), Sender: aliceDev}, ID: "B1", Timestamp: ts,
			}, Message: text("to all")},
			ok: true,
			want: engine.Inbound{Channel: "whatsapp", ChatID: "15551234567@s.whatsapp.net", ChatType: engine.ChatDirect,
				SenderID: "+15551234567", MessageID: "B1", Text: "to all", Timestamp: ts},
		},
		{
			name: "newsletter",
			evt: &events.Message{Info: types.MessageInfo{
				MessageSource: types.MessageSource{Chat: types.NewJID("123", types.NewsletterServer)}, ID: "N1",
			}, Message: text("news")},
		},
		{name: "sticker", evt: dm("ST1", &waE2E.Message{StickerMessage: &waE2E.StickerMessage{}})},
		{name: "nil message", evt: dm("NIL", nil)},
		{name: "no id", evt: dm("", text("x")), hasErr: true},
		{name: "no chat", evt: &events.Message{Info: types.MessageInfo{ID: "X"}, Message: text("x")}, hasErr: true},
		{name: "nil event", evt: nil, hasErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := Convert(tt.evt, selfPNJID, selfLIDJID)
			if (err != nil) != tt.hasErr {
				t.Fatalf("err = %v, want error %v", err, tt.hasErr)
			}
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (got %+v)", ok, tt.ok, got)
			}
			if ok && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestConvertSelfChat(t *testing.T) {
	self := []types.JID{selfPNJID, selfLIDJID}
	mk := func(chat types.JID) *events.Message {
		return &events.Message{Info: types.MessageInfo{
			MessageSource: types.MessageSource{Chat: chat, Sender: types.JID{User: selfPNJID.User, Device: 0, Server: types.DefaultUserServer}, IsFromMe: true},
			ID:            "SC1", Timestamp: ts,
		}, Message: text("remind me at 5")}
	}
	for _, chat := range []types.JID{selfPNJID, selfLIDJID} {
		m, ok, err := convert(mk(chat), self, true)
		if err != nil || !ok {
			t.Fatalf("self chat %s: ok=%v err=%v", chat, ok, err)
		}
		if m.SenderID != "+15550000001" || m.ChatType != engine.ChatDirect || m.Text != "remind me at 5" {
			t.Errorf("self chat %s: %+v", chat, m)
		}
	}
	// Without self-chat mode, or in another chat, the owner's messages stay out.
	if _, ok, _ := convert(mk(selfPNJID), self, false); ok {
		t.Error("self chat delivered without selfChatMode")
	}
	if _, ok, _ := convert(mk(alice), self, true); ok {
		t.Error("owner's message to alice delivered in selfChatMode")
	}
	g := mk(group)
	if _, ok, _ := convert(g, self, true); ok {
		t.Error("owner's group message delivered in selfChatMode")
	}
}

// TestUserIDNeverCleans: a phone-number JID becomes "+<digits>" only when
// its user part is digits; anything else stays the JID as it is, which
// the access layer compares byte for byte (access.Canonical) and which
// therefore never equals an owner's number.
func TestUserIDNeverCleans(t *testing.T) {
	for user, want := range map[string]string{
		"15551234567":              "+15551234567",
		"15551234567x":             "15551234567x@s.whatsapp.net",
		"1555 123 4567":            "1555 123 4567@s.whatsapp.net",
		"1555123456\uff17":         "1555123456\uff17@s.whatsapp.net",
		"\u0661\u0665\u0665\u0665": "\u0661\u0665\u0665\u0665@s.whatsapp.net",
	} {
		if got := userID(types.NewJID(user, types.DefaultUserServer)); got != want {
			t.Errorf("userID(%q) = %q, want %q", user, got, want)
		}
	}
	if got := userID(bobLID); got != "88881234567@lid" {
		t.Errorf("LID: %q", got)
	}
}
