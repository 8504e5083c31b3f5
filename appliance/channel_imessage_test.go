//go:build !noimessage

package main

// The iMessage channel end to end: a real gateway (Main, in-process) runs
// the imessage adapter against imsgtest's fake `imsg rpc` (this test
// binary, re-executed) and the loopback fake model, which echoes
// ("echo: <text>"). Inbound messages go into the fake's Messages database;
// what the gateway sends comes back from the fake's record of `send`
// requests; the real `openclaw` CLI (cli/command, in-process) lists
// channels and approves pairing.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/cli/command"
	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/channel/imessage/imsgtest"
	"github.com/openclaw-edge/edge/engine/inbound"
	"github.com/openclaw-edge/edge/models/openai/openaitest"
)

// TestMain (e2e_test.go) belongs to the testscript commands; the fake imsg
// hooks in before it: a test binary re-executed by the fake's wrapper
// script serves imsg and exits here.
func init() { imsgtest.Main() }

const (
	imOwner       = "+15551234567"
	imOwnerChat   = 7
	imStranger    = "+15559990000"
	imStrangerCh  = 8
	imGroup       = 42
	imGroupMember = "+15550000002"
)

// imGateway is a running gateway with the fake imsg and model.
type imGateway struct {
	t     *testing.T
	m     *Main
	imsg  *imsgtest.Fake
	model *openaitest.Server
	rowid int64
}

func startIMessageGateway(t *testing.T) *imGateway {
	t.Helper()
	// Redeliver: after a restart the fake repeats what it sent before, as
	// imsg's at-least-once watch may; none of it may reach the model again.
	f := imsgtest.New(t, imsgtest.Config{Redeliver: 3})
	model := openaitest.NewServer()
	t.Cleanup(model.Close)
	cfg := `{
  models: { providers: { fake: { api: 'openai-completions', baseUrl: '` + model.URL + `', models: [{ id: 'echo' }] } } },
  agents: { defaults: { model: 'fake/echo' } },
  commands: { ownerAllowFrom: ['imessage:` + imOwner + `'] },
  messages: { groupChat: { mentionPatterns: ['\\bclaw\\b'] } },
  channels: { imessage: {
    cliPath: '` + f.Path + `',
    dbPath: '/Users/me/Library/Messages/chat.db',
    groups: { '` + fmt.Sprint(imGroup) + `': {} },
  } },
}`
	g := &imGateway{t: t, imsg: f, model: model}
	g.m = startMainWith(t, cfg, nil)
	g.waitLinked(0)
	return g
}

// add puts message m into the fake's database with the next rowid and
// returns that rowid.
func (g *imGateway) add(m func(rowid int64) map[string]any) int64 {
	g.rowid++
	g.imsg.Add(m(g.rowid))
	return g.rowid
}

func (g *imGateway) dm(chat int64, sender, text string) int64 {
	return g.add(func(r int64) map[string]any { return imsgtest.DM(r, chat, sender, text) })
}

func (g *imGateway) group(sender, text string) int64 {
	return g.add(func(r int64) map[string]any { return imsgtest.GroupMessage(r, imGroup, sender, text) })
}

