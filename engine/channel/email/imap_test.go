package email

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/channel/channeltest"
)

const botAddr = "bot@example.org"

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// testConfig is a config for d (plain IMAP) and an SMTP sink s (either may
// be nil: a closed port then), with requireAuth false: most tests are about
// IMAP, not sender authentication, and append mail without
// Authentication-Results (authConfig is the default, checked).
func testConfig(d *dovecot, s *sink) Config {
	noAuth := false
	cfg := Config{Address: botAddr, RequireAuth: &noAuth}
	cfg.IMAP = IMAPConfig{Host: "127.0.0.1", Port: 1, Security: SecurityNone, Username: testUser, Password: testPass}
	if d != nil {
		cfg.IMAP.Port = d.port
	}
	cfg.SMTP = SMTPConfig{Host: "127.0.0.1", Port: 1, Security: SecurityNone}
	if s != nil {
		cfg.SMTP.Port = s.port
	}
	return cfg
}

// testServID is the authserv-id of the test's "receiving mail server".
const testServID = "mx.example.org"

// authConfig is testConfig with sender authentication on (the default)
// and testServID trusted.
func authConfig(d *dovecot, s *sink) Config {
	cfg := testConfig(d, s)
	cfg.RequireAuth = nil
	cfg.AuthServID = []string{testServID}
	return cfg
}

func newTestAdapter(t testing.TB, cfg Config, store channel.Store, mediaDir string, tlsCfg *tls.Config) *Adapter {
	t.Helper()
	a, err := New(cfg, Deps{Store: store, Logger: testLogger(t), MediaDir: mediaDir, TLSConfig: tlsCfg})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// running is a Run in a goroutine.
type running struct {
	cancel context.CancelFunc
	done   chan error
}

func start(t testing.TB, a *Adapter, in channel.Inbox) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx, in) }()
	t.Cleanup(func() { r.stop(t) })
	waitState(t, a, channel.StateLinked)
	return r
}

// stop cancels Run and returns its result; Run must return promptly.
func (r *running) stop(t testing.TB) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // stop may be called again (cleanup)
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5 s of cancel")
		return nil
	}
}

func waitState(t testing.TB, a *Adapter, want channel.State) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		st := a.Status()
		if st.State == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("state %s (%s), want %s", st.State, st.Reason, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mailFrom(from, subject, id, body string) string {
	return fmt.Sprintf("From: %s\nTo: %s\nSubject: %s\nDate: Tue, 03 Jun 2025 09:00:00 +0000\nMessage-ID: <%s>\n\n%s\n", from, botAddr, subject, id, body)
}

func next(t testing.TB, in *channeltest.Inbox) engine.Inbound {
	t.Helper()
	m, ok := in.Next(15 * time.Second)
	if !ok {
		t.Fatal("no message delivered within 15 s")
	}
	return m
}

func ids(ms []engine.Inbound) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.MessageID)
	}
	return out
}

