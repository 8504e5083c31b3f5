package email

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// sink is an SMTP server on loopback that records what it is sent.
type sink struct {
	addr string
	port int

	mu    sync.Mutex
	msgs  []sunk
	auths []string // "user:pass" of successful AUTH PLAIN
	// rcptErr, if set, answers RCPT TO with it.
	rcptErr *smtp.SMTPError
}

type sunk struct {
	from string
	to   []string
	data string
}

func startSink(t testing.TB, tlsCfg *tls.Config) *sink {
	t.Helper()
	s := &sink{}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &sinkSession{s: s}, nil
	}))
	srv.Domain = "sink.test"
	srv.AllowInsecureAuth = true
	srv.TLSConfig = tlsCfg // offers STARTTLS when set
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	s.port = l.Addr().(*net.TCPAddr).Port
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *sink) messages() []sunk {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sunk(nil), s.msgs...)
}

type sinkSession struct {
	s    *sink
	from string
	to   []string
}

func (ss *sinkSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (ss *sinkSession) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if password != testPass {
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
	ss.s.msgs = append(ss.s.msgs, sunk{from: ss.from, to: ss.to, data: strings.ReplaceAll(string(b), "\r\n", "\n")})
	ss.s.mu.Unlock()
	return nil
}

func (ss *sinkSession) Reset()        { ss.from, ss.to = "", nil }
func (ss *sinkSession) Logout() error { return nil }
