//go:build !nowhatsapp

package main

// The WhatsApp channel end to end: a real gateway (Main, in-process) with
// channels.whatsapp runs the real adapter on a real SQLite device store
// holding a linked device; only the connection to WhatsApp is fake
// (whatsapptest.Conn at the adapter's send interface, through
// whatsapp.Deps.Dial): WhatsApp's servers can be neither reached nor
// faithfully faked. Inbound messages are real whatsmeow *events.Message
// values with waE2E payloads, dispatched as whatsmeow would; replies are
// what the adapter handed the fake. The model is the loopback fake, which
// echoes ("echo: <text>").

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"
	"google.golang.org/protobuf/proto"

	"github.com/openclaw-edge/edge/cli/command"
	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/channel/whatsapp"
	"github.com/openclaw-edge/edge/engine/channel/whatsapp/whatsapptest"
	"github.com/openclaw-edge/edge/engine/prompt"
	"github.com/openclaw-edge/edge/models/openai/openaitest"
)

var (
	// The linked device: our number and LID.
	waSelf    = types.NewJID("15550000001", types.DefaultUserServer)
	waSelfLID = types.NewJID("99990000001", types.HiddenUserServer)
	// The owner (commands.ownerAllowFrom), writing from their phone.
	waOwner    = types.NewJID("15551234567", types.DefaultUserServer)
	waOwnerDev = types.JID{User: "15551234567", Device: 3, Server: types.DefaultUserServer}
	waStranger = types.NewJID("15559990000", types.DefaultUserServer)
	waGroup    = types.NewJID("120363000000000001", types.GroupServer)
	// A group member addressed by LID, as groups that hide numbers do; the
	// device store's LID map knows their number.
	waMemberLID = types.NewJID("88881234567", types.HiddenUserServer)
	waMemberPN  = types.NewJID("447700900123", types.DefaultUserServer)
)

// waGateway is a running gateway with the fake WhatsApp connection and
// the fake model.
type waGateway struct {
	t     *testing.T
	m     *Main
	cl    *client.Client
	conn  *whatsapptest.Conn
	model *openaitest.Server
	n     int
}

