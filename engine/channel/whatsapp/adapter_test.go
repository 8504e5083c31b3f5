package whatsapp

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waCommon"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/proto/waWeb"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"
	"google.golang.org/protobuf/proto"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/channel/channeltest"
)

// testAdapter returns an adapter attached to a fake client, as if Run had
// connected as selfPNJID/selfLIDJID.
func testAdapter(t *testing.T, cfg Config) (*Adapter, *fakeClient, *session, *channeltest.Inbox) {
	t.Helper()
	dir := t.TempDir()
	a, err := New(cfg, Deps{
		Account:   "default",
		StorePath: filepath.Join(dir, "whatsapp", "default.db"),
		Store:     channeltest.NewStore(),
		MediaDir:  filepath.Join(dir, "media"),
		Now:       func() time.Time { return ts },
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newFake()
	in := channeltest.NewInbox()
	s := &session{ctx: t.Context(), in: in, cli: f, fatal: make(chan error, 1)}
	a.attach(s)
	a.setSelf(selfPNJID, selfLIDJID)
	return a, f, s, in
}

func TestHandlerDeliversAndMarksRead(t *testing.T) {
	a, f, s, in := testAdapter(t, Config{})
	if !a.handleEvent(s, dm("ID1", text("hello"))) {
		t.Fatal("handler reported failure")
	}
	msgs := in.Messages()
	if len(msgs) != 1 {
		t.Fatalf("delivered %d messages", len(msgs))
	}
	m := msgs[0]
	if m.Channel != "whatsapp" || m.Account != "default" || m.Text != "hello" || m.SenderID != "+15551234567" || m.DedupKey() != "whatsapp:ID1" {
		t.Errorf("delivered %+v", m)
	}
	rr := f.readReceipts()
	if len(rr) != 1 || rr[0].ids[0] != "ID1" || rr[0].chat != alice || rr[0].sender != aliceDev {
		t.Errorf("read receipts %+v", rr)
	}
	if st := a.Status(); !st.LastInbound.Equal(ts) || st.Self != "+15550000001" {
		t.Errorf("status %+v", st)
	}
}

func TestHandlerGroupMention(t *testing.T) {
	a, _, s, in := testAdapter(t, Config{})
	evt := inGroup("G1", bobLID, bobPN, &waE2E.Message{ExtendedTextMessage: &waE2E.ExtendedTextMessage{
		Text: proto.String("@assistant summarise"), ContextInfo: &waE2E.ContextInfo{MentionedJID: []string{selfPNJID.String()}},
	}})
	a.handleEvent(s, evt)
	m, ok := in.Next(time.Second)
	if !ok || m.ChatType != engine.ChatGroup || m.ChatID != group.String() || !m.Mentioned || m.SenderID != "+447700900123" {
		t.Fatalf("delivered %+v", m)
	}
}

func TestHandlerLIDLookup(t *testing.T) {
	a, _, s, in := testAdapter(t, Config{})
	s.pnForLID = func(ctx context.Context, lid types.JID) (types.JID, error) {
		if lid == bobLID {
			return bobPN, nil
		}
		return types.EmptyJID, nil
	}
	a.handleEvent(s, inGroup("G9", types.JID{User: bobLID.User, Device: 1, Server: types.HiddenUserServer}, types.EmptyJID, text("hi")))
	if m, ok := in.Next(time.Second); !ok || m.SenderID != "+447700900123" {
		t.Fatalf("delivered %+v", m)
	}
}

func TestHandlerNoReadReceipts(t *testing.T) {
	off := false
	a, f, s, in := testAdapter(t, Config{SendReadReceipts: &off})
	a.handleEvent(s, dm("ID1", text("hello")))
	if len(in.Messages()) != 1 || len(f.readReceipts()) != 0 {
		t.Fatalf("messages %d, receipts %d", len(in.Messages()), len(f.readReceipts()))
	}
}

func TestHandlerDeliverFailure(t *testing.T) {
	a, f, s, in := testAdapter(t, Config{})
	in.Err = errors.New("disk full")
	if a.handleEvent(s, dm("ID1", text("hello"))) {
		t.Fatal("handler acknowledged a message the gateway did not record")
	}
	if len(f.readReceipts()) != 0 {
		t.Error("marked read although not delivered")
	}
	select {
	case err := <-s.fatal:
		if !strings.Contains(err.Error(), "disk full") {
			t.Errorf("fatal %v", err)
		}
	default:
		t.Error("Run not told to reconnect")
	}
}

func TestHandlerSkips(t *testing.T) {
	a, f, s, in := testAdapter(t, Config{})
	reaction := dm("R1", &waE2E.Message{ReactionMessage: &waE2E.ReactionMessage{
		Key: &waCommon.MessageKey{ID: proto.String("3EB0X")}, Text: proto.String("❤️"),
	}})
	revoke := dm("P1", &waE2E.Message{ProtocolMessage: &waE2E.ProtocolMessage{Type: waE2E.ProtocolMessage_REVOKE.Enum()}})
	echo := dm("E1", text("mine"))
	echo.Info.IsFromMe = true
	history := dm("H1", text("old"))
	history.SourceWebMsg = &waWeb.WebMessageInfo{}
	for _, evt := range []*events.Message{reaction, revoke, echo, history, dm("", text("no id"))} {
		if !a.handleEvent(s, evt) {
			t.Errorf("%s: handler failed", evt.Info.ID)
		}
	}
	if n := len(in.Messages()); n != 0 {
		t.Errorf("delivered %d messages: %+v", n, in.Messages())
	}
	if len(f.readReceipts()) != 0 {
		t.Error("read receipts for skipped messages")
	}
}

func TestHandlerSelfChatEcho(t *testing.T) {
	a, _, s, in := testAdapter(t, Config{SelfChatMode: true})
	// Our reply to the self chat, sent through Send …
	if _, err := a.Send(t.Context(), channel.Outbound{ChatID: "+15550000001", Text: "done", IdempotencyKey: "k1"}); err != nil {
		t.Fatal(err)
	}
	echo := &events.Message{Info: types.MessageInfo{
		MessageSource: types.MessageSource{Chat: selfPNJID, Sender: selfPNJID, IsFromMe: true},
		ID:            MessageID("default", "k1", 0), Timestamp: ts,
	}, Message: text("done")}
	a.handleEvent(s, echo) // … echoed back: dropped.
	owner := &events.Message{Info: types.MessageInfo{
		MessageSource: types.MessageSource{Chat: selfPNJID, Sender: types.JID{User: selfPNJID.User, Device: 0, Server: types.DefaultUserServer}, IsFromMe: true},
		ID:            "3A0OWNER", Timestamp: ts,
	}, Message: text("what's on today?")}
	a.handleEvent(s, owner) // The owner typing in the self chat: delivered.
	msgs := in.Messages()
	if len(msgs) != 1 || msgs[0].MessageID != "3A0OWNER" || msgs[0].SenderID != "+15550000001" {
		t.Fatalf("delivered %+v", msgs)
	}
}

func TestHandlerMedia(t *testing.T) {
	a, f, s, in := testAdapter(t, Config{MediaMaxMB: 1})
	f.download = bytes.Repeat([]byte{0xff}, 5000)
	evt := dm("3EB0IMG", &waE2E.Message{ImageMessage: &waE2E.ImageMessage{DirectPath: proto.String("/v/t62.7118-24/x.enc"), MediaKey: key32, FileSHA256: key32, FileEncSHA256: key32,
		Caption: proto.String("look"), Mimetype: proto.String("image/jpeg"), FileLength: proto.Uint64(5000),
	}})
	a.handleEvent(s, evt)
	m, ok := in.Next(time.Second)
	if !ok || len(m.Media) != 1 {
		t.Fatalf("delivered %+v", m)
	}
	md := m.Media[0]
	if filepath.Base(md.Path) != "wa-3EB0IMG.jpg" || md.MimeType != "image/jpeg" || m.Text != "look" {
		t.Errorf("media %+v text %q", md, m.Text)
	}
	fi, err := os.Stat(md.Path)
	if err != nil || fi.Size() != 5000 || fi.Mode().Perm() != 0o600 {
		t.Errorf("file %v %v", fi, err)
	}

	// A document whose sender's name tries to escape MediaDir.
	f.download = []byte("%PDF-1.4")
	a.handleEvent(s, dm("../../x", &waE2E.Message{DocumentMessage: &waE2E.DocumentMessage{DirectPath: proto.String("/v/t62.7118-24/x.enc"), MediaKey: key32, FileSHA256: key32, FileEncSHA256: key32,
		FileName: proto.String("../../../etc/cron.d/evil"), Mimetype: proto.String("application/pdf"),
	}}))
	m, _ = in.Next(time.Second)
	if len(m.Media) != 1 || filepath.Dir(m.Media[0].Path) != a.mediaDir || filepath.Base(m.Media[0].Path) != "wa-x.pdf" {
		t.Errorf("document media %+v", m.Media)
	}

	// Declared too large: not downloaded, the text says so.
	a.handleEvent(s, dm("BIG", &waE2E.Message{VideoMessage: &waE2E.VideoMessage{DirectPath: proto.String("/v/t62.7118-24/x.enc"), MediaKey: key32, FileSHA256: key32, FileEncSHA256: key32,
		Caption: proto.String("movie"), Mimetype: proto.String("video/mp4"), FileLength: proto.Uint64(5 << 20),
	}}))
	m, _ = in.Next(time.Second)
	if len(m.Media) != 0 || !strings.Contains(m.Text, "over mediaMaxMb") || !strings.HasPrefix(m.Text, "movie") {
		t.Errorf("big video delivered as %+v", m)
	}

	// Declared small, actually large: the cap stops the download.
	f.download = bytes.Repeat([]byte{1}, 2<<20)
	a.handleEvent(s, dm("LIAR", &waE2E.Message{AudioMessage: &waE2E.AudioMessage{DirectPath: proto.String("/v/t62.7118-24/x.enc"), MediaKey: key32, FileSHA256: key32, FileEncSHA256: key32, Mimetype: proto.String("audio/ogg"), FileLength: proto.Uint64(10)}}))
	m, _ = in.Next(time.Second)
	if len(m.Media) != 0 || !strings.Contains(m.Text, "not downloaded") {
		t.Errorf("lying audio delivered as %+v", m)
	}
	left, _ := filepath.Glob(filepath.Join(a.mediaDir, ".wa-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// A failed download still delivers the message.
	f.downloadErr = whatsmeow.ErrNoURLPresent
	a.handleEvent(s, dm("GONE", &waE2E.Message{ImageMessage: &waE2E.ImageMessage{Mimetype: proto.String("image/png")}}))
	m, _ = in.Next(time.Second)
	if len(m.Media) != 0 || !strings.Contains(m.Text, "download failed") {
		t.Errorf("failed download delivered as %+v", m)
	}
}

func TestHandlerConnectionEvents(t *testing.T) {
	a, _, s, _ := testAdapter(t, Config{})
	a.handleEvent(s, &events.Connected{})
	if st := a.Status(); st.State != channel.StateLinked || !strings.Contains(st.Detail, "transport up since") {
		t.Errorf("after Connected: %+v", st)
	}
	a.handleEvent(s, &events.Disconnected{})
	if st := a.Status(); st.State != channel.StateConnecting || !strings.Contains(st.Detail, "transport down since") {
		t.Errorf("after Disconnected: %+v", st)
	}
	a.handleEvent(s, &events.Connected{})
	a.handleEvent(s, &events.KeepAliveTimeout{ErrorCount: 1, LastSuccess: ts.Add(-time.Minute)})
	if st := a.Status(); !strings.Contains(st.Detail, "keepalives failing since") {
		t.Errorf("after KeepAliveTimeout: %+v", st)
	}
	a.handleEvent(s, &events.KeepAliveRestored{})
	if st := a.Status(); strings.Contains(st.Detail, "keepalives failing") {
		t.Errorf("after KeepAliveRestored: %+v", st)
	}

	a.handleEvent(s, &events.ClientOutdated{})
	if st := a.Status(); st.State != channel.StateError || !strings.Contains(st.Detail, "outdated") {
		t.Errorf("after ClientOutdated: %+v", st)
	}
	if err := <-s.fatal; err == nil || errors.Is(err, channel.ErrLoggedOut) {
		t.Errorf("outdated fatal %v", err)
	}

	a.handleEvent(s, &events.LoggedOut{Reason: events.ConnectFailureLoggedOut})
	if err := <-s.fatal; !errors.Is(err, channel.ErrLoggedOut) {
		t.Errorf("logged out fatal %v", err)
	}
	if st := a.Status(); st.State != channel.StateLoggedOut || !strings.Contains(st.Reason, "channels login whatsapp") {
		t.Errorf("after LoggedOut: %+v", st)
	}

	for _, evt := range []any{&events.StreamReplaced{}, &events.TemporaryBan{Code: events.TempBanBlockedByUsers, Expire: time.Hour}} {
		a.handleEvent(s, evt)
		if err := <-s.fatal; err == nil || errors.Is(err, channel.ErrLoggedOut) {
			t.Errorf("%T fatal %v", evt, err)
		}
		if st := a.Status(); st.State != channel.StateError || st.Reason == "" {
			t.Errorf("after %T: %+v", evt, st)
		}
	}
}

func TestWatchdog(t *testing.T) {
	t0 := ts
	l := liveness{started: t0}
	if act, _ := l.check(t0.Add(time.Minute)); act != actNone {
		t.Errorf("connecting for a minute: %d", act)
	}
	if act, why := l.check(t0.Add(transportDownMax)); act != actFail || !strings.Contains(why, "no connection") {
		t.Errorf("never connected: %d %q", act, why)
	}
	l.connected, l.upSince, l.lastEvent = true, t0, t0
	if act, _ := l.check(t0.Add(silenceMax - time.Second)); act != actNone {
		t.Errorf("quiet for less than silenceMax: %d", act)
	}
	if act, why := l.check(t0.Add(silenceMax)); act != actReconnect || !strings.Contains(why, "nothing received") {
		t.Errorf("silent: %d %q", act, why)
	}
	l.lastEvent = t0.Add(20 * time.Minute)
	if act, _ := l.check(t0.Add(silenceMax)); act != actNone {
		t.Errorf("recent event: %d", act)
	}
	l.kaFailSince = t0.Add(20 * time.Minute)
	if act, why := l.check(t0.Add(20*time.Minute + transportDownMax)); act != actFail || !strings.Contains(why, "keepalives") {
		t.Errorf("keepalives failing: %d %q", act, why)
	}
	l.kaFailSince = time.Time{}
	l.markDown(t0.Add(30 * time.Minute))
	l.markDown(t0.Add(31 * time.Minute)) // a second report keeps the first time
	if act, _ := l.check(t0.Add(30*time.Minute + transportDownMax - time.Second)); act != actNone {
		t.Errorf("down briefly: %d", act)
	}
	if act, _ := l.check(t0.Add(30*time.Minute + transportDownMax)); act != actFail {
		t.Errorf("down too long: %d", act)
	}
}

var idFormat = regexp.MustCompile(`^3EB0[0-9A-F]{18}$`)

func TestSendText(t *testing.T) {
	a, f, _, _ := testAdapter(t, Config{})
	r, err := a.Send(t.Context(), channel.Outbound{ChatID: "+1 555 123-4567", Text: "hi", IdempotencyKey: "out-1"})
	if err != nil {
		t.Fatal(err)
	}
	sent := f.sentMsgs()
	if len(sent) != 1 || sent[0].to != alice || sent[0].msg.GetConversation() != "hi" {
		t.Fatalf("sent %+v", sent)
	}
	if r.MessageID != MessageID("default", "out-1", 0) || !idFormat.MatchString(r.MessageID) || r.SentAt.IsZero() {
		t.Errorf("receipt %+v", r)
	}
	// A retry of the same chunk reuses the id; another chunk does not.
	r2, err := a.Send(t.Context(), channel.Outbound{ChatID: alice.String(), Text: "hi", IdempotencyKey: "out-1"})
	if err != nil || r2.MessageID != r.MessageID {
		t.Errorf("retry id %q, first %q, err %v", r2.MessageID, r.MessageID, err)
	}
	r3, _ := a.Send(t.Context(), channel.Outbound{ChatID: alice.String(), Text: "more", IdempotencyKey: "out-2"})
	if r3.MessageID == r.MessageID {
		t.Error("different keys, same id")
	}
	if MessageID("work", "out-1", 0) == r.MessageID {
		t.Error("different accounts, same id")
	}
	if st := a.Status(); !st.LastOutbound.Equal(ts) {
		t.Errorf("lastOutbound %v", st.LastOutbound)
	}
}

func TestSendReplyQuotes(t *testing.T) {
	a, f, s, _ := testAdapter(t, Config{})
	a.handleEvent(s, inGroup("3A5QUESTION", bobLID, bobPN, text("when is the meeting?")))
	_, err := a.Send(t.Context(), channel.Outbound{ChatID: group.String(), Text: "at 3", ReplyTo: "3A5QUESTION", IdempotencyKey: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	x := f.sentMsgs()[0].msg.GetExtendedTextMessage()
	ci := x.GetContextInfo()
	if x.GetText() != "at 3" || ci.GetStanzaID() != "3A5QUESTION" || ci.GetParticipant() != bobLID.String() ||
		ci.GetQuotedMessage().GetConversation() != "when is the meeting?" {
		t.Errorf("reply %v", x)
	}
	// An unknown message in a direct chat is quoted by id, from the peer.
	if _, err := a.Send(t.Context(), channel.Outbound{ChatID: alice.String(), Text: "ok", ReplyTo: "OLD", IdempotencyKey: "r2"}); err != nil {
		t.Fatal(err)
	}
	ci = f.sentMsgs()[1].msg.GetExtendedTextMessage().GetContextInfo()
	if ci.GetStanzaID() != "OLD" || ci.GetParticipant() != alice.String() || ci.GetQuotedMessage() != nil {
		t.Errorf("reply to unknown %v", ci)
	}
}

func TestSendMedia(t *testing.T) {
	a, f, _, _ := testAdapter(t, Config{MediaMaxMB: 1})
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	jpeg := write("photo.jpg", append([]byte{0xff, 0xd8, 0xff, 0xe0}, make([]byte, 100)...))
	pdf := write("report.pdf", []byte("%PDF-1.4 …"))
	ogg := write("note.ogg", []byte("OggS"))

	r, err := a.Send(t.Context(), channel.Outbound{
		ChatID: alice.String(), Text: "here", ReplyTo: "Q1", IdempotencyKey: "m1",
		Media: []engine.Media{{Path: jpeg}, {Path: pdf, MimeType: "application/pdf"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sent := f.sentMsgs()
	if len(sent) != 2 {
		t.Fatalf("sent %d messages", len(sent))
	}
	img := sent[0].msg.GetImageMessage()
	if img.GetCaption() != "here" || img.GetMimetype() != "image/jpeg" || img.GetContextInfo().GetStanzaID() != "Q1" || img.GetDirectPath() == "" {
		t.Errorf("image %v", img)
	}
	doc := sent[1].msg.GetDocumentMessage()
	if doc.GetFileName() != "report.pdf" || doc.GetCaption() != "" || doc.GetContextInfo() != nil {
		t.Errorf("document %v", doc)
	}
	if sent[0].id != r.MessageID || sent[1].id != MessageID("default", "m1", 1) {
		t.Errorf("ids %s %s receipt %s", sent[0].id, sent[1].id, r.MessageID)
	}
	if len(f.uploads) != 2 || f.uploads[0] != whatsmeow.MediaImage || f.uploads[1] != whatsmeow.MediaDocument {
		t.Errorf("uploads %v", f.uploads)
	}

	// A voice note cannot carry the text: the text goes first.
	if _, err := a.Send(t.Context(), channel.Outbound{ChatID: alice.String(), Text: "listen", AsVoice: true, IdempotencyKey: "v1",
		Media: []engine.Media{{Path: ogg}}}); err != nil {
		t.Fatal(err)
	}
	sent = f.sentMsgs()[2:]
	if len(sent) != 2 || sent[0].msg.GetConversation() != "listen" {
		t.Fatalf("voice sent %+v", sent)
	}
	au := sent[1].msg.GetAudioMessage()
	if !au.GetPTT() || au.GetMimetype() != "audio/ogg; codecs=opus" {
		t.Errorf("voice %v", au)
	}

	big := write("big.bin", make([]byte, 2<<20))
	_, err = a.Send(t.Context(), channel.Outbound{ChatID: alice.String(), Media: []engine.Media{{Path: big}}, IdempotencyKey: "b"})
	if !errors.Is(err, channel.ErrPermanent) {
		t.Errorf("too large: %v", err)
	}
	_, err = a.Send(t.Context(), channel.Outbound{ChatID: alice.String(), Media: []engine.Media{{Path: filepath.Join(dir, "missing.png")}}, IdempotencyKey: "c"})
	if !errors.Is(err, channel.ErrPermanent) {
		t.Errorf("missing file: %v", err)
	}
	// A URL is sent as a link.
	if _, err := a.Send(t.Context(), channel.Outbound{ChatID: alice.String(), Text: "see", Media: []engine.Media{{URL: "https://example.com/a.png"}}, IdempotencyKey: "u"}); err != nil {
		t.Fatal(err)
	}
	if last := f.sentMsgs()[len(f.sentMsgs())-1]; last.msg.GetConversation() != "see\nhttps://example.com/a.png" {
		t.Errorf("url sent as %v", last.msg)
	}
}

func TestSendErrors(t *testing.T) {
	a, f, s, _ := testAdapter(t, Config{})
	for _, id := range []string{"", "not a number", "+0123456", "abc@s.whatsapp.net", "status@broadcast", "123@newsletter", "1@2@3", "12345@g.us:x"} {
		_, err := a.Send(t.Context(), channel.Outbound{ChatID: id, Text: "x", IdempotencyKey: "k"})
		if !errors.Is(err, channel.ErrPermanent) {
			t.Errorf("chat id %q: %v", id, err)
		}
	}
	if _, err := a.Send(t.Context(), channel.Outbound{ChatID: alice.String(), IdempotencyKey: "k"}); !errors.Is(err, channel.ErrPermanent) {
		t.Errorf("empty message: %v", err)
	}

	f.sendErr = whatsmeow.ErrNotConnected
	if _, err := a.Send(t.Context(), channel.Outbound{ChatID: alice.String(), Text: "x"}); !errors.Is(err, channel.ErrNotConnected) || !errors.Is(err, whatsmeow.ErrNotConnected) {
		t.Errorf("whatsmeow not connected: %v", err)
	}
	f.sendErr = whatsmeow.ErrIQDisconnected
	if _, err := a.Send(t.Context(), channel.Outbound{ChatID: alice.String(), Text: "x"}); !errors.Is(err, channel.ErrNotConnected) {
		t.Errorf("disconnected mid-send: %v", err)
	}
	f.sendErr = errors.New("server returned error 500")
	if _, err := a.Send(t.Context(), channel.Outbound{ChatID: alice.String(), Text: "x"}); err == nil || errors.Is(err, channel.ErrPermanent) || errors.Is(err, channel.ErrNotConnected) {
		t.Errorf("server error: %v", err)
	}
	f.sendErr = nil

	f.connected = false
	if _, err := a.Send(t.Context(), channel.Outbound{ChatID: alice.String(), Text: "x"}); !errors.Is(err, channel.ErrNotConnected) {
		t.Errorf("reconnecting: %v", err)
	}
	a.detach(s)
	if _, err := a.Send(t.Context(), channel.Outbound{ChatID: alice.String(), Text: "x"}); !errors.Is(err, channel.ErrNotConnected) {
		t.Errorf("not running: %v", err)
	}
	if err := a.Typing(t.Context(), alice.String(), true); !errors.Is(err, channel.ErrNotConnected) {
		t.Errorf("typing not running: %v", err)
	}
}

func TestTypingAndReact(t *testing.T) {
	a, f, s, _ := testAdapter(t, Config{})
	if err := a.Typing(t.Context(), alice.String(), true); err != nil {
		t.Fatal(err)
	}
	if err := a.Typing(t.Context(), alice.String(), false); err != nil {
		t.Fatal(err)
	}
	if len(f.presence) != 2 || f.presence[0] != types.ChatPresenceComposing || f.presence[1] != types.ChatPresencePaused {
		t.Errorf("presence %v", f.presence)
	}
	a.handleEvent(s, inGroup("3A5Q", bobLID, bobPN, text("lunch?")))
	if err := a.React(t.Context(), group.String(), "3A5Q", "👍"); err != nil {
		t.Fatal(err)
	}
	rm := f.sentMsgs()[0].msg.GetReactionMessage()
	k := rm.GetKey()
	if rm.GetText() != "👍" || k.GetID() != "3A5Q" || k.GetFromMe() || k.GetParticipant() != bobLID.String() || k.GetRemoteJID() != group.String() {
		t.Errorf("reaction %v", rm)
	}
	if err := a.React(t.Context(), "nonsense", "3A5Q", "👍"); !errors.Is(err, channel.ErrPermanent) {
		t.Errorf("bad chat: %v", err)
	}
}

func TestParseChatID(t *testing.T) {
	good := map[string]string{
		"+15551234567":                  "15551234567@s.whatsapp.net",
		"15551234567":                   "15551234567@s.whatsapp.net",
		"+44 (20) 7946-0958":            "442079460958@s.whatsapp.net",
		"15551234567@s.whatsapp.net":    "15551234567@s.whatsapp.net",
		"15551234567:12@s.whatsapp.net": "15551234567@s.whatsapp.net",
		"15551234567@c.us":              "15551234567@s.whatsapp.net",
		"120363025246125486@g.us":       "120363025246125486@g.us",
		"88881234567@lid":               "88881234567@lid",
	}
	for in, want := range good {
		j, err := ParseChatID(in)
		if err != nil || j.String() != want {
			t.Errorf("ParseChatID(%q) = %v, %v; want %s", in, j, err, want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg Config
		key string
	}{
		{Config{MediaMaxMB: -1}, "mediaMaxMb"},
		{Config{MediaMaxMB: 5000}, "mediaMaxMb"},
		{Config{Common: channel.Common{DMPolicy: "everyone"}}, "dmPolicy"},
		{Config{Common: channel.Common{GroupPolicy: "any"}}, "groupPolicy"},
		{Config{Common: channel.Common{ChunkMode: "words"}}, "chunkMode"},
		{Config{Common: channel.Common{Groups: map[string]channel.Group{"family": {}}}}, "groups"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.key+":") {
			t.Errorf("%+v: %v, want the key %s named", tc.cfg, err, tc.key)
		}
	}
	ok := Config{Common: channel.Common{DMPolicy: "pairing", Groups: map[string]channel.Group{"*": {}, "120363025246125486@g.us": {}}}}
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
	a, err := New(Config{}, Deps{StorePath: filepath.Join(t.TempDir(), "x.db")})
	if err != nil {
		t.Fatal(err)
	}
	if a.MaxMediaBytes() != 50<<20 || a.Account() != "default" || a.Channel() != "whatsapp" {
		t.Errorf("defaults: %d %s %s", a.MaxMediaBytes(), a.Account(), a.Channel())
	}
	if _, err := New(Config{MediaMaxMB: -3}, Deps{StorePath: "x"}); err == nil || !strings.Contains(err.Error(), "mediaMaxMb") {
		t.Errorf("New with a bad config: %v", err)
	}
}

// key32 stands for the keys of real encrypted WhatsApp media.
var key32 = bytes.Repeat([]byte{7}, 32)

// TestDownloadOnlyWhatsAppMedia: a sender-written URL is never fetched and
// media without the keys of WhatsApp's encryption is not downloaded.
func TestDownloadOnlyWhatsAppMedia(t *testing.T) {
	for _, c := range []struct {
		name string
		msg  *waE2E.DocumentMessage
		ok   bool
	}{
		{"LAN URL, no keys", &waE2E.DocumentMessage{URL: proto.String("http://192.168.1.1/cfg")}, false},
		{"URL and path, no keys", &waE2E.DocumentMessage{URL: proto.String("http://10.0.0.1/"), DirectPath: proto.String("/v/x")}, false},
		{"short key", &waE2E.DocumentMessage{DirectPath: proto.String("/v/x"), MediaKey: []byte("k"), FileSHA256: key32, FileEncSHA256: key32}, false},
		{"real media with a LAN URL", &waE2E.DocumentMessage{URL: proto.String("http://192.168.1.1/cfg"), DirectPath: proto.String("/v/x"), MediaKey: key32, FileSHA256: key32, FileEncSHA256: key32}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dl, err := whatsAppHosted(c.msg)
			if (err == nil) != c.ok {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				return
			}
			if _, hasURL := dl.(interface{ GetURL() string }); hasURL {
				t.Fatal("the URL reaches whatsmeow")
			}
			if whatsmeow.GetMediaType(dl) != whatsmeow.MediaDocument || dl.GetDirectPath() != "/v/x" {
				t.Fatalf("media type %q path %q", whatsmeow.GetMediaType(dl), dl.GetDirectPath())
			}
		})
	}
}
