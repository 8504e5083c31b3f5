package emailtest

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Sink is an SMTP server on loopback that records what it is sent. It
// offers AUTH PLAIN (accepting Password for any user) and, given a TLS
// config, STARTTLS.
type Sink struct {
	// Addr is host:port; Port the port alone.
	Addr string
	Port int

	mu      sync.Mutex
	msgs    []Message
	auths   []string
	rcptErr *smtp.SMTPError
}

// Message is one message the sink received.
type Message struct {
	From string
	To   []string
	// Data is the message as sent, with LF line ends.
	Data string
}

// StartSink starts a sink (STARTTLS offered when tlsCfg is set); it is
// closed at the test's cleanup.
func StartSink(t testing.TB, tlsCfg *tls.Config) *Sink {
	t.Helper()
	s := &Sink{}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &sinkSession{s: s}, nil
	}))
	srv.Domain = "sink.test"
	srv.AllowInsecureAuth = true
	srv.TLSConfig = tlsCfg
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = l.Addr().String()
	s.Port = l.Addr().(*net.TCPAddr).Port
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return s
}

// Messages returns what was received so far, in order.
func (s *Sink) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Auths returns "user:pass" of every successful AUTH PLAIN.
func (s *Sink) Auths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auths...)
}

// SetRcptErr makes RCPT TO answer err (nil: accept again).
func (s *Sink) SetRcptErr(err *smtp.SMTPError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rcptErr = err
}

// WaitFor polls until ok holds for the messages received, or fails the
// test after timeout; it returns the messages.
func (s *Sink) WaitFor(t testing.TB, timeout time.Duration, what string, ok func([]Message) bool) []Message {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msgs := s.Messages()
		if ok(msgs) {
			return msgs
		}
		if time.Now().After(deadline) {
			t.Fatalf("SMTP sink: no %s after %s; received %d messages", what, timeout, len(msgs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type sinkSession struct {
	s    *Sink
	from string
	to   []string
}

func (ss *sinkSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (ss *sinkSession) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if password != Password {
			return errors.New("bad password")
		}
		ss.s.mu.Lock()
		ss.s.auths = append(ss.s.auths, username+":"+password)
		ss.s.mu.Unlock()
		return nil
	}), nil
}

func (ss *sinkSession) Mail(from string, _ *smtp.MailOptions) error {
	ss.from = from
	return nil
}

func (ss *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.s.mu.Lock()
	err := ss.s.rcptErr
	ss.s.mu.Unlock()
	if err != nil {
		return err
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *sinkSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	ss.s.mu.Lock()
	ss.s.msgs = append(ss.s.msgs, Message{From: ss.from, To: ss.to, Data: strings.ReplaceAll(string(b), "\r\n", "\n")})
	ss.s.mu.Unlock()
	return nil
}

func (ss *sinkSession) Reset()        { ss.from, ss.to = "", nil }
func (ss *sinkSession) Logout() error { return nil }
