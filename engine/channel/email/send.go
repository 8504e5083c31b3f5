package email

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/openclaw-edge/edge/engine/channel"
)

// smtpTimeout bounds each SMTP command (go-smtp's default is 5 minutes).
var smtpTimeout = 2 * time.Minute

// Send implements channel.Adapter: one message over SMTP. It does not need
// Run (SMTP is its own connection).
func (a *Adapter) Send(ctx context.Context, m channel.Outbound) (channel.Receipt, error) {
	raw, id, rcpt, err := a.build(m)
	if err != nil {
		return channel.Receipt{}, err
	}
	if err := a.submit(ctx, rcpt, raw); err != nil {
		return channel.Receipt{}, err
	}
	now := a.deps.Now()
	a.mu.Lock()
	a.lastOut = now
	a.mu.Unlock()
	return channel.Receipt{MessageID: id, SentAt: now}, nil
}

// MessageIDFor is the Message-ID (without brackets) a message with this
// idempotency key gets: the same on every retry.
func (a *Adapter) MessageIDFor(idempotencyKey string) string {
	h := sha256.Sum256([]byte("openclaw-email\x00" + a.address + "\x00" + idempotencyKey))
	return "oc." + hex.EncodeToString(h[:16]) + "@" + a.domain
}

// build renders m as an RFC 5322 message; errors are permanent (the
// message can never be sent as it is).
func (a *Adapter) build(m channel.Outbound) (raw []byte, id, rcpt string, err error) {
	rcpt, err = parseAddrSpec(m.ChatID)
	if err != nil {
		return nil, "", "", channel.Permanent(fmt.Errorf("email: send: recipient: %w", err))
	}
	t, err := parseThread(m.Thread)
	if err != nil {
		return nil, "", "", channel.Permanent(err)
	}
	if m.ReplyTo != "" && !validMsgID(m.ReplyTo) {
		return nil, "", "", channel.Permanent(fmt.Errorf("email: send: invalid In-Reply-To id %q", m.ReplyTo))
	}
	if hasCtl(t.Subject) {
		return nil, "", "", channel.Permanent(errors.New("email: send: control characters in the thread subject"))
	}
	var refs []string
	for _, r := range t.References {
		if !validMsgID(r) {
			return nil, "", "", channel.Permanent(fmt.Errorf("email: send: invalid References id %q", r))
		}
		if r != m.ReplyTo {
			refs = append(refs, r)
		}
	}
	if m.ReplyTo != "" {
		refs = append(refs, m.ReplyTo)
	}
	refs = trimRefs(refs)
	if m.IdempotencyKey != "" {
		id = a.MessageIDFor(m.IdempotencyKey)
	} else {
		id = a.MessageIDFor(fmt.Sprintf("%d", time.Now().UnixNano()))
	}
	text := m.Text
	for _, md := range m.Media {
		if md.Path == "" && md.URL != "" {
			// Links only: fetching URLs is not the adapter's business.
			text = strings.TrimRight(text, "\n") + "\n" + md.URL
		}
	}
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\n", "\r\n")

	var h mail.Header
	h.SetDate(a.deps.Now())
	h.SetAddressList("From", []*mail.Address{{Address: a.cfg.Address}})
	h.SetAddressList("To", []*mail.Address{{Address: rcpt}})
	h.SetSubject(replySubject(t.Subject, m.ReplyTo != "", text))
	h.SetMessageID(id)
	if m.ReplyTo != "" {
		h.SetMsgIDList("In-Reply-To", []string{m.ReplyTo})
	}
	if len(refs) > 0 {
		h.SetMsgIDList("References", refs)
	}
	// RFC 3834: we answer people; our answers are not to be answered by
	// their auto-responders (loops).
	h.Set("Auto-Submitted", "auto-replied")
	h.Set("MIME-Version", "1.0")

	var buf bytes.Buffer
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var total int64
	for _, md := range m.Media {
		if md.Path == "" {
			continue
		}
		f, err := os.Open(md.Path)
		if err != nil {
			return nil, "", "", channel.Permanent(fmt.Errorf("email: send: attachment: %w", err))
		}
		files = append(files, f)
		st, err := f.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return nil, "", "", channel.Permanent(fmt.Errorf("email: send: attachment %s: not a regular file", md.Path))
		}
		total += st.Size()
		if total > MaxOutboundMediaBytes {
			return nil, "", "", channel.Permanent(fmt.Errorf("email: send: attachments exceed %d MiB", MaxOutboundMediaBytes>>20))
		}
	}
	textHeader := func() mail.InlineHeader {
		var th mail.InlineHeader
		th.Set("Content-Type", "text/plain; charset=utf-8")
		th.Set("Content-Transfer-Encoding", "quoted-printable")
		return th
	}
	if len(files) == 0 {
		th := textHeader()
		for f := th.Fields(); f.Next(); {
			h.Set(f.Key(), f.Value())
		}
		w, err := mail.CreateSingleInlineWriter(&buf, h)
		if err != nil {
			return nil, "", "", channel.Permanent(fmt.Errorf("email: send: build: %w", err))
		}
		if _, err := io.WriteString(w, text); err != nil {
			return nil, "", "", fmt.Errorf("email: send: build: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, "", "", fmt.Errorf("email: send: build: %w", err)
		}
		return buf.Bytes(), id, rcpt, nil
	}
	mw, err := mail.CreateWriter(&buf, h)
	if err != nil {
		return nil, "", "", channel.Permanent(fmt.Errorf("email: send: build: %w", err))
	}
	tw, err := mw.CreateSingleInline(textHeader())
	if err == nil {
		_, err = io.WriteString(tw, text)
		if err == nil {
			err = tw.Close()
		}
	}
	if err != nil {
		return nil, "", "", fmt.Errorf("email: send: build: %w", err)
	}
	j := 0
	for _, md := range m.Media {
		if md.Path == "" {
			continue
		}
		f := files[j]
		j++
		var ah mail.AttachmentHeader
		ct := md.MimeType
		if ct == "" || hasCtl(ct) {
			ct = mime.TypeByExtension(filepath.Ext(md.Path))
		}
		if ct == "" {
			ct = "application/octet-stream"
		}
		if _, _, err := mime.ParseMediaType(ct); err != nil {
			ct = "application/octet-stream"
		}
		ah.Set("Content-Type", ct)
		ah.SetFilename(sanitizeFilename(filepath.Base(md.Path), ct))
		aw, err := mw.CreateAttachment(ah)
		if err == nil {
			_, err = io.Copy(aw, io.LimitReader(f, MaxOutboundMediaBytes))
			if err == nil {
				err = aw.Close()
			}
		}
		if err != nil {
			return nil, "", "", fmt.Errorf("email: send: attach %s: %w", md.Path, err)
		}
	}
	if err := mw.Close(); err != nil {
		return nil, "", "", fmt.Errorf("email: send: build: %w", err)
	}
	return buf.Bytes(), id, rcpt, nil
}

