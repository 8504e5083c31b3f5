package imessage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/openclaw-edge/edge/engine/channel/bluebubbles"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/channel/channeltest"
)

func dm(id int64, sender, text string) map[string]any {
	return map[string]any{
		"id": id, "chat_id": 7, "chat_identifier": sender, "chat_guid": "iMessage;-;" + sender,
		"chat_name": "", "participants": []string{sender}, "is_group": false,
		"guid": fmt.Sprintf("GUID-%d", id), "sender": sender, "sender_name": "Ann",
		"is_from_me": false, "text": text, "created_at": "2026-01-02T03:04:05.678Z", "attachments": []any{},
	}
}

func groupMsg(id int64, sender, text string) map[string]any {
	m := dm(id, sender, text)
	m["chat_id"] = 42
	m["chat_identifier"] = "chat123456"
	m["chat_guid"] = "iMessage;+;chat123456"
	m["chat_name"] = "Family"
	m["participants"] = []string{sender, "+15550000002"}
	m["is_group"] = true
	m["reply_to_guid"] = "GUID-1"
	return m
}

type running struct {
	a      *Adapter
	in     *channeltest.Inbox
	fail   atomic.Pointer[error] // when set, Deliver fails with it
	store  *channeltest.Store
	cancel context.CancelFunc
	done   chan error
}

