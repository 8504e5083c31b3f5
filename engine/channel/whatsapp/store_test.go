package whatsapp

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"
	"google.golang.org/protobuf/proto"

	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/channel/channeltest"

	"go.mau.fi/whatsmeow/proto/waAdv"
	"go.mau.fi/whatsmeow/proto/waE2E"
)

// TestDeviceStore opens whatsmeow's sqlstore on a real SQLite file through
// modernc: the schema upgrade runs, the first device is a new unlinked one,
// and Run reports not-linked without touching the network.
func TestDeviceStore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "whatsapp", "default.db")
	c, err := openStore(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := c.GetFirstDevice(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if dev.ID != nil {
		t.Fatalf("new store has a linked device %v", dev.ID)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("store file %v %v", fi, err)
	}
	// The pragmas took: WAL is persistent, foreign keys are per connection.
	db, err := sql.Open("sqlite", storeDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	var mode string
	var fk int
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q %v", mode, err)
	}
	if err := db.QueryRow("PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys %d %v", fk, err)
	}
	var version int
	if err := db.QueryRow("SELECT version FROM whatsmeow_version").Scan(&version); err != nil || version < 1 {
		t.Errorf("schema version %d %v", version, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	a, err := New(Config{}, Deps{StorePath: path, Store: channeltest.NewStore()})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // a second Run re-opens and re-upgrades the same file
		err = a.Run(t.Context(), channeltest.NewInbox())
		if !errors.Is(err, channel.ErrLoggedOut) || !strings.Contains(err.Error(), "channels login whatsapp") {
			t.Fatalf("Run on an unlinked store: %v", err)
		}
	}
	st := a.Status()
	if st.State != channel.StateNotLinked || st.Reason != notLinkedReason || st.Self != "" {
		t.Errorf("status %+v", st)
	}
	// Logout of an unlinked account is a no-op.
	if err := a.Logout(t.Context()); err != nil {
		t.Errorf("Logout unlinked: %v", err)
	}
}

// TestLoginRefusesLinked: a store holding a linked device makes Login
// refuse (without the network) and Status report the number.
func TestLoginRefusesLinked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "default.db")
	c, err := openStore(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	dev := c.NewDevice()
	jid := types.JID{User: "15550000001", Device: 7, Server: types.DefaultUserServer}
	dev.ID = &jid
	dev.Account = &waAdv.ADVSignedDeviceIdentity{
		Details: []byte{1}, AccountSignature: make([]byte, 64), AccountSignatureKey: make([]byte, 32), DeviceSignature: make([]byte, 64),
	}
	if err := c.PutDevice(t.Context(), dev); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{}, Deps{StorePath: path})
	if err != nil {
		t.Fatal(err)
	}
	err = a.Login(t.Context(), channel.LoginOptions{}, func(channel.LoginEvent) { t.Error("emitted") })
	if err == nil || !strings.Contains(err.Error(), "already linked as +15550000001") {
		t.Errorf("Login on a linked store: %v", err)
	}
	if err := a.Login(t.Context(), channel.LoginOptions{Phone: "012"}, nil); err == nil || !strings.Contains(err.Error(), "phone number") {
		t.Errorf("Login with a bad phone: %v", err)
	}
}

// FuzzConvert: arbitrary protobuf bytes as the message, arbitrary chat and
// sender strings; Convert must never panic, and whatever it delivers must
// carry the message id and a chat.
func FuzzConvert(f *testing.F) {
	seed := func(m *waE2E.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	f.Add(seed(text("hello")), "15551234567@s.whatsapp.net", "15551234567:2@s.whatsapp.net", "ID1", false)
	f.Add(seed(&waE2E.Message{ExtendedTextMessage: &waE2E.ExtendedTextMessage{Text: proto.String("@x"), ContextInfo: &waE2E.ContextInfo{
		StanzaID: proto.String("Q"), Participant: proto.String("15550000001@s.whatsapp.net"),
		MentionedJID: []string{"15550000001@s.whatsapp.net", "99990000001@lid", "@", "a.b.c@d"}, QuotedMessage: text("q"),
	}}}), "120363025246125486@g.us", "88881234567@lid", "G1", false)
	f.Add(seed(&waE2E.Message{ImageMessage: &waE2E.ImageMessage{Caption: proto.String("c")}}), "status@broadcast", "1@s.whatsapp.net", "S", false)
	f.Add(seed(&waE2E.Message{DocumentWithCaptionMessage: &waE2E.FutureProofMessage{Message: &waE2E.Message{DocumentMessage: &waE2E.DocumentMessage{}}}}), "1.0:1@lid", "x", "D", true)
	f.Add(seed(&waE2E.Message{EphemeralMessage: &waE2E.FutureProofMessage{Message: &waE2E.Message{ProtocolMessage: &waE2E.ProtocolMessage{Type: waE2E.ProtocolMessage_REVOKE.Enum()}}}}), "15550000001@s.whatsapp.net", "15550000001@s.whatsapp.net", "P", true)
	f.Add([]byte{0xff, 0x01}, "", "", "", false)

	self := []types.JID{selfPNJID, selfLIDJID}
	f.Fuzz(func(t *testing.T, data []byte, chat, sender, id string, fromMe bool) {
		var msg waE2E.Message
		if err := proto.Unmarshal(data, &msg); err != nil {
			return
		}
		chatJID, _ := types.ParseJID(chat)
		senderJID, _ := types.ParseJID(sender)
		evt := &events.Message{
			Info: types.MessageInfo{
				MessageSource: types.MessageSource{Chat: chatJID, Sender: senderJID, IsFromMe: fromMe, SenderAlt: senderJID},
				ID:            id,
			},
			RawMessage: &msg,
		}
		evt.UnwrapRaw() // what whatsmeow does before dispatching
		for _, selfChat := range []bool{false, true} {
			m, ok, err := convert(evt, self, selfChat)
			if err != nil && ok {
				t.Fatalf("ok with error %v", err)
			}
			if ok && (m.MessageID != id || m.ChatID == "" || m.Text == "") {
				t.Fatalf("delivered without id, chat or text: %+v", m)
			}
		}
		// The handler's helpers must not panic either.
		_, _, att := content(evt.Message)
		if att != nil {
			_ = extension(cleanMIME(att.mimeType), att.kind)
		}
		_ = safeName(id)
		_, _ = ParseChatID(chat)
	})
}