// waitHandled waits until the gateway has handled the message of rowid:
// the adapter saves its cursor only after the gateway recorded the message
// in its inbox, and the gateway deletes an inbox item once it has acted on
// it (answered, kept as context, dropped, or queued a reply).
func (g *imGateway) waitHandled(rowid int64) {
	g.t.Helper()
	store := inbound.ChannelStore(g.m.DB, "imessage", "default")
	deadline := time.Now().Add(20 * time.Second)
	for {
		var cur struct {
			Rowid int64 `json:"rowid"`
		}
		_, err := store.Get("imsg.cursor", &cur) // the adapter's key (imessage package doc)
		if err != nil {
			g.t.Fatal(err)
		}
		left := 0
		if err := g.m.DB.ViewRecords(func(tx engine.RecordTx) error {
			return tx.ForEach("inbox", "", func(string, []byte) error { left++; return nil })
		}); err != nil {
			g.t.Fatal(err)
		}
		if cur.Rowid >= rowid && left == 0 {
			return
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("message %d not handled: cursor %d, %d inbox items left", rowid, cur.Rowid, left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sendsTo returns the sends to a chat_id (float64 as JSON decodes it) or
// to a handle.
func (g *imGateway) sendsTo(target any) []map[string]any {
	var out []map[string]any
	for _, s := range g.imsg.Sends() {
		if s["chat_id"] == target || s["to"] == target {
			out = append(out, s)
		}
	}
	return out
}

// waitSendTo waits for the n-th send to target and returns it.
func (g *imGateway) waitSendTo(target any, n int) map[string]any {
	g.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if s := g.sendsTo(target); len(s) >= n {
			return s[n-1]
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("no send #%d to %v; all sends: %v", n, target, g.imsg.Sends())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// userMessages returns the text of the last user message of each model
// request so far.
func (g *imGateway) userMessages() []string {
	g.t.Helper()
	return lastUserTexts(g.t, g.model.Requests())
}

// cli runs the real openclaw CLI against the gateway and returns stdout.
func (g *imGateway) cli(args ...string) string {
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

// channelsList is `openclaw channels list --json`.
func (g *imGateway) channelsList() []api.ChannelStatus {
	g.t.Helper()
	out := g.cli("channels", "list", "--json")
	var list []api.ChannelStatus
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		g.t.Fatalf("channels list --json: %v\n%s", err, out)
	}
	return list
}

// waitLinked waits until channels list shows imessage linked after at
// least restarts restarts, and returns its entry.
func (g *imGateway) waitLinked(restarts int) api.ChannelStatus {
	g.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last []api.ChannelStatus
	for {
		last = g.channelsList()
		for _, c := range last {
			if c.Channel == "imessage" && c.State == "linked" && c.Restarts >= restarts {
				return c
			}
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("imessage not linked (restarts ≥ %d): %+v", restarts, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestIMessageEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	g := startIMessageGateway(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sends: %v", g.imsg.Sends())
			t.Logf("model user messages: %q", g.userMessages())
		}
	})

	if !t.Run("owner DM answered in its chat", func(t *testing.T) {
		g.t = t
		g.dm(imOwnerChat, imOwner, "hello")
		got := g.waitSendTo(float64(imOwnerChat), 1)
		want := map[string]any{"method": "send", "chat_id": float64(imOwnerChat), "text": "echo: hello"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("reply = %v, want %v", got, want)
		}
		if n := len(g.model.Requests()); n != 1 {
			t.Errorf("%d model requests, want 1", n)
		}
	}) {
		return
	}

	if !t.Run("group: unmentioned kept as context, mention answered", func(t *testing.T) {
		g.t = t
		before := len(g.model.Requests())
		quiet := g.group(imGroupMember, "what's for dinner tonight?")
		g.waitHandled(quiet)
		if n := len(g.model.Requests()); n != before {
			t.Fatalf("an unmentioned group message called the model (%d requests, was %d)", n, before)
		}
		if s := g.sendsTo(float64(imGroup)); len(s) != 0 {
			t.Fatalf("an unmentioned group message was answered: %v", s)
		}
		// "clawed" is no mention: the pattern is \bclaw\b.
		quiet2 := g.group(imGroupMember, "the cat clawed the sofa")
		g.waitHandled(quiet2)
		g.group(imGroupMember, "Claw, any ideas?")
		got := g.waitSendTo(float64(imGroup), 1)
		if got["text"] != "echo: Claw, any ideas?" || got["to"] != nil || got["method"] != "send" {
			t.Errorf("group reply = %v", got)
		}
		msgs := g.userMessages()
		if len(msgs) != before+1 {
			t.Fatalf("%d model requests, want %d", len(msgs), before+1)
		}
		user := msgs[len(msgs)-1]
		for _, want := range []string{"what's for dinner tonight?", "the cat clawed the sofa", "Claw, any ideas?", "Chat messages since your last reply"} {
			if !strings.Contains(user, want) {
				t.Errorf("the model's user message lacks %q:\n%s", want, user)
			}
		}
	}) {
		return
	}

	var code string
	if !t.Run("unknown sender: one pairing code, nothing reaches the model until approved", func(t *testing.T) {
		g.t = t
		before := len(g.model.Requests())
		first := g.dm(imStrangerCh, imStranger, "hi, who are you? secret-one")
		g.waitHandled(first)
		second := g.dm(imStrangerCh, imStranger, "hello?? secret-two")
		g.waitHandled(second)
		g.waitSendTo(float64(imStrangerCh), 1) // the code goes out through the outbox, after the message is handled
		sends := g.sendsTo(float64(imStrangerCh))
		if len(sends) != 1 {
			t.Fatalf("%d replies to the unknown sender, want 1 (the code): %v", len(sends), sends)
		}
		m := regexp.MustCompile(`pairing code is ([A-Z2-9]{8})\b`).FindStringSubmatch(fmt.Sprint(sends[0]["text"]))
		if m == nil {
			t.Fatalf("no pairing code in %q", sends[0]["text"])
		}
		code = m[1]
		// The owner hears of it on their handle.
		note := g.waitSendTo(imOwner, 1)
		if !strings.Contains(fmt.Sprint(note["text"]), "openclaw pairing approve imessage "+code) {
			t.Errorf("owner note = %v", note)
		}
		if n := len(g.model.Requests()); n != before {
			t.Fatalf("a pending sender reached the model (%d requests, was %d)", n, before)
		}
		var pending []api.PairingRequest
		if err := json.Unmarshal([]byte(g.cli("pairing", "list", "imessage", "--json")), &pending); err != nil {
			t.Fatal(err)
		}
		if len(pending) != 1 || pending[0].Code != code || pending[0].SenderID != imStranger || pending[0].Channel != "imessage" {
			t.Fatalf("pairing list = %+v", pending)
		}
		if out := g.cli("pairing", "approve", "imessage", code); !strings.Contains(out, "Approved "+imStranger) {
			t.Errorf("pairing approve printed %q", out)
		}
		// Approval tells them so, then they are answered.
		if got := g.waitSendTo(float64(imStrangerCh), 2); !strings.Contains(fmt.Sprint(got["text"]), "approved") {
			t.Errorf("notice after approval = %v", got)
		}
		g.dm(imStrangerCh, imStranger, "thanks!")
		got := g.waitSendTo(float64(imStrangerCh), 3)
		if got["text"] != "echo: thanks!" {
			t.Errorf("reply after approval = %v", got)
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

	if !t.Run("non-owner /approve refused", func(t *testing.T) {
		g.t = t
		before := len(g.model.Requests())
		n := len(g.sendsTo(float64(imStrangerCh)))
		g.dm(imStrangerCh, imStranger, "/approve x")
		got := g.waitSendTo(float64(imStrangerCh), n+1)
		if !strings.Contains(fmt.Sprint(got["text"]), "Only the owner") {
			t.Errorf("reply to a non-owner's /approve = %v", got)
		}
		if len(g.model.Requests()) != before {
			t.Error("/approve from a non-owner reached the model")
		}
	}) {
		return
	}

	if !t.Run("imsg killed: restarted, nothing replayed", func(t *testing.T) {
		g.t = t
		g.waitHandled(g.rowid)
		before := len(g.model.Requests())
		sendsBefore := len(g.imsg.Sends())
		subs := len(g.imsg.Requests("watch.subscribe"))
		killed := g.imsg.Kill()
		st := g.waitLinked(1)
		if pid := g.imsg.PID(); pid == killed {
			t.Fatalf("linked, but imsg was not restarted (pid %d)", pid)
		}
		if st.Restarts < 1 {
			t.Errorf("status after the restart: %+v", st)
		}
		s := g.imsg.Requests("watch.subscribe")
		if len(s) != subs+1 || s[len(s)-1]["since_rowid"] != float64(g.rowid) {
			t.Errorf("resubscribed with %v, want since_rowid %d", s[len(s)-1:], g.rowid)
		}
		g.dm(imOwnerChat, imOwner, "still there?")
		got := g.waitSendTo(float64(imOwnerChat), 2)
		if got["text"] != "echo: still there?" {
			t.Errorf("reply after the restart = %v", got)
		}
		msgs := g.userMessages()
		if len(msgs) != before+1 {
			t.Errorf("%d model requests after the restart, want %d (old messages replayed?): %q", len(msgs), before+1, msgs[before:])
		}
		if n := len(g.imsg.Sends()); n != sendsBefore+1 {
			t.Errorf("%d sends after the restart, want 1: %v", n-sendsBefore, g.imsg.Sends()[sendsBefore:])
		}
	}) {
		return
	}

	t.Run("channels list and message send", func(t *testing.T) {
		g.t = t
		// The last reply was seen by imsg, but its outbox item is marked
		// sent just after the send returns: poll until it settles.
		var im *api.ChannelStatus
		var list []api.ChannelStatus
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			im, list = nil, g.channelsList()
			for i := range list {
				if list[i].Channel == "imessage" {
					im = &list[i]
				}
			}
			if im == nil || im.OutboxPending == 0 || time.Now().After(deadline) {
				break
			}
		}
		if im == nil || len(list) != 1 {
			t.Fatalf("channels list --json = %+v", list)
		}
		if im.Account != "default" || im.State != "linked" || im.DMPolicy != "pairing" || im.GroupPolicy != "allowlist" ||
			im.LastInbound.IsZero() || im.LastOutbound.IsZero() || im.OutboxPending != 0 || im.OutboxDead != 0 {
			t.Errorf("imessage entry = %+v", *im)
		}
		if out := g.cli("channels", "list"); !regexp.MustCompile(`(?m)^imessage\s+default\s+linked\s`).MatchString(out) {
			t.Errorf("channels list:\n%s", out)
		}
		g.cli("message", "send", "--channel", "imessage", "--target", "friend@example.com", "--message", "dinner's ready")
		got := g.waitSendTo("friend@example.com", 1)
		if want := (map[string]any{"method": "send", "to": "friend@example.com", "text": "dinner's ready"}); !reflect.DeepEqual(got, want) {
			t.Errorf("message send = %v, want %v", got, want)
		}
	})
}
