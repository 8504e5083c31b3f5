package email

import (
	"crypto/x509"
	"testing"

	"github.com/emersion/go-imap/v2"

	"github.com/openclaw-edge/edge/engine/channel/email/emailtest"
)

// The IMAP tests run a real dovecot on loopback, in a throw-away
// configuration under a temporary directory (emailtest, shared with the
// gateway's end-to-end and crash tests). `make test` installs it
// (apt-get install dovecot-imapd); without it they are skipped. These
// names keep the tests' short spelling.

const (
	testUser = emailtest.User
	testPass = emailtest.Password
)

type dovecotOpts struct {
	tls    bool // ssl = required, STARTTLS on imap, implicit TLS on imaps
	noIdle bool // advertise no IDLE
}

type dovecot struct {
	*emailtest.Dovecot
	port    int // imap (STARTTLS when tls)
	tlsPort int // imaps, when tls
	roots   *x509.CertPool
}

func startDovecot(t testing.TB, o dovecotOpts) *dovecot {
	t.Helper()
	d := emailtest.StartDovecot(t, emailtest.Options{TLS: o.tls, NoIdle: o.noIdle})
	return &dovecot{Dovecot: d, port: d.Port, tlsPort: d.TLSPort, roots: d.Roots}
}

func writeSelfSigned(t testing.TB, certFile, keyFile string) *x509.CertPool {
	return emailtest.WriteSelfSigned(t, certFile, keyFile)
}

func (d *dovecot) start()                         { d.Start() }
func (d *dovecot) stop()                          { d.Stop() }
func (d *dovecot) appendMail(raw string) imap.UID { return d.Append(raw) }
func (d *dovecot) flags(uid imap.UID) []imap.Flag { return d.Flags(uid) }