func TestReceiveIdleAndFirstRunSkipsOldMail(t *testing.T) {
	t.Parallel() // each has its own dovecot
	d := startDovecot(t, dovecotOpts{})
	d.appendMail(mailFrom("ann@example.com", "old", "old-1@example.com", "Answer me from last year"))
	d.appendMail(mailFrom("ann@example.com", "old", "old-2@example.com", "me too"))

	store := channeltest.NewStore()
	in := channeltest.NewInbox()
	a := newTestAdapter(t, authConfig(d, nil), store, "", nil)
	if st := a.Status(); st.State != channel.StateStopped || st.Self != botAddr {
		t.Fatalf("status before Run: %+v", st)
	}
	r := start(t, a, in)

	// The adapter is IDLE now; new mail must arrive through IDLE.
	time.Sleep(300 * time.Millisecond)
	// As the receiving server writes them (Postfix with OpenDKIM, SPF and
	// OpenDMARC), topmost last-added.
	uid := d.appendMail("Authentication-Results: mx.example.org; dmarc=pass (p=reject dis=none) header.from=Example.com\n" +
		"Authentication-Results: mx.example.org;\n\tdkim=pass (2048-bit key; unprotected) header.d=example.com header.i=@example.com header.b=\"AbC+dEf1\"\n" +
		"Authentication-Results: mx.example.org; spf=pass (mailfrom) smtp.mailfrom=ann@example.com (client-ip=192.0.2.1; helo=out.example.com)\n" +
		"From: \"Ann Example\" <Ann@Example.com>\nTo: bot@example.org\nSubject: Lunch?\n" +
		"Date: Tue, 03 Jun 2025 09:00:00 +0000\nMessage-ID: <new-1@example.com>\nReferences: <root@example.com>\n\nShall we have lunch?\n")
	m := next(t, in)
	if m.MessageID != "new-1@example.com" {
		t.Fatalf("first delivered message is %q (old mail must be skipped)", m.MessageID)
	}
	want := engine.Inbound{
		Channel: "email", Account: "default", ChatID: "Ann@Example.com", ChatType: engine.ChatDirect,
		SenderID: "Ann@Example.com", SenderName: "Ann Example", MessageID: "new-1@example.com",
		Text: "Subject: Lunch?\n\nShall we have lunch?",
	}
	if m.Channel != want.Channel || m.Account != want.Account || m.ChatID != want.ChatID || m.ChatType != want.ChatType ||
		m.SenderID != want.SenderID || m.SenderName != want.SenderName || m.Text != want.Text {
		t.Errorf("inbound = %+v\nwant %+v", m, want)
	}
	if !m.Timestamp.Equal(time.Date(2025, 6, 3, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("timestamp %v", m.Timestamp)
	}
	th, err := parseThread(m.Thread)
	if err != nil {
		t.Fatal(err)
	}
	if th.UID != uint32(uid) || th.Subject != "Lunch?" || th.Mailbox != "INBOX" || th.UIDValidity == 0 ||
		!slices.Equal(th.References, []string{"root@example.com"}) {
		t.Errorf("thread %+v (uid %d)", th, uid)
	}
	// Reading does not mark \Seen (BODY.PEEK): Ack does.
	if slices.Contains(d.flags(uid), imap.FlagSeen) {
		t.Error("message marked \\Seen before Ack")
	}
	if st := a.Status(); st.LastInbound.IsZero() || st.State != channel.StateLinked {
		t.Errorf("status %+v", st)
	}

	begin := time.Now()
	if err := r.stop(t); err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
	if d := time.Since(begin); d > 4*time.Second {
		t.Errorf("Run took %v to return after cancel", d)
	}
	if got := ids(in.Messages()); !slices.Equal(got, []string{"new-1@example.com"}) {
		t.Errorf("delivered %v", got)
	}
}

func TestCursorPersistsAcrossRestarts(t *testing.T) {
	t.Parallel() // each has its own dovecot
	d := startDovecot(t, dovecotOpts{})
	store := channeltest.NewStore()
	in := channeltest.NewInbox()
	cfg := testConfig(d, nil)

	a1 := newTestAdapter(t, cfg, store, "", nil)
	r1 := start(t, a1, in)
	d.appendMail(mailFrom("ann@example.com", "one", "m1@example.com", "first"))
	if m := next(t, in); m.MessageID != "m1@example.com" {
		t.Fatalf("got %q", m.MessageID)
	}
	if err := r1.stop(t); err != nil {
		t.Fatal(err)
	}

	// Mail that arrives while no adapter runs.
	d.appendMail(mailFrom("bob@example.com", "two", "m2@example.com", "second"))
	d.appendMail(mailFrom("ann@example.com", "three", "m3@example.com", "third"))

	a2 := newTestAdapter(t, cfg, store, "", nil) // a new process: only the Store is shared
	start(t, a2, in)
	if m := next(t, in); m.MessageID != "m2@example.com" {
		t.Fatalf("got %q, want m2", m.MessageID)
	}
	if m := next(t, in); m.MessageID != "m3@example.com" {
		t.Fatalf("got %q, want m3", m.MessageID)
	}
	d.appendMail(mailFrom("ann@example.com", "four", "m4@example.com", "fourth"))
	if m := next(t, in); m.MessageID != "m4@example.com" {
		t.Fatalf("got %q, want m4", m.MessageID)
	}
	time.Sleep(300 * time.Millisecond)
	if got := ids(in.Messages()); !slices.Equal(got, []string{"m1@example.com", "m2@example.com", "m3@example.com", "m4@example.com"}) {
		t.Errorf("delivered %v", got)
	}
	if cur, ok := waitCursor(store, func(c cursor) bool { return c.LastUID == 4 && c.Mailbox == "INBOX" }); !ok {
		t.Errorf("cursor %+v", cur)
	}
}

// waitCursor polls the stored cursor until ok says it is right, for up to
// 10 s: the adapter stores it after delivering (or skipping) a message, so
// a test that has seen the message may look too early.
func waitCursor(store *channeltest.Store, ok func(cursor) bool) (cursor, bool) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var cur cursor
		found, _ := store.Get(cursorKey, &cur)
		if found && ok(cur) {
			return cur, true
		}
		if time.Now().After(deadline) {
			return cur, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDeliverErrorKeepsCursor(t *testing.T) {
	t.Parallel() // each has its own dovecot
	d := startDovecot(t, dovecotOpts{})
	store := channeltest.NewStore()
	a := newTestAdapter(t, testConfig(d, nil), store, "", nil)
	boom := errors.New("disk full")
	bad := channeltest.NewInbox()
	bad.Err = boom
	r := start(t, a, bad)
	d.appendMail(mailFrom("ann@example.com", "x", "x1@example.com", "x"))
	select {
	case err := <-r.done:
		r.done <- err
		if !errors.Is(err, boom) {
			t.Fatalf("Run = %v, want the Deliver error", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return the Deliver error")
	}
	if st := a.Status(); st.State != channel.StateError || !strings.Contains(st.Reason, "disk full") {
		t.Errorf("status %+v", st)
	}
	// The supervisor restarts Run: the message comes again.
	in := channeltest.NewInbox()
	start(t, a, in)
	if m := next(t, in); m.MessageID != "x1@example.com" {
		t.Fatalf("got %q", m.MessageID)
	}
}

func TestAckSetsSeen(t *testing.T) {
	t.Parallel() // each has its own dovecot
	d := startDovecot(t, dovecotOpts{})
	in := channeltest.NewInbox()
	a := newTestAdapter(t, testConfig(d, nil), channeltest.NewStore(), "", nil)
	ctx := context.Background()

	if err := a.Ack(ctx, engine.Inbound{Thread: `{"uid":1,"uidValidity":1,"mailbox":"INBOX"}`}); !errors.Is(err, channel.ErrNotConnected) {
		t.Fatalf("Ack without Run = %v, want ErrNotConnected", err)
	}
	r := start(t, a, in)
	uid := d.appendMail(mailFrom("ann@example.com", "ack me", "ack-1@example.com", "hi"))
	m := next(t, in)
	// The run loop is IDLE now: Ack must interrupt it.
	time.Sleep(200 * time.Millisecond)
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := a.Ack(actx, m); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(d.flags(uid), imap.FlagSeen) {
		t.Fatalf("flags %v, want \\Seen", d.flags(uid))
	}
	// Still receiving after the Ack.
	d.appendMail(mailFrom("ann@example.com", "more", "ack-2@example.com", "more"))
	if m := next(t, in); m.MessageID != "ack-2@example.com" {
		t.Fatalf("got %q", m.MessageID)
	}
	r.stop(t)
	if err := a.Ack(ctx, m); !errors.Is(err, channel.ErrNotConnected) {
		t.Fatalf("Ack after Run = %v, want ErrNotConnected", err)
	}
}

// ackingInbox acks from inside Deliver, as a gateway may do for a message
// it drops without a reply.
type ackingInbox struct {
	a    *Adapter
	errs chan error
}

func (ai *ackingInbox) Deliver(ctx context.Context, m engine.Inbound) error {
	ai.errs <- ai.a.Ack(ctx, m)
	return nil
}

func TestAckFromDeliver(t *testing.T) {
	t.Parallel() // each has its own dovecot
	d := startDovecot(t, dovecotOpts{})
	a := newTestAdapter(t, testConfig(d, nil), channeltest.NewStore(), "", nil)
	ai := &ackingInbox{a: a, errs: make(chan error, 1)}
	start(t, a, ai)
	uid := d.appendMail(mailFrom("ann@example.com", "x", "in-deliver@example.com", "x"))
	select {
	case err := <-ai.errs:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Ack from Deliver did not return (deadlock?)")
	}
	if !slices.Contains(d.flags(uid), imap.FlagSeen) {
		t.Fatal("not \\Seen")
	}
}

func TestReconnectAfterServerRestart(t *testing.T) {
	t.Parallel() // each has its own dovecot
	d := startDovecot(t, dovecotOpts{})
	store := channeltest.NewStore()
	in := channeltest.NewInbox()
	a := newTestAdapter(t, testConfig(d, nil), store, "", nil)
	r := start(t, a, in)
	d.appendMail(mailFrom("ann@example.com", "1", "r1@example.com", "one"))
	next(t, in)

	begin := time.Now()
	d.stop()
	t.Logf("dovecot stopped in %v", time.Since(begin))
	select {
	case err := <-r.done:
		r.done <- err
		if err == nil {
			t.Fatal("Run returned nil after the connection died")
		}
		t.Logf("Run returned after %v: %v", time.Since(begin), err)
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not notice the server going away")
	}
	if st := a.Status(); st.State != channel.StateError || st.Reason == "" || strings.Contains(st.Reason, testPass) {
		t.Errorf("status %+v", st)
	}
	d.start()
	t.Logf("dovecot restarted after %v", time.Since(begin))
	d.appendMail(mailFrom("bob@example.com", "2", "r2@example.com", "two"))
	start(t, a, in) // what the supervisor does
	if m := next(t, in); m.MessageID != "r2@example.com" {
		t.Fatalf("got %q, want r2", m.MessageID)
	}
	time.Sleep(300 * time.Millisecond)
	if got := ids(in.Messages()); !slices.Equal(got, []string{"r1@example.com", "r2@example.com"}) {
		t.Errorf("delivered %v", got)
	}
}

func TestSkipsLoopsAndAutoReplies(t *testing.T) {
	t.Parallel() // each has its own dovecot
	d := startDovecot(t, dovecotOpts{})
	in := channeltest.NewInbox()
	store := channeltest.NewStore()
	a := newTestAdapter(t, testConfig(d, nil), store, "", nil)
	start(t, a, in)
	d.appendMail(mailFrom("Bot@Example.org", "loop", "loop@example.org", "my own mail"))
	d.appendMail("From: ann@example.com\nSubject: away\nAuto-Submitted: auto-replied\nMessage-ID: <auto@example.com>\n\nI am away\n")
	d.appendMail("From: list@example.com\nSubject: news\nPrecedence: list\nMessage-ID: <list@example.com>\n\nnews\n")
	d.appendMail("Subject: no sender\nMessage-ID: <nofrom@example.com>\n\n?\n")
	d.appendMail("From: ann@example.com\nSubject: real\n\nno message id\n")
	m := next(t, in)
	if !strings.HasPrefix(m.MessageID, "uid-") || !strings.HasSuffix(m.MessageID, "-5@127.0.0.1") {
		t.Fatalf("got %q, want the synthesized id of uid 5", m.MessageID)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(in.Messages()); n != 1 {
		t.Errorf("%d messages delivered: %v", n, ids(in.Messages()))
	}
	if cur, ok := waitCursor(store, func(c cursor) bool { return c.LastUID == 5 }); !ok {
		t.Errorf("cursor %+v: skipped mail must move it", cur)
	}
}

func TestAttachmentsSaved(t *testing.T) {
	t.Parallel() // each has its own dovecot
	d := startDovecot(t, dovecotOpts{})
	in := channeltest.NewInbox()
	media := t.TempDir()
	a := newTestAdapter(t, testConfig(d, nil), channeltest.NewStore(), media, nil)
	start(t, a, in)
	d.appendMail(`From: ann@example.com
Subject: file
Message-ID: <att@example.com>
Content-Type: multipart/mixed; boundary="m"

--m
Content-Type: text/plain

Here it is.
--m
Content-Type: application/pdf
Content-Disposition: attachment; filename="../../report 2025.pdf"
Content-Transfer-Encoding: base64

JVBERi0xLjQK
--m--
`)
	m := next(t, in)
	if len(m.Media) != 1 {
		t.Fatalf("media %+v", m.Media)
	}
	md := m.Media[0]
	if md.MimeType != "application/pdf" || !strings.HasPrefix(md.Path, media+string(os.PathSeparator)) || !strings.HasSuffix(md.Path, "report_2025.pdf") {
		t.Errorf("media %+v", md)
	}
	if b, err := os.ReadFile(md.Path); err != nil || string(b) != "%PDF-1.4\n" {
		t.Errorf("saved %q, %v", b, err)
	}
	if !strings.HasPrefix(m.Text, "Subject: file\n\nHere it is.") {
		t.Errorf("text %q", m.Text)
	}
}

func TestTLSAndStartTLS(t *testing.T) {
	t.Parallel() // each has its own dovecot
	d := startDovecot(t, dovecotOpts{tls: true})
	tlsCfg := &tls.Config{RootCAs: d.roots}
	for _, mode := range []struct {
		security string
		port     int
	}{{SecurityTLS, d.tlsPort}, {SecurityStartTLS, d.port}} {
		t.Run(mode.security, func(t *testing.T) {
			cfg := testConfig(d, nil)
			cfg.IMAP.Security, cfg.IMAP.Port = mode.security, mode.port
			in := channeltest.NewInbox()
			a := newTestAdapter(t, cfg, channeltest.NewStore(), "", tlsCfg)
			r := start(t, a, in)
			id := "tls-" + mode.security + "@example.com"
			d.appendMail(mailFrom("ann@example.com", "tls", id, "over tls"))
			if m := next(t, in); m.MessageID != id {
				t.Fatalf("got %q", m.MessageID)
			}
			r.stop(t)
		})
	}
	t.Run("untrusted", func(t *testing.T) {
		cfg := testConfig(d, nil)
		cfg.IMAP.Security, cfg.IMAP.Port = SecurityTLS, d.tlsPort
		a := newTestAdapter(t, cfg, channeltest.NewStore(), "", nil) // system roots: refused
		err := a.Run(context.Background(), channeltest.NewInbox())
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("Run = %v, want a certificate error", err)
		}
	})
	// (A plaintext login is not refused here: dovecot counts loopback
	// connections as secured.)
}

// Not parallel: it changes pollInterval (sequential tests finish before
// the parallel ones resume).
func TestPollWithoutIdle(t *testing.T) {
	old := pollInterval
	pollInterval = 200 * time.Millisecond
	defer func() { pollInterval = old }()
	d := startDovecot(t, dovecotOpts{noIdle: true})
	in := channeltest.NewInbox()
	a := newTestAdapter(t, testConfig(d, nil), channeltest.NewStore(), "", nil)
	r := start(t, a, in)
	d.appendMail(mailFrom("ann@example.com", "poll", "poll@example.com", "polled"))
	if m := next(t, in); m.MessageID != "poll@example.com" {
		t.Fatalf("got %q", m.MessageID)
	}
	begin := time.Now()
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if time.Since(begin) > 4*time.Second {
		t.Error("slow stop")
	}
}

func TestUIDValidityChangeRestartsAtUIDNext(t *testing.T) {
	t.Parallel() // each has its own dovecot
	d := startDovecot(t, dovecotOpts{})
	store := channeltest.NewStore()
	// A cursor from an older numbering of the mailbox.
	store.Put(cursorKey, cursor{Mailbox: "INBOX", UIDValidity: 1, LastUID: 0})
	d.appendMail(mailFrom("ann@example.com", "old", "old@example.com", "old"))
	in := channeltest.NewInbox()
	a := newTestAdapter(t, testConfig(d, nil), store, "", nil)
	start(t, a, in)
	d.appendMail(mailFrom("ann@example.com", "new", "new@example.com", "new"))
	if m := next(t, in); m.MessageID != "new@example.com" {
		t.Fatalf("got %q: old mail replayed after a UIDVALIDITY change", m.MessageID)
	}
}

func TestLoginFailure(t *testing.T) {
	t.Parallel() // each has its own dovecot
	d := startDovecot(t, dovecotOpts{})
	cfg := testConfig(d, nil)
	cfg.IMAP.Password = "wrong-password"
	a := newTestAdapter(t, cfg, channeltest.NewStore(), "", nil)
	err := a.Run(context.Background(), channeltest.NewInbox())
	if err == nil || strings.Contains(err.Error(), "wrong-password") {
		t.Fatalf("Run = %v", err)
	}
	if st := a.Status(); st.State != channel.StateError || strings.Contains(st.Reason, "wrong-password") {
		t.Errorf("status %+v", st)
	}
}