func init() {
	whatsappChild = func() {
		if err := whatsapp.ServeChild(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "openclaw-whatsapp:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// TestWhatsAppChildProcess: the production wiring runs WhatsApp in
// openclaw-whatsapp (here: this test binary under that name), a process
// of its own; an account with no linked device says so in the gateway's
// channel list, from the child.
func TestWhatsAppChildProcess(t *testing.T) {
	srv := openaitest.NewServer()
	defer srv.Close()
	m := startMain(t, `{
  models: { providers: { fake: { api: 'openai-completions', baseUrl: '`+srv.URL+`', models: [{ id: 'echo' }] } } },
  agents: { defaults: { model: 'fake/echo' } },
  channels: { whatsapp: {} },
}`)
	c := client.New(m.Socket)
	deadline := time.Now().Add(20 * time.Second)
	for {
		chs, err := c.Channels(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var st *api.ChannelStatus
		for i := range chs {
			if chs[i].Channel == "whatsapp" {
				st = &chs[i]
			}
		}
		if st != nil && st.State == string(channel.StateNotLinked) {
			if !strings.Contains(st.Reason, "login") {
				t.Errorf("reason %q does not say how to link", st.Reason)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("whatsapp never reported not-linked from its process: %+v", chs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func startWhatsAppGateway(t *testing.T) *waGateway {
	t.Helper()
	conn := whatsapptest.NewConn()
	orig, ok := channelKinds["whatsapp"]
	if !ok {
		t.Fatal("this build has no whatsapp channel")
	}
	// The production paths (store path, media dir …) plus the fake
	// connection, on a device store linked as waSelf — the adapter in
	// process (openclaw-whatsapp runs the same whatsapp.New; the process
	// boundary is engine/channel/channelproc's, tested there and in
	// TestWhatsAppChildProcess).
	kind := orig
	kind.open = func(c any, d chanDeps) (channel.Adapter, error) {
		deps := whatsapp.Deps{Account: d.Account, StorePath: whatsappStorePath(d), Store: d.Store, MediaDir: d.MediaDir, Logger: d.Logger, Now: d.Now}
		whatsapptest.LinkDevice(t, deps.StorePath, waSelf, waSelfLID, store.LIDMapping{LID: waMemberLID, PN: waMemberPN})
		deps.Dial = conn.Dial
		return whatsapp.New(*c.(*whatsapp.Config), deps)
	}
	channelKinds["whatsapp"] = kind
	t.Cleanup(func() { channelKinds["whatsapp"] = orig }) // after Main stopped: cleanups run last first

	model := openaitest.NewServer()
	t.Cleanup(model.Close)
	cfg := `{
  models: { providers: { fake: { api: 'openai-completions', baseUrl: '` + model.URL + `', models: [{ id: 'echo' }] } } },
  agents: { defaults: { model: 'fake/echo' } },
  commands: { ownerAllowFrom: ['whatsapp:+` + waOwner.User + `'] },
  channels: { whatsapp: {
    groups: { '` + waGroup.String() + `': {} },
  } },
}`
	g := &waGateway{t: t, conn: conn, model: model}
	g.m = startMainWith(t, cfg, nil)
	g.cl = client.New(g.m.Socket)
	conn.WaitConnected(t, 30*time.Second)
	g.waitChannel(func(st api.ChannelStatus) bool { return st.State == "linked" })
	return g
}

// event is a message event from sender in chat, with the next message id.
func (g *waGateway) event(chat, sender types.JID, name string, msg *waE2E.Message) *events.Message {
	g.n++
	return &events.Message{
		Info: types.MessageInfo{
			MessageSource: types.MessageSource{Chat: chat, Sender: sender, IsGroup: chat.Server == types.GroupServer},
			ID:            fmt.Sprintf("3EB0E2E%013X", g.n),
			PushName:      name,
			Timestamp:     time.Now().Truncate(time.Second),
		},
		Message: msg,
	}
}

func waText(s string) *waE2E.Message { return &waE2E.Message{Conversation: proto.String(s)} }

// deliver dispatches evt as whatsmeow would and waits until the gateway
// has handled it. The handler returns once the gateway recorded the
// message in its inbox (what acknowledges it to WhatsApp); the gateway
// deletes the inbox item once it has acted on it (answered — the reply
// queued —, kept as context, dropped, or a code sent).
func (g *waGateway) deliver(evt *events.Message) {
	g.t.Helper()
	if !g.conn.Dispatch(evt) {
		g.t.Fatalf("the adapter did not accept message %s", evt.Info.ID)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		left := 0
		if err := g.m.DB.ViewRecords(func(tx engine.RecordTx) error {
			return tx.ForEach("inbox", "", func(string, []byte) error { left++; return nil })
		}); err != nil {
			g.t.Fatal(err)
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("message %s not handled: %d inbox items left", evt.Info.ID, left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitSentTo waits for the n-th message to chat and returns it.
func (g *waGateway) waitSentTo(chat types.JID, n int) whatsapptest.Sent {
	g.t.Helper()
	g.conn.WaitSent(g.t, 20*time.Second, fmt.Sprintf("message #%d to %s", n, chat), func([]whatsapptest.Sent) bool {
		return len(g.conn.SentTo(chat)) >= n
	})
	return g.conn.SentTo(chat)[n-1]
}

// textsTo returns the texts sent to chat.
func (g *waGateway) textsTo(chat types.JID) []string {
	var out []string
	for _, s := range g.conn.SentTo(chat) {
		out = append(out, s.Text())
	}
	return out
}

// userMessages returns the last user message of each model request so
// far.
func (g *waGateway) userMessages() []string {
	g.t.Helper()
	return lastUserTexts(g.t, g.model.Requests())
}

// channel returns the whatsapp entry of client.Channels.
func (g *waGateway) channel() (api.ChannelStatus, bool) {
	list, err := g.cl.Channels(context.Background())
	if err != nil {
		g.t.Fatal(err)
	}
	for _, st := range list {
		if st.Channel == "whatsapp" {
			return st, true
		}
	}
	return api.ChannelStatus{}, false
}

// waitChannel waits until the whatsapp entry satisfies cond.
func (g *waGateway) waitChannel(cond func(api.ChannelStatus) bool) api.ChannelStatus {
	g.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, ok := g.channel()
		if ok && cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("whatsapp channel status: %+v (found %v)", st, ok)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// history returns the transcript entries of a session, as JSON text.
func (g *waGateway) history(key string) string {
	g.t.Helper()
	h, err := g.cl.History(context.Background(), key)
	if err != nil {
		g.t.Fatalf("history %s: %v", key, err)
	}
	var b strings.Builder
	for _, e := range h.Entries {
		b.Write(e)
		b.WriteByte('\n')
	}
	return b.String()
}

// cli runs the real openclaw CLI against the gateway and returns stdout.
func (g *waGateway) cli(args ...string) string {
	g.t.Helper()
	var stdout, stderr bytes.Buffer
	root := command.New(strings.NewReader(""), &stdout, &stderr)
	root.SetArgs(append([]string{"--socket", g.m.Socket}, args...))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := root.ExecuteContext(ctx); err != nil {
		g.t.Fatalf("openclaw %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

func TestWhatsAppEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	start := time.Now()
	g := startWhatsAppGateway(t)
	t.Logf("gateway up and whatsapp linked in %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range g.conn.Sent() {
				t.Logf("sent to %s: %q", s.To, s.Text())
			}
			t.Logf("model user messages: %q", g.userMessages())
		}
	})
	step := func(name string, f func(t *testing.T)) bool {
		s := time.Now()
		ok := t.Run(name, func(t *testing.T) {
			g.t = t
			f(t)
		})
		g.t = t
		t.Logf("%s: %s", name, time.Since(s).Round(time.Millisecond))
		return ok
	}

	if !step("owner DM answered in the main session", func(t *testing.T) {
		evt := g.event(waOwner, waOwnerDev, "Ann", waText("hello from the owner"))
		g.deliver(evt)
		got := g.waitSentTo(waOwner, 1)
		if got.Text() != "echo: hello from the owner" || got.To != waOwner {
			t.Errorf("reply to %s: %q", got.To, got.Text())
		}
		if n := len(g.model.Requests()); n != 1 {
			t.Errorf("%d model requests, want 1", n)
		}
		if h := g.history("agent:main:main"); !strings.Contains(h, "hello from the owner") || !strings.Contains(h, "echo: hello from the owner") {
			t.Errorf("agent:main:main does not hold the exchange:\n%s", h)
		}
		if r := g.conn.Reads(); len(r) != 1 || r[0].IDs[0] != evt.Info.ID || r[0].Chat != waOwner {
			t.Errorf("read receipts %+v", r)
		}
	}) {
		return
	}

	if !step("group: unmentioned kept as context, mention answered quoting it", func(t *testing.T) {
		before := len(g.model.Requests())
		g.deliver(g.event(waGroup, waMemberLID, "Bob", waText("what's for dinner tonight?")))
		if n := len(g.model.Requests()); n != before {
			t.Fatalf("an unmentioned group message reached the model (%d requests, was %d)", n, before)
		}
		if s := g.textsTo(waGroup); len(s) != 0 {
			t.Fatalf("an unmentioned group message was answered: %q", s)
		}
		mention := g.event(waGroup, waMemberLID, "Bob", &waE2E.Message{ExtendedTextMessage: &waE2E.ExtendedTextMessage{
			Text:        proto.String("@assistant any ideas?"),
			ContextInfo: &waE2E.ContextInfo{MentionedJID: []string{waSelf.String()}},
		}})
		g.deliver(mention)
		got := g.waitSentTo(waGroup, 1)
		if got.Text() != "echo: @assistant any ideas?" || got.Quoted() != mention.Info.ID {
			t.Errorf("group reply %q quoting %q, want the echo quoting %s", got.Text(), got.Quoted(), mention.Info.ID)
		}
		if p := got.Message.GetExtendedTextMessage().GetContextInfo().GetParticipant(); p != waMemberLID.String() {
			t.Errorf("the quote is attributed to %q, want %s", p, waMemberLID)
		}
		msgs := g.userMessages()
		if len(msgs) != before+1 {
			t.Fatalf("%d model requests, want %d", len(msgs), before+1)
		}
		user := msgs[len(msgs)-1]
		// The sender is named by number: the device store's LID map.
		for _, want := range []string{prompt.HistoryHeader, "what's for dinner tonight?", "@assistant any ideas?", "+" + waMemberPN.User} {
			if !strings.Contains(user, want) {
				t.Errorf("the model's user message lacks %q:\n%s", want, user)
			}
		}
		if h := g.history("agent:main:whatsapp:group:" + waGroup.String()); !strings.Contains(h, "any ideas?") {
			t.Errorf("the group session does not hold the turn:\n%s", h)
		}
	}) {
		return
	}

	if !step("unknown sender: one pairing code, nothing reaches the model until approved", func(t *testing.T) {
		before := len(g.model.Requests())
		ownerBefore := len(g.conn.SentTo(waOwner))
		g.deliver(g.event(waStranger, waStranger, "Zed", waText("hi, who are you? secret-one")))
		g.deliver(g.event(waStranger, waStranger, "Zed", waText("hello?? secret-two")))
		g.waitSentTo(waStranger, 1) // the code goes out through the outbox, after the message is handled
		sent := g.textsTo(waStranger)
		if len(sent) != 1 {
			t.Fatalf("%d messages to the unknown sender, want 1 (the code): %q", len(sent), sent)
		}
		m := regexp.MustCompile(`pairing code is ([A-Z2-9]{8})\b`).FindStringSubmatch(sent[0])
		if m == nil {
			t.Fatalf("no pairing code in %q", sent[0])
		}
		code := m[1]
		// The owner hears of it in their WhatsApp chat.
		if note := g.waitSentTo(waOwner, ownerBefore+1); !strings.Contains(note.Text(), "openclaw pairing approve whatsapp "+code) {
			t.Errorf("owner note %q", note.Text())
		}
		if n := len(g.model.Requests()); n != before {
			t.Fatalf("a pending sender reached the model (%d requests, was %d)", n, before)
		}
		req, err := g.cl.PairingDecide(context.Background(), "whatsapp", code, true)
		if err != nil || req.SenderID != "+"+waStranger.User {
			t.Fatalf("approve: %+v %v", req, err)
		}
		if got := g.waitSentTo(waStranger, 2); !strings.Contains(got.Text(), "approved") {
			t.Errorf("notice after approval %q", got.Text())
		}
		g.deliver(g.event(waStranger, waStranger, "Zed", waText("thanks!")))
		if got := g.waitSentTo(waStranger, 3); got.Text() != "echo: thanks!" {
			t.Errorf("reply after approval %q", got.Text())
		}
		msgs := g.userMessages()
		if len(msgs) != before+1 {
			t.Fatalf("%d model requests, want %d", len(msgs), before+1)
		}
		for _, u := range msgs {
			if strings.Contains(u, "secret-one") || strings.Contains(u, "secret-two") {
				t.Errorf("a message sent before approval reached the model:\n%s", u)
			}
		}
	}) {
		return
	}

	if !step("a message delivered twice is answered once", func(t *testing.T) {
		before := len(g.model.Requests())
		n := len(g.conn.SentTo(waOwner))
		evt := g.event(waOwner, waOwnerDev, "Ann", waText("say this once"))
		g.deliver(evt)
		again := *evt // WhatsApp redelivering the same message (same id)
		g.deliver(&again)
		g.deliver(g.event(waOwner, waOwnerDev, "Ann", waText("and this after")))
		g.waitSentTo(waOwner, n+2)
		time.Sleep(300 * time.Millisecond) // a second answer would be queued by now
		count := 0
		for _, s := range g.textsTo(waOwner)[n:] {
			if s == "echo: say this once" {
				count++
			}
		}
		if count != 1 {
			t.Errorf("the repeated message was answered %d times: %q", count, g.textsTo(waOwner)[n:])
		}
		if got := len(g.model.Requests()) - before; got != 2 {
			t.Errorf("%d model requests, want 2", got)
		}
	}) {
		return
	}

	if !step("a failed send is retried and sent once; channels list shows the outbox", func(t *testing.T) {
		n := len(g.conn.SentTo(waOwner))
		failedBefore := g.conn.Failed()
		g.conn.FailSends(errors.New("whatsapptest: websocket closed"))
		g.deliver(g.event(waOwner, waOwnerDev, "Ann", waText("are you there?")))
		st := g.waitChannel(func(st api.ChannelStatus) bool {
			return st.OutboxPending == 1 && g.conn.Failed() > failedBefore
		})
		if st.State != "linked" || st.OutboxDead != 0 {
			t.Errorf("while the reply waits: %+v", st)
		}
		g.conn.FailSends(nil)
		got := g.waitSentTo(waOwner, n+1)
		if got.Text() != "echo: are you there?" {
			t.Errorf("retried reply %q", got.Text())
		}
		g.waitChannel(func(st api.ChannelStatus) bool { return st.OutboxPending == 0 })
		time.Sleep(300 * time.Millisecond) // a second send would be on its way
		if s := g.textsTo(waOwner)[n:]; len(s) != 1 {
			t.Errorf("sent %d times: %q", len(s), s)
		}

		out := g.cli("channels", "list", "--json")
		var list []api.ChannelStatus
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("channels list --json: %v\n%s", err, out)
		}
		if len(list) != 1 {
			t.Fatalf("channels list --json: %+v", list)
		}
		wa := list[0]
		if wa.Channel != "whatsapp" || wa.Account != "default" || wa.State != "linked" || wa.Self != "+"+waSelf.User ||
			wa.DMPolicy != "pairing" || wa.GroupPolicy != "allowlist" || wa.OutboxPending != 0 || wa.OutboxDead != 0 ||
			wa.LastInbound.IsZero() || wa.LastOutbound.IsZero() || wa.Restarts != 0 {
			t.Errorf("channels list --json: %+v", wa)
		}
	}) {
		return
	}

	step("an image with a caption arrives as text, the image downloaded", func(t *testing.T) {
		jpeg := append([]byte{0xFF, 0xD8, 0xFF, 0xE0}, bytes.Repeat([]byte("pixels"), 2000)...)
		g.conn.SetMedia(jpeg)
		n := len(g.conn.SentTo(waOwner))
		evt := g.event(waOwner, waOwnerDev, "Ann", &waE2E.Message{ImageMessage: &waE2E.ImageMessage{
			Caption:       proto.String("look at this receipt"),
			Mimetype:      proto.String("image/jpeg"),
			FileLength:    proto.Uint64(uint64(len(jpeg))),
			URL:           proto.String("https://mmg.whatsapp.net/v/t62.7118-24/e2e.enc"),
			DirectPath:    proto.String("/v/t62.7118-24/e2e.enc"),
			MediaKey:      bytes.Repeat([]byte{1}, 32),
			FileSHA256:    bytes.Repeat([]byte{2}, 32),
			FileEncSHA256: bytes.Repeat([]byte{3}, 32),
		}})
		g.deliver(evt)
		if got := g.waitSentTo(waOwner, n+1); got.Text() != "echo: look at this receipt" {
			t.Errorf("reply to the image %q", got.Text())
		}
		if g.conn.Downloads() != 1 {
			t.Errorf("%d downloads, want 1", g.conn.Downloads())
		}
		path := filepath.Join(g.m.StateDir, "channels", "whatsapp", "media", "default", "wa-"+evt.Info.ID+".jpg")
		if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, jpeg) {
			t.Errorf("the downloaded image %s: %d bytes, %v", path, len(b), err)
		}
		msgs := g.userMessages()
		user := msgs[len(msgs)-1]
		if !strings.Contains(user, "look at this receipt") || !strings.Contains(user, path) {
			t.Errorf("the model's user message lacks the caption or the attachment %s:\n%s", path, user)
		}
	})

	if d := g.conn.Dials(); d != 1 {
		t.Errorf("the adapter dialled %d times, want once (no restarts)", d)
	}
	t.Logf("whatsapp end to end: %d messages sent in %s", len(g.conn.Sent()), time.Since(start).Round(time.Millisecond))
}