// replySubject is "Re: <subject>" for a reply (never "Re: Re:"); a message
// that starts a conversation gets its first line as the subject.
func replySubject(subject string, reply bool, text string) string {
	subject = strings.TrimSpace(subject)
	if subject != "" || reply {
		base := subject
		for {
			l := strings.ToLower(base)
			if strings.HasPrefix(l, "re:") {
				base = strings.TrimSpace(base[3:])
				continue
			}
			if strings.HasPrefix(l, "re :") || strings.HasPrefix(l, "aw:") || strings.HasPrefix(l, "sv:") {
				base = strings.TrimSpace(base[strings.IndexByte(base, ':')+1:])
				continue
			}
			break
		}
		if base == "" {
			return "Re: (no subject)"
		}
		return "Re: " + base
	}
	first, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	first = oneLine(first)
	if first == "" {
		return "(no subject)"
	}
	if utf8.RuneCountInString(first) > 60 {
		r := []rune(first)
		first = strings.TrimSpace(string(r[:60])) + "…"
	}
	return first
}

// submit sends raw to rcpt over SMTP.
func (a *Adapter) submit(ctx context.Context, rcpt string, raw []byte) error {
	c, stop, err := a.dialSMTP(ctx)
	if err != nil {
		return fmt.Errorf("email: smtp connect %s (%s): %w", a.smtp.addr(), a.smtp.security, err)
	}
	defer stop()
	defer c.Close()
	if a.smtp.username != "" {
		pw, err := a.smtp.secret()
		if err != nil {
			return fmt.Errorf("email: smtp: %w", err)
		}
		if err := c.Auth(sasl.NewPlainClient("", a.smtp.username, pw)); err != nil {
			// A configuration problem, not the message's: retried.
			return fmt.Errorf("email: smtp auth as %s: %w", a.smtp.username, err)
		}
	}
	if err := c.Mail(a.address, nil); err != nil {
		return smtpErr("MAIL FROM", err)
	}
	if err := c.Rcpt(rcpt, nil); err != nil {
		return smtpErr("RCPT TO", err)
	}
	w, err := c.Data()
	if err != nil {
		return smtpErr("DATA", err)
	}
	if _, err := w.Write(raw); err != nil {
		w.Close()
		return smtpErr("DATA", err)
	}
	// From here on a lost connection may leave a delivered message behind
	// (the retry repeats it with the same Message-ID).
	if err := w.Close(); err != nil {
		return smtpErr("DATA", err)
	}
	c.Quit()
	return nil
}

// smtpErr: a 5xx reply is permanent, anything else is retried.
func smtpErr(stage string, err error) error {
	err = fmt.Errorf("email: smtp %s: %w", stage, err)
	var se *smtp.SMTPError
	if errors.As(err, &se) && se.Code >= 500 && se.Code < 600 {
		return channel.Permanent(err)
	}
	return err
}

func (a *Adapter) dialSMTP(ctx context.Context) (*smtp.Client, func(), error) {
	d := net.Dialer{Timeout: dialTimeout, KeepAliveConfig: keepAlive}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", a.smtp.addr())
	if err != nil {
		return nil, nil, err
	}
	// Cancelling ctx aborts the session (at worst after DATA's final dot,
	// see the package doc); the dial timeout bounds the greeting and TLS.
	stopCtx := context.AfterFunc(ctx, func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(dialTimeout))
	fail := func(err error) (*smtp.Client, func(), error) {
		stopCtx()
		conn.Close()
		return nil, nil, err
	}
	cfg := a.tlsConfig(a.smtp.host)
	var c *smtp.Client
	switch a.smtp.security {
	case SecurityTLS:
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(dctx); err != nil {
			return fail(fmt.Errorf("tls: %w", err))
		}
		c = smtp.NewClient(tc)
	case SecurityStartTLS:
		// EHLO, STARTTLS, EHLO again; refuses a server without STARTTLS.
		c, err = smtp.NewClientStartTLS(conn, cfg)
		if err != nil {
			return fail(fmt.Errorf("starttls: %w", err))
		}
	default:
		c = smtp.NewClient(conn)
	}
	c.CommandTimeout = smtpTimeout
	if a.smtp.security != SecurityStartTLS {
		// Greeting and EHLO now, so that a silent server fails here.
		if err := c.Hello("localhost"); err != nil {
			c.Close()
			return fail(err)
		}
	}
	conn.SetDeadline(time.Time{})
	return c, func() { stopCtx() }, nil
}
