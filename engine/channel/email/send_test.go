package email

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-smtp"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/channel/channeltest"
)

func parseSunk(t *testing.T, s sunk) (*mail.Reader, string) {
	t.Helper()
	r, err := mail.CreateReader(strings.NewReader(s.data))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.NextPart()
	if err != nil {
		t.Fatal(err)
	}
	b := new(strings.Builder)
	if _, err := io.Copy(b, p.Body); err != nil {
		t.Fatal(err)
	}
	return r, b.String()
}

func TestSendThreading(t *testing.T) {
	s := startSink(t, nil)
	a := newTestAdapter(t, testConfig(nil, s), channeltest.NewStore(), "", nil)
	thread := ThreadInfo{Subject: "Re: Lunch?", References: []string{"root@example.com", "mid@example.com"}, UID: 7, UIDValidity: 9, Mailbox: "INBOX"}.encode()
	out := channel.Outbound{
		Channel: "email", ChatID: "ann@example.com", Text: "Yes — 12:30 at Café Grün.\nSee you!",
		ReplyTo: "in-1@example.com", Thread: thread, IdempotencyKey: "reply-1-chunk-0",
	}
	rc, err := a.Send(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	msgs := s.messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	m := msgs[0]
	if m.from != botAddr || len(m.to) != 1 || m.to[0] != "ann@example.com" {
		t.Errorf("envelope from %q to %q", m.from, m.to)
	}
	r, body := parseSunk(t, m)
	h := r.Header
	subj, _ := h.Subject()
	if subj != "Re: Lunch?" {
		t.Errorf("Subject %q", subj)
	}
	irt, _ := h.MsgIDList("In-Reply-To")
	if strings.Join(irt, " ") != "in-1@example.com" {
		t.Errorf("In-Reply-To %q", irt)
	}
	refs, _ := h.MsgIDList("References")
	if strings.Join(refs, " ") != "root@example.com mid@example.com in-1@example.com" {
		t.Errorf("References %q", refs)
	}
	id, _ := h.MessageID()
	if id != rc.MessageID || !strings.HasSuffix(id, "@example.org") {
		t.Errorf("Message-ID %q, receipt %q", id, rc.MessageID)
	}
	if ct := h.Get("Content-Type"); !strings.Contains(ct, "text/plain") || !strings.Contains(strings.ToLower(ct), "utf-8") {
		t.Errorf("Content-Type %q", ct)
	}
	if cte := h.Get("Content-Transfer-Encoding"); cte != "quoted-printable" {
		t.Errorf("Content-Transfer-Encoding %q", cte)
	}
	if from, _ := h.AddressList("From"); len(from) != 1 || from[0].Address != botAddr {
		t.Errorf("From %v", from)
	}
	if _, err := h.Date(); err != nil {
		t.Errorf("Date: %v", err)
	}
	if strings.TrimRight(body, "\n") != "Yes — 12:30 at Café Grün.\nSee you!" {
		t.Errorf("body %q", body)
	}
	if rc.SentAt.IsZero() || a.Status().LastOutbound.IsZero() {
		t.Error("no SentAt / LastOutbound")
	}

	// A retry of the same chunk carries the same Message-ID.
	rc2, err := a.Send(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	if rc2.MessageID != rc.MessageID {
		t.Errorf("retry Message-ID %q != %q", rc2.MessageID, rc.MessageID)
	}
	r2, _ := parseSunk(t, s.messages()[1])
	if id2, _ := r2.Header.MessageID(); id2 != id {
		t.Errorf("retry header Message-ID %q != %q", id2, id)
	}
	out.IdempotencyKey = "reply-1-chunk-1"
	rc3, err := a.Send(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	if rc3.MessageID == rc.MessageID {
		t.Error("another chunk got the same Message-ID")
	}
}

func TestSendNewConversation(t *testing.T) {
	s := startSink(t, nil)
	a := newTestAdapter(t, testConfig(nil, s), channeltest.NewStore(), "", nil)
	if _, err := a.Send(context.Background(), channel.Outbound{ChatID: "ann@example.com", Text: "Reminder: call Bob\nat 5", IdempotencyKey: "k"}); err != nil {
		t.Fatal(err)
	}
	r, _ := parseSunk(t, s.messages()[0])
	if subj, _ := r.Header.Subject(); subj != "Reminder: call Bob" {
		t.Errorf("Subject %q", subj)
	}
	if r.Header.Has("In-Reply-To") || r.Header.Has("References") {
		t.Error("threading headers on a new conversation")
	}
}

func TestSendRefusesInjection(t *testing.T) {
	s := startSink(t, nil)
	a := newTestAdapter(t, testConfig(nil, s), channeltest.NewStore(), "", nil)
	for name, out := range map[string]channel.Outbound{
		"chat id crlf":   {ChatID: "ann@example.com\r\nBcc: evil@example.com", Text: "x"},
		"chat id name":   {ChatID: "Ann <ann@example.com>", Text: "x"},
		"chat id list":   {ChatID: "ann@example.com, evil@example.com", Text: "x"},
		"chat id empty":  {ChatID: "", Text: "x"},
		"reply-to crlf":  {ChatID: "ann@example.com", ReplyTo: "a@b\r\nBcc: evil@example.com", Text: "x"},
		"reply-to angle": {ChatID: "ann@example.com", ReplyTo: "a@b> <c@d", Text: "x"},
		"subject crlf":   {ChatID: "ann@example.com", Thread: `{"subject":"hi\r\nBcc: evil@example.com"}`, Text: "x"},
		"refs crlf":      {ChatID: "ann@example.com", Thread: `{"refs":["a@b\nX: y"]}`, Text: "x"},
		"bad thread":     {ChatID: "ann@example.com", Thread: `{`, Text: "x"},
	} {
		_, err := a.Send(context.Background(), out)
		if !errors.Is(err, channel.ErrPermanent) {
			t.Errorf("%s: err = %v, want ErrPermanent", name, err)
		}
	}
	if n := len(s.messages()); n != 0 {
		t.Errorf("%d messages sent", n)
	}
}

func TestSendSMTPErrors(t *testing.T) {
	s := startSink(t, nil)
	a := newTestAdapter(t, testConfig(nil, s), channeltest.NewStore(), "", nil)
	out := channel.Outbound{ChatID: "nobody@example.com", Text: "x", IdempotencyKey: "k"}

	s.SetRcptErr(&smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"})
	if _, err := a.Send(context.Background(), out); !errors.Is(err, channel.ErrPermanent) {
		t.Errorf("550: err = %v, want ErrPermanent", err)
	}

	s.SetRcptErr(&smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try later"})
	_, err := a.Send(context.Background(), out)
	if err == nil || errors.Is(err, channel.ErrPermanent) {
		t.Errorf("451: err = %v, want a retryable error", err)
	}

	// Nothing listens: a network error, retried.
	cfg := testConfig(nil, nil)
	b := newTestAdapter(t, cfg, channeltest.NewStore(), "", nil)
	_, err = b.Send(context.Background(), out)
	if err == nil || errors.Is(err, channel.ErrPermanent) {
		t.Errorf("no server: err = %v, want a retryable error", err)
	}
}

func TestSendAuthAndStartTLS(t *testing.T) {
	// A self-signed certificate for the sink (the same helper as dovecot's).
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	roots := writeSelfSigned(t, certFile, keyFile)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	s := startSink(t, &tls.Config{Certificates: []tls.Certificate{cert}})
	cfg := testConfig(nil, s)
	cfg.SMTP.Security = SecurityStartTLS
	pwFile := filepath.Join(dir, "smtp-pass")
	os.WriteFile(pwFile, []byte(testPass+"\n"), 0o600)
	cfg.SMTP.PasswordFile = pwFile
	a := newTestAdapter(t, cfg, channeltest.NewStore(), "", &tls.Config{RootCAs: roots})
	if _, err := a.Send(context.Background(), channel.Outbound{ChatID: "ann@example.com", Text: "secure", IdempotencyKey: "k"}); err != nil {
		t.Fatal(err)
	}
	auths := s.Auths()
	// The SMTP username defaults to the IMAP username.
	if len(auths) != 1 || auths[0] != testUser+":"+testPass {
		t.Errorf("auths %q", auths)
	}

	// Without the test roots the certificate is refused (retryable).
	b := newTestAdapter(t, cfg, channeltest.NewStore(), "", nil)
	if _, err := b.Send(context.Background(), channel.Outbound{ChatID: "ann@example.com", Text: "x", IdempotencyKey: "k"}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted: %v", err)
	}
}

func TestSendAttachments(t *testing.T) {
	s := startSink(t, nil)
	a := newTestAdapter(t, testConfig(nil, s), channeltest.NewStore(), "", nil)
	dir := t.TempDir()
	p := filepath.Join(dir, "chart.png")
	os.WriteFile(p, []byte("\x89PNG\r\n\x1a\nfake"), 0o600)
	out := channel.Outbound{ChatID: "ann@example.com", Text: "Here is the chart.", IdempotencyKey: "k",
		Media: []engine.Media{{Path: p, MimeType: "image/png"}, {URL: "https://example.com/x.jpg"}}}
	if _, err := a.Send(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	r, body := parseSunk(t, s.messages()[0])
	if !strings.Contains(body, "Here is the chart.") || !strings.Contains(body, "https://example.com/x.jpg") {
		t.Errorf("body %q", body)
	}
	part, err := r.NextPart()
	if err != nil {
		t.Fatal(err)
	}
	ah, ok := part.Header.(*mail.AttachmentHeader)
	if !ok {
		t.Fatalf("second part is %T", part.Header)
	}
	if fn, _ := ah.Filename(); fn != "chart.png" {
		t.Errorf("filename %q", fn)
	}
	b := new(strings.Builder)
	io.Copy(b, part.Body)
	if b.String() != "\x89PNG\r\n\x1a\nfake" {
		t.Errorf("attachment %q", b.String())
	}

	// Too large: permanent.
	big := filepath.Join(dir, "big.bin")
	f, _ := os.Create(big)
	f.Truncate(MaxOutboundMediaBytes + 1)
	f.Close()
	out.Media = []engine.Media{{Path: big}}
	if _, err := a.Send(context.Background(), out); !errors.Is(err, channel.ErrPermanent) {
		t.Errorf("too large: %v", err)
	}
	out.Media = []engine.Media{{Path: filepath.Join(dir, "missing")}}
	if _, err := a.Send(context.Background(), out); !errors.Is(err, channel.ErrPermanent) {
		t.Errorf("missing: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{Address: "bot@example.org",
		IMAP: IMAPConfig{Host: "imap.example.org", Password: "p"},
		SMTP: SMTPConfig{Host: "smtp.example.org", Password: "p"}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for want, mut := range map[string]func(*Config){
		"channels.email.address: required":     func(c *Config) { c.Address = "" },
		"channels.email.address":               func(c *Config) { c.Address = "Bot <bot@example.org>" },
		"channels.email.imap.host: required":   func(c *Config) { c.IMAP.Host = "" },
		"channels.email.imap.port":             func(c *Config) { c.IMAP.Port = 70000 },
		"channels.email.imap.security":         func(c *Config) { c.IMAP.Security = "ssl" },
		"channels.email.imap.password":         func(c *Config) { c.IMAP.Password = "" },
		"channels.email.imap.passwordFile":     func(c *Config) { c.IMAP.PasswordFile = "/x" },
		"channels.email.imap.mailbox":          func(c *Config) { c.IMAP.Mailbox = "IN\r\nBOX" },
		"channels.email.smtp.host: required":   func(c *Config) { c.SMTP.Host = "" },
		"channels.email.smtp.security":         func(c *Config) { c.SMTP.Security = "TLS1" },
		"channels.email.smtp.passwordFile":     func(c *Config) { c.SMTP.PasswordFile = "/x" },
		"channels.email.imap.username":         func(c *Config) { c.IMAP.Username = "a\nb" },
		"channels.email.smtp.host: not a host": func(c *Config) { c.SMTP.Host = "a b" },
	} {
		c := good
		mut(&c)
		err := c.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
		if err != nil && strings.Contains(err.Error(), "p\"") {
			t.Errorf("password in %v", err)
		}
	}
	// Defaults.
	a, err := New(good, Deps{Store: channeltest.NewStore()})
	if err != nil {
		t.Fatal(err)
	}
	if a.imap.security != SecurityTLS || a.imap.port != 993 || a.imap.username != "bot@example.org" || a.mailbox != "INBOX" {
		t.Errorf("imap defaults %+v %q", a.imap.addr(), a.mailbox)
	}
	if a.smtp.security != SecurityTLS || a.smtp.port != 465 || a.smtp.username != "bot@example.org" {
		t.Errorf("smtp defaults %+v", a.smtp.addr())
	}
	c := good
	c.IMAP.Port, c.SMTP.Port = 143, 587
	a, _ = New(c, Deps{Store: channeltest.NewStore()})
	if a.imap.security != SecurityStartTLS || a.smtp.security != SecurityStartTLS {
		t.Errorf("port-derived security %s %s", a.imap.security, a.smtp.security)
	}
	// Printing a config never shows the password.
	if s := strings.Join([]string{good.IMAP.String(), good.SMTP.String()}, " "); strings.Contains(s, ":p ") || strings.Contains(s, ":p}") {
		t.Errorf("password printed: %s", s)
	}
}