func newAdapter(t *testing.T, cfg Config, store *channeltest.Store) *Adapter {
	t.Helper()
	a, err := New(cfg, Deps{Store: store, MediaDir: filepath.Join(t.TempDir(), "media")})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// start runs a until it is linked.
func start(t *testing.T, a *Adapter, store *channeltest.Store) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{a: a, in: channeltest.NewInbox(), store: store, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx, gate{r}) }()
	t.Cleanup(func() { r.stop(t) })
	deadline := time.Now().Add(15 * time.Second)
	for a.Status().State != channel.StateLinked {
		select {
		case err := <-r.done:
			t.Fatalf("Run returned before linking: %v (status %+v)", err, a.Status())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not linked: %+v", a.Status())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return r
}

// stop cancels Run and returns its result (nil if it already returned and
// was collected).
func (r *running) stop(t *testing.T) error {
	t.Helper()
	if r.cancel == nil {
		return nil
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
		return nil
	}
}

// gate is the Inbox Run gets: it fails while r.fail is set.
type gate struct{ r *running }

func (g gate) Deliver(ctx context.Context, m engine.Inbound) error {
	if err := g.r.fail.Load(); err != nil {
		return *err
	}
	return g.r.in.Deliver(ctx, m)
}

func (r *running) next(t *testing.T) engine.Inbound {
	t.Helper()
	m, ok := r.in.Next(10 * time.Second)
	if !ok {
		t.Fatal("no message delivered")
	}
	return m
}

func (r *running) cursor(t *testing.T) int64 {
	t.Helper()
	var c cursorRecord
	if _, err := r.store.Get(cursorKey, &c); err != nil {
		t.Fatal(err)
	}
	return c.Rowid
}

// waitCursor waits for the cursor to reach want (it is saved just after
// Deliver returns) and returns it.
func (r *running) waitCursor(t *testing.T, want int64) int64 {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := r.cursor(t)
		if c >= want || time.Now().After(deadline) {
			return c
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestReceiveDirectAndGroup(t *testing.T) {
	f := newFakeIMsg(t, fakeConfig{})
	store := channeltest.NewStore()
	r := start(t, newAdapter(t, Config{CLIPath: f.wrapper, DBPath: "/Users/me/Library/Messages/chat.db"}, store), store)

	f.add(dm(1, "+15551234567", "hello"))
	got := r.next(t)
	want := engine.Inbound{
		Channel: "imessage", Account: "default", ChatID: "7", ChatType: engine.ChatDirect,
		SenderID: "+15551234567", SenderName: "Ann", MessageID: "GUID-1", Text: "hello",
		Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("direct:\n got %+v\nwant %+v", got, want)
	}

	echo := dm(2, "+15551234567", "my own reply")
	echo["is_from_me"] = true
	echo["sender"] = ""
	f.add(echo, groupMsg(3, "Bob@Example.COM", "hi all"))
	got = r.next(t)
	if got.MessageID != "GUID-3" {
		t.Fatalf("is_from_me echo was delivered: %+v", got)
	}
	if got.ChatType != engine.ChatGroup || got.ChatID != "42" || got.SenderID != "Bob@Example.COM" || got.ReplyTo != "GUID-1" || got.Text != "hi all" {
		t.Errorf("group: %+v", got)
	}
	if c := r.waitCursor(t, 3); c != 3 {
		t.Errorf("cursor = %d, want 3", c)
	}
	if n := len(r.in.Messages()); n != 2 {
		t.Errorf("%d messages delivered, want 2", n)
	}
	if st := r.a.Status(); st.LastInbound.IsZero() || st.State != channel.StateLinked {
		t.Errorf("status %+v", st)
	}
	// argv: rpc --db <dbPath>; subscribe without since_rowid (first run:
	// the tail) and without attachments (not asked for).
	b, _ := os.ReadFile(filepath.Join(f.dir, "argv.jsonl"))
	if strings.TrimSpace(string(b)) != `["rpc","--db","/Users/me/Library/Messages/chat.db"]` {
		t.Errorf("argv = %s", b)
	}
	if subs := f.requests("watch.subscribe"); len(subs) != 1 || len(subs[0]) != 0 {
		t.Errorf("watch.subscribe params = %v, want {}", subs)
	}
	if err := r.stop(t); err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
	if st := r.a.Status(); st.State != channel.StateStopped {
		t.Errorf("status after stop %+v", st)
	}
}

func TestNoHistoryOnFirstRun(t *testing.T) {
	f := newFakeIMsg(t, fakeConfig{})
	f.add(dm(1, "+15551234567", "old"), dm(2, "+15551234567", "older"))
	store := channeltest.NewStore()
	r := start(t, newAdapter(t, Config{CLIPath: f.wrapper}, store), store)
	f.add(dm(3, "+15551234567", "new"))
	if got := r.next(t); got.MessageID != "GUID-3" {
		t.Errorf("first delivered %s, want GUID-3 (history replayed)", got.MessageID)
	}
	if n := len(r.in.Messages()); n != 1 {
		t.Errorf("%d delivered", n)
	}
}

func TestKilledRunResumesFromCursor(t *testing.T) {
	f := newFakeIMsg(t, fakeConfig{})
	store := channeltest.NewStore()
	a := newAdapter(t, Config{CLIPath: f.wrapper}, store)
	r := start(t, a, store)
	f.add(dm(1, "+15551234567", "one"))
	r.next(t)
	r.waitCursor(t, 1)
	pid := f.pid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-r.done:
		if err == nil {
			t.Fatal("Run returned nil after imsg was killed")
		}
		if !strings.Contains(err.Error(), "stderr: fake imsg: ready") {
			t.Errorf("Run error %q lacks imsg's stderr", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after imsg was killed")
	}
	r.cancel()
	r.cancel = nil
	if st := a.Status(); st.State != channel.StateError || st.Reason == "" {
		t.Errorf("status after kill: %+v", st)
	}
	if _, err := a.Send(context.Background(), channel.Outbound{ChatID: "7", Text: "x"}); !errors.Is(err, channel.ErrNotConnected) {
		t.Errorf("Send while down = %v, want ErrNotConnected", err)
	}

	f.add(dm(2, "+15551234567", "while down"))
	r2 := start(t, a, store)
	f.add(dm(3, "+15551234567", "after"))
	if got := r2.next(t); got.MessageID != "GUID-2" {
		t.Errorf("after restart got %s, want GUID-2", got.MessageID)
	}
	if got := r2.next(t); got.MessageID != "GUID-3" {
		t.Errorf("then %s, want GUID-3", got.MessageID)
	}
	if n := len(r2.in.Messages()); n != 2 {
		t.Errorf("%d delivered after restart, want 2 (GUID-1 replayed?)", n)
	}
	subs := f.requests("watch.subscribe")
	if len(subs) != 2 || subs[1]["since_rowid"] != float64(1) {
		t.Errorf("subscribes = %v, want the second with since_rowid 1", subs)
	}
}

func TestDeliverErrorKeepsCursor(t *testing.T) {
	f := newFakeIMsg(t, fakeConfig{})
	store := channeltest.NewStore()
	a := newAdapter(t, Config{CLIPath: f.wrapper}, store)
	r := start(t, a, store)
	f.add(dm(1, "+15551234567", "one"))
	r.next(t)
	r.waitCursor(t, 1)
	diskFull := errors.New("disk full")
	r.fail.Store(&diskFull)
	f.add(dm(2, "+15551234567", "two"))
	select {
	case err := <-r.done:
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not fail on a Deliver error")
	}
	r.cancel()
	r.cancel = nil
	if c := r.cursor(t); c != 1 {
		t.Fatalf("cursor advanced to %d past an undelivered message", c)
	}
	r2 := start(t, a, store)
	if got := r2.next(t); got.MessageID != "GUID-2" {
		t.Errorf("redelivered %s, want GUID-2", got.MessageID)
	}
}

func TestCancelStopsChild(t *testing.T) {
	f := newFakeIMsg(t, fakeConfig{})
	store := channeltest.NewStore()
	r := start(t, newAdapter(t, Config{CLIPath: f.wrapper}, store), store)
	pid := f.pid()
	if err := r.stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	// Run waits for the child; it has been reaped, so the pid is gone.
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("imsg (pid %d) still exists after cancel: %v", pid, err)
	}
}

func TestDefaultCLIPathFromPATH(t *testing.T) {
	f := newFakeIMsg(t, fakeConfig{NoInitialize: true})
	t.Setenv("PATH", f.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	store := channeltest.NewStore()
	r := start(t, newAdapter(t, Config{}, store), store)
	// An imsg without initialize is probed with chats.list.
	if got := f.requests("chats.list"); len(got) != 1 || got[0]["limit"] != float64(1) {
		t.Errorf("chats.list probe = %v", got)
	}
	f.add(dm(1, "USER@ICLOUD.COM", "hi"))
	if got := r.next(t); got.SenderID != "USER@ICLOUD.COM" { // as sent: access compares
		t.Errorf("sender %q", got.SenderID)
	}
}

func TestDatabaseNotReady(t *testing.T) {
	f := newFakeIMsg(t, fakeConfig{DBNotReady: true})
	a := newAdapter(t, Config{CLIPath: f.wrapper}, channeltest.NewStore())
	err := a.Run(context.Background(), channeltest.NewInbox())
	if err == nil {
		t.Fatal("Run succeeded without a database")
	}
	st := a.Status()
	if st.State != channel.StateError || !strings.Contains(st.Reason, "Full Disk Access") {
		t.Errorf("status %+v", st)
	}
}

func TestMissingBinary(t *testing.T) {
	a := newAdapter(t, Config{CLIPath: filepath.Join(t.TempDir(), "nope")}, channeltest.NewStore())
	if err := a.Run(context.Background(), channeltest.NewInbox()); err == nil {
		t.Fatal("Run succeeded without imsg")
	}
	if st := a.Status(); st.State != channel.StateError || st.Reason == "" {
		t.Errorf("status %+v", st)
	}
}

func TestSendTargets(t *testing.T) {
	f := newFakeIMsg(t, fakeConfig{})
	store := channeltest.NewStore()
	r := start(t, newAdapter(t, Config{CLIPath: f.wrapper, Service: "iMessage", Region: "DE"}, store), store)
	ctx := context.Background()
	cases := []struct {
		chatID string
		want   map[string]any
	}{
		{"+15551234567", map[string]any{"to": "+15551234567", "service": "imessage", "region": "DE"}},
		{"42", map[string]any{"chat_id": float64(42), "service": "imessage", "region": "DE"}},
		{"chat_id:43", map[string]any{"chat_id": float64(43), "service": "imessage", "region": "DE"}},
		{"chat_guid:iMessage;+;chat1", map[string]any{"chat_guid": "iMessage;+;chat1", "service": "imessage", "region": "DE"}},
		{"chat_identifier:chat1", map[string]any{"chat_identifier": "chat1", "service": "imessage", "region": "DE"}},
		{"sms:+15550001111", map[string]any{"to": "+15550001111", "service": "sms", "region": "DE"}},
		{"ann@example.com", map[string]any{"to": "ann@example.com", "service": "imessage", "region": "DE"}},
	}
	for i, c := range cases {
		rc, err := r.a.Send(ctx, channel.Outbound{Channel: "imessage", ChatID: c.chatID, Text: "hi " + c.chatID, IdempotencyKey: "k" + strconv.Itoa(i)})
		if err != nil {
			t.Fatalf("Send %s: %v", c.chatID, err)
		}
		if !strings.HasPrefix(rc.MessageID, "SENT-") || rc.SentAt.IsZero() {
			t.Errorf("receipt %+v", rc)
		}
		sends := f.sends()
		got := sends[len(sends)-1]
		c.want["method"] = "send"
		c.want["text"] = "hi " + c.chatID
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Send %s:\n got %v\nwant %v", c.chatID, got, c.want)
		}
	}
	for _, bad := range []string{"", "chat_id:x", "chat_id:-1", "0", "chat_guid:"} {
		if _, err := r.a.Send(ctx, channel.Outbound{ChatID: bad, Text: "x"}); !errors.Is(err, channel.ErrPermanent) {
			t.Errorf("Send to %q = %v, want permanent", bad, err)
		}
	}
	if _, err := r.a.Send(ctx, channel.Outbound{ChatID: "42"}); !errors.Is(err, channel.ErrPermanent) {
		t.Errorf("empty Send = %v, want permanent", err)
	}
	if st := r.a.Status(); st.LastOutbound.IsZero() {
		t.Errorf("LastOutbound not set")
	}
}

func TestSendNotConnected(t *testing.T) {
	a := newAdapter(t, Config{}, channeltest.NewStore())
	_, err := a.Send(context.Background(), channel.Outbound{ChatID: "42", Text: "hi"})
	if !errors.Is(err, channel.ErrNotConnected) || errors.Is(err, channel.ErrPermanent) {
		t.Errorf("Send = %v, want ErrNotConnected", err)
	}
}

func TestSendErrors(t *testing.T) {
	no, yes := false, true
	_ = yes
	cases := []struct {
		name      string
		err       rpcError
		permanent bool
	}{
		{"invalid params", rpcError{Code: -32602, Message: "unknown chat_id 99"}, true},
		{"internal", rpcError{Code: -32603, Message: "AppleScript failed"}, false},
		{"db unavailable", rpcError{Code: -32002, Message: "database unavailable"}, false},
		{"busy", rpcError{Code: -32000, Message: "Server busy"}, false},
		{"maybe delivered", rpcError{Code: -32001, Message: "receipt missing", Data: mustJSON(map[string]any{"retry_safe": no, "disposition": "may_have_completed"})}, true},
		{"not started", rpcError{Code: -32001, Message: "bridge refused", Data: mustJSON(map[string]any{"retry_safe": true, "disposition": "not_started"})}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := c.err
			f := newFakeIMsg(t, fakeConfig{SendError: fakeError(e)})
			store := channeltest.NewStore()
			r := start(t, newAdapter(t, Config{CLIPath: f.wrapper}, store), store)
			_, err := r.a.Send(context.Background(), channel.Outbound{ChatID: "42", Text: "hi"})
			if err == nil {
				t.Fatal("Send succeeded")
			}
			if errors.Is(err, channel.ErrPermanent) != c.permanent {
				t.Errorf("Send = %v; permanent %v, want %v", err, errors.Is(err, channel.ErrPermanent), c.permanent)
			}
		})
	}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func TestTrackedSendDeduplicates(t *testing.T) {
	f := newFakeIMsg(t, fakeConfig{Tracked: true})
	store := channeltest.NewStore()
	r := start(t, newAdapter(t, Config{CLIPath: f.wrapper}, store), store)
	ctx := context.Background()
	out := channel.Outbound{ChatID: "42", Text: "once", IdempotencyKey: "outbox-7:0"}
	r1, err := r.a.Send(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := r.a.Send(ctx, out) // the outbox retrying after a lost receipt
	if err != nil {
		t.Fatal(err)
	}
	sends := f.sends()
	if len(sends) != 1 {
		t.Fatalf("%d sends, want 1: %v", len(sends), sends)
	}
	want := attemptUUID("outbox-7:0")
	if sends[0]["method"] != "send.tracked" || sends[0]["attempt_id"] != want || sends[0]["chat_id"] != float64(42) {
		t.Errorf("send = %v", sends[0])
	}
	if r1.MessageID != want || r2.MessageID != want {
		t.Errorf("receipts %v %v, want %s", r1, r2, want)
	}
	// Direct handles (no existing chat target) and keyless sends use send.
	if _, err := r.a.Send(ctx, channel.Outbound{ChatID: "+15551234567", Text: "x", IdempotencyKey: "k2"}); err != nil {
		t.Fatal(err)
	}
	if s := f.sends(); s[len(s)-1]["method"] != "send" {
		t.Errorf("direct send used %v", s[len(s)-1]["method"])
	}
}

func TestAttemptUUID(t *testing.T) {
	u := attemptUUID("k")
	if !uuidRE.MatchString(u) || u[14] != '8' || !strings.ContainsRune("89ab", rune(u[19])) || u != strings.ToLower(u) {
		t.Errorf("attemptUUID = %s", u)
	}
	if attemptUUID("k") != u || attemptUUID("k2") == u {
		t.Error("attemptUUID is not a function of the key")
	}
}

func TestAttachmentsGated(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.jpg")
	big := filepath.Join(dir, "big.mov")
	if err := os.WriteFile(small, []byte("jpeg"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	withAttachments := func(id int64) map[string]any {
		m := dm(id, "+15551234567", "look")
		m["attachments"] = []any{
			map[string]any{"filename": "small.jpg", "transfer_name": "small.jpg", "uti": "public.jpeg", "mime_type": "image/jpeg", "byte_size": 4, "is_sticker": false, "missing": false, "path": small},
			map[string]any{"filename": "big.mov", "transfer_name": "big.mov", "uti": "com.apple.quicktime-movie", "mime_type": "video/quicktime", "byte_size": 2 << 20, "is_sticker": false, "missing": false, "path": big},
			map[string]any{"filename": "gone.png", "mime_type": "image/png", "byte_size": 10, "missing": true, "path": "/nonexistent/gone.png"},
		}
		return m
	}

	t.Run("off", func(t *testing.T) {
		f := newFakeIMsg(t, fakeConfig{})
		store := channeltest.NewStore()
		r := start(t, newAdapter(t, Config{CLIPath: f.wrapper}, store), store)
		f.add(withAttachments(1))
		if got := r.next(t); len(got.Media) != 0 {
			t.Errorf("media delivered with includeAttachments off: %v", got.Media)
		}
		if _, ok := f.requests("watch.subscribe")[0]["attachments"]; ok {
			t.Error("subscribed with attachments")
		}
	})
	t.Run("on", func(t *testing.T) {
		f := newFakeIMsg(t, fakeConfig{})
		store := channeltest.NewStore()
		r := start(t, newAdapter(t, Config{CLIPath: f.wrapper, IncludeAttachments: true, MediaMaxMB: 1, AttachmentRoots: []string{dir}}, store), store)
		if got := f.requests("watch.subscribe")[0]["attachments"]; got != true {
			t.Errorf("subscribe attachments = %v", got)
		}
		f.add(withAttachments(1))
		got := r.next(t)
		if len(got.Media) != 1 || got.Media[0].MimeType != "image/jpeg" || filepath.Dir(got.Media[0].Path) != r.a.deps.MediaDir {
			t.Fatalf("media = %v, want one copy in %s (big and missing skipped)", got.Media, r.a.deps.MediaDir)
		}
		if b, err := os.ReadFile(got.Media[0].Path); err != nil || string(b) != "jpeg" {
			t.Errorf("the copy holds %q, %v", b, err)
		}
		if !strings.Contains(got.Text, "over mediaMaxMb 1") || !strings.Contains(got.Text, "not on the Mac") {
			t.Errorf("text %q lacks the notes on what was left out", got.Text)
		}
		// Outbound: each file its own send, the text with the first;
		// over mediaMaxMb refused permanently; a URL goes into the text.
		if r.a.MaxMediaBytes() != 1<<20 {
			t.Errorf("MaxMediaBytes = %d", r.a.MaxMediaBytes())
		}
		_, err := r.a.Send(context.Background(), channel.Outbound{ChatID: "42", Text: "pics", Media: []engine.Media{{Path: small}, {Path: small}, {URL: "https://example.com/x.png"}}})
		if err != nil {
			t.Fatal(err)
		}
		sends := f.sends()
		if len(sends) != 2 || sends[0]["text"] != "pics\nhttps://example.com/x.png" || sends[0]["file"] != small || sends[1]["file"] != small || sends[1]["text"] != nil {
			t.Errorf("sends = %v", sends)
		}
		_, err = r.a.Send(context.Background(), channel.Outbound{ChatID: "42", Media: []engine.Media{{Path: big}}})
		if !errors.Is(err, channel.ErrPermanent) {
			t.Errorf("oversized attachment: %v", err)
		}
		_, err = r.a.Send(context.Background(), channel.Outbound{ChatID: "42", Media: []engine.Media{{Path: filepath.Join(dir, "nope")}}})
		if !errors.Is(err, channel.ErrPermanent) {
			t.Errorf("missing attachment: %v", err)
		}
	})
}

func TestCommandLineGolden(t *testing.T) {
	cfg := Config{CLIPath: "/opt/homebrew/bin/imsg", DBPath: "/Users/o'brien/Library/Messages/chat $HOME `x`.db", RemoteHost: "bot@mac-mini.local"}
	name, args := commandLine(cfg, rpcWords(cfg)...)
	want := []string{"-T", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=15", "-o", "ConnectTimeout=15", "--", "bot@mac-mini.local",
		`'/opt/homebrew/bin/imsg'`, `'rpc'`, `'--db'`, `'/Users/o'\''brien/Library/Messages/chat $HOME ` + "`x`" + `.db'`}
	if name != "ssh" || !reflect.DeepEqual(args, want) {
		t.Errorf("got %s %q\nwant ssh %q", name, args, want)
	}
	cfg = Config{CLIPath: "~/bin/imsg", RemoteHost: "mac"}
	if _, args := commandLine(cfg, rpcWords(cfg)...); !reflect.DeepEqual(args[len(args)-2:], []string{`~/'bin/imsg'`, `'rpc'`}) {
		t.Errorf("tilde: %q", args)
	}
	cfg = Config{CLIPath: "/usr/local/bin/imsg", DBPath: "/tmp/a b.db"}
	if name, args := commandLine(cfg, rpcWords(cfg)...); name != "/usr/local/bin/imsg" || !reflect.DeepEqual(args, []string{"rpc", "--db", "/tmp/a b.db"}) {
		t.Errorf("local: %s %q", name, args)
	}
}

// TestShellQuoteRoundTrip runs quoted words through sh the way ssh hands
// them to the remote shell (joined with spaces) and checks each arrives as
// one unchanged argument.
func TestShellQuoteRoundTrip(t *testing.T) {
	words := []string{"plain", "two words", "it's", `"dq"`, "$HOME", "`id`", "a;b|c&d", "back\\slash", "", "tab\there", "new\nline", "*?[x]", "-n", "ünï"}
	var quoted []string
	for _, w := range words {
		quoted = append(quoted, shellQuote(w))
	}
	out, err := exec.Command("sh", "-c", `f() { for a in "$@"; do printf '%s\0' "$a"; done; }; f `+strings.Join(quoted, " ")).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !reflect.DeepEqual(got, words) {
		t.Errorf("round trip:\n got %q\nwant %q", got, words)
	}
}

// TestRemoteHostOverSSH runs the whole adapter through a fake ssh that does
// what ssh does with the command words: join them with spaces and run the
// result with sh. The fake imsg lives in a directory whose name needs
// quoting; inbound attachments come back over `ssh host cat`.
func TestRemoteHostOverSSH(t *testing.T) {
	tricky := filepath.Join(t.TempDir(), "Mac HD's $dir")
	if err := os.MkdirAll(tricky, 0o755); err != nil {
		t.Fatal(err)
	}
	f := newFakeIMsgIn(t, tricky, fakeConfig{})
	sshBin := t.TempDir()
	sshLog := filepath.Join(sshBin, "ssh.log")
	script := `#!/bin/sh
printf '%s\n' "$*" >> ` + shellQuote(sshLog) + `
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift 2
exec sh -c "$*"
`
	if err := os.WriteFile(filepath.Join(sshBin, "ssh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", sshBin+string(os.PathListSeparator)+os.Getenv("PATH"))
	photo := filepath.Join(tricky, "IMG 1.heic")
	if err := os.WriteFile(photo, []byte("heic-bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	store := channeltest.NewStore()
	a := newAdapter(t, Config{CLIPath: f.wrapper, DBPath: filepath.Join(tricky, "chat.db"), RemoteHost: "bot@mac", IncludeAttachments: true, RemoteAttachmentRoots: []string{tricky}}, store)
	r := start(t, a, store)
	m := dm(1, "+15551234567", "remote")
	m["attachments"] = []any{map[string]any{"filename": "IMG 1.heic", "mime_type": "image/heic", "byte_size": 10, "missing": false, "path": photo}}
	f.add(m)
	got := r.next(t)
	if got.Text != "remote" || len(got.Media) != 1 {
		t.Fatalf("got %+v", got)
	}
	if got.Media[0].Path == photo || !strings.HasPrefix(got.Media[0].Path, a.deps.MediaDir) || !strings.HasSuffix(got.Media[0].Path, ".heic") {
		t.Errorf("media path %s: want a copy in %s", got.Media[0].Path, a.deps.MediaDir)
	}
	if b, err := os.ReadFile(got.Media[0].Path); err != nil || string(b) != "heic-bytes" {
		t.Errorf("fetched %q, %v", b, err)
	}
	b, _ := os.ReadFile(filepath.Join(f.dir, "argv.jsonl"))
	if want, _ := json.Marshal([]string{"rpc", "--db", filepath.Join(tricky, "chat.db")}); strings.TrimSpace(string(b)) != string(want) {
		t.Errorf("remote argv %s, want %s", b, want)
	}
	if _, err := a.Send(context.Background(), channel.Outbound{ChatID: "7", Text: "over ssh"}); err != nil {
		t.Fatal(err)
	}
	logb, _ := os.ReadFile(sshLog)
	if !strings.Contains(string(logb), "-T -o BatchMode=yes -o ServerAliveInterval=15") || !strings.Contains(string(logb), "-- bot@mac ") {
		t.Errorf("ssh invoked as:\n%s", logb)
	}
}

func TestValidate(t *testing.T) {
	ok := []Config{
		{},
		{CLIPath: "/usr/local/bin/imsg", DBPath: "~/Library/Messages/chat.db", RemoteHost: "bot@mac-mini.tailnet.ts.net", Service: "auto", Region: "US", MediaMaxMB: 8},
		{RemoteHost: "mac", Service: "SMS"},
		{Backend: "bluebubbles", BlueBubbles: blueBubblesOK()},
	}
	for _, c := range ok {
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", c, err)
		}
	}
	bad := []struct {
		cfg Config
		key string
	}{
		{Config{RemoteHost: "-oProxyCommand=touch /tmp/x"}, "channels.imessage.remoteHost"},
		{Config{RemoteHost: "bot@mac mini"}, "channels.imessage.remoteHost"},
		{Config{RemoteHost: "bot@mac\n"}, "channels.imessage.remoteHost"},
		{Config{RemoteHost: "bot@"}, "channels.imessage.remoteHost"},
		{Config{RemoteHost: "@mac"}, "channels.imessage.remoteHost"},
		{Config{RemoteHost: "bot@mac;reboot"}, "channels.imessage.remoteHost"},
		{Config{Service: "rcs"}, "channels.imessage.service"},
		{Config{Region: "U S"}, "channels.imessage.region"},
		{Config{MediaMaxMB: -1}, "channels.imessage.mediaMaxMb"},
		{Config{CLIPath: "imsg\x00"}, "channels.imessage.cliPath"},
		{Config{CLIPath: "--help"}, "channels.imessage.cliPath"},
		{Config{DBPath: "a\nb"}, "channels.imessage.dbPath"},
		{Config{Backend: "applescript"}, "channels.imessage.backend"},
		{Config{Backend: "bluebubbles"}, "channels.imessage.bluebubbles.serverUrl"},
	}
	for _, c := range bad {
		err := c.cfg.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), c.key+":") {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", c.cfg, err, c.key)
		}
	}
	if _, err := New(Config{}, Deps{}); err == nil {
		t.Error("New without a Store succeeded")
	}
}

// TestInboundIDsUntouched: the adapter hands over imsg's handles and chat
// ids exactly as imsg sent them — no lower-casing, no stripping of
// "formatting" (that made "+15550001111x" the owner and folded U+212A to
// "k"); access.Canonical alone compares ids.
func TestInboundIDsUntouched(t *testing.T) {
	a := &Adapter{cfg: Config{}.withDefaults(), deps: Deps{Now: time.Now}}
	for _, h := range []string{"+15551234567", "Ann@Example.COM", "\u212aate@example.com", "+15550001111x", "+1 (555) 123-4567",
		"+1555000111\uff11", "+1555\u200b0001111", " mailto:A@B.C ", "262966", "urn:biz:4f8c"} {
		in := a.inbound(context.Background(), &imsgMessage{GUID: "G", Sender: h, Text: "hi", ChatID: 7})
		if in.SenderID != h || in.ChatID != "7" {
			t.Errorf("sender %q: SenderID %q ChatID %q", h, in.SenderID, in.ChatID)
		}
		in = a.inbound(context.Background(), &imsgMessage{GUID: "G", ChatIdentifier: h, Text: "hi"})
		if in.SenderID != h || in.ChatID != "" {
			t.Errorf("chat_identifier %q: SenderID %q ChatID %q", h, in.SenderID, in.ChatID)
		}
	}
	m := &imsgMessage{GUID: "G", Sender: "+15551234567", ChatGUID: "any;-;+15551234567"}
	if got := m.chatID(); got != "chat_guid:any;-;+15551234567" {
		t.Errorf("chatID %q", got)
	}
}

func TestReadLinesSkipsOverlong(t *testing.T) {
	in := "short\n" + strings.Repeat("x", 200) + "\nafter\n" + strings.Repeat("y", 100000) + "\nlast-no-newline"
	var got []string
	var skipped []int
	err := readLines(strings.NewReader(in), 150, func(b []byte) { got = append(got, string(b)) }, func(n int) { skipped = append(skipped, n) })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []string{"short", "after", "last-no-newline"}) || len(skipped) != 2 {
		t.Errorf("lines %q skipped %v", got, skipped)
	}
}

func TestParseNotification(t *testing.T) {
	good := `{"jsonrpc":"2.0","method":"message","params":{"subscription":1,"message":{"id":5,"cursor":5,"chat_id":3,"guid":"G","sender":"+1555","is_from_me":false,"text":"hi","created_at":"2026-01-02T03:04:05Z","attachments":[]}}}`
	n, err := parseNotification([]byte(good))
	if err != nil || n.Subscription != 1 || n.Message.GUID != "G" || n.Message.position() != 5 {
		t.Fatalf("%+v %v", n, err)
	}
	for _, bad := range []string{
		``, `null`, `[]`, `{"jsonrpc":"2.0","method":"message"}`,
		`{"jsonrpc":"1.0","method":"message","params":{"message":{"guid":"G"}}}`,
		`{"jsonrpc":"2.0","method":"watch.overflow","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"message","params":{"message":{"guid":"G"}}}`,
		`{"jsonrpc":"2.0","method":"message","params":{"message":{"guid":""}}}`,
		`{"jsonrpc":"2.0","method":"message","params":{"message":{"guid":"G","id":"5"}}}`,
		`{"jsonrpc":"2.0","method":"message","params":{"message":{"guid":"G","is_from_me":"false"}}}`,
		`{"jsonrpc":"2.0","method":"message","params":{"message":{"guid":"G","id":-1}}}`,
		`{"jsonrpc":"2.0","method":"message","params":[1]}`,
	} {
		if _, err := parseNotification([]byte(bad)); err == nil {
			t.Errorf("parseNotification(%s) succeeded", bad)
		}
	}
}

func FuzzNotification(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","method":"message","params":{"subscription":1,"message":{"id":5,"cursor":5,"chat_id":3,"chat_guid":"iMessage;+;chat1","is_group":true,"guid":"G","reply_to_guid":"R","sender":"A@B.C","sender_name":"A","is_from_me":false,"text":"hi","created_at":"2026-01-02T03:04:05.123Z","attachments":[{"filename":"a.jpg","mime_type":"image/jpeg","byte_size":3,"missing":false,"path":"/x/a.jpg"}]}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"watch.overflow","params":{"subscription":1,"resume_after_rowid":9000,"reason":"buffer_limit_exceeded","terminal":true}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"1","result":{"chats":[]}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"message","params":{"message":{"guid":"G","id":1e3}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := parseNotification(b)
		if err != nil {
			return
		}
		m := &n.Message
		if m.GUID == "" || m.ID < 0 || m.Cursor < 0 || m.ChatID < 0 || len(m.Text) > maxTextBytes {
			t.Fatalf("accepted an invalid message: %+v", m)
		}
		// Normalizing an accepted message never panics either.
		_ = m.chatID()
		_ = m.timestamp()
		a := &Adapter{cfg: Config{}.withDefaults(), deps: Deps{Now: time.Now}}
		_ = a.inbound(context.Background(), m)
	})
}

func blueBubblesOK() bluebubbles.Config {
	return bluebubbles.Config{ServerURL: "http://192.168.1.100:1234", Password: "pw", WebhookListen: "127.0.0.1:18790"}
}

func TestOpenSelectsBackend(t *testing.T) {
	a, err := Open(Config{}, Deps{Store: channeltest.NewStore()})
	if _, ok := a.(*Adapter); err != nil || !ok {
		t.Errorf("Open imsg = %T, %v", a, err)
	}
	b, err := Open(Config{Backend: "bluebubbles", BlueBubbles: blueBubblesOK()}, Deps{Account: "mac"})
	if _, ok := b.(*bluebubbles.Adapter); err != nil || !ok || b.Channel() != "imessage" || b.Account() != "mac" {
		t.Errorf("Open bluebubbles = %T, %v", b, err)
	}
	if _, err := New(Config{Backend: "bluebubbles", BlueBubbles: blueBubblesOK()}, Deps{Store: channeltest.NewStore()}); err == nil {
		t.Error("New accepted the bluebubbles backend")
	}
}
