// Package emailtest runs the real servers the e-mail channel talks to, on
// loopback, for tests: a throw-away dovecot (IMAP, with IDLE) in its own
// configuration under a temporary directory, and an SMTP sink that records
// what it is sent. The email adapter's own tests and the gateway's
// end-to-end and crash tests (appliance) share them, so there is one way
// to start a test dovecot.
//
// dovecot is a system package (Debian: dovecot-imapd; `make deps`, and
// with it `make test`, installs it). StartDovecot skips the test, saying
// so, where it is missing. Nothing here touches a system dovecot: the test
// instance has its own base_dir, state_dir, instance name and free
// loopback ports, never 143/993.
package emailtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
)

// The default mailbox account of a test dovecot, and the password the SMTP
// sink accepts for AUTH PLAIN.
const (
	User     = "bot@example.org"
	Password = "s3cret-pass"
)

// FindDovecot looks in PATH, then where distributions put it (sbin is
// often not in a normal user's PATH); "" when it is not installed.
func FindDovecot() string {
	if p, err := exec.LookPath("dovecot"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/dovecot", "/usr/local/sbin/dovecot", "/opt/homebrew/sbin/dovecot"} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// Options configure a test dovecot.
type Options struct {
	// TLS: ssl = required, STARTTLS on the imap port, implicit TLS on an
	// imaps port, with a self-signed certificate (Dovecot.Roots trusts it).
	TLS bool
	// NoIdle: advertise no IDLE (the adapter then polls).
	NoIdle bool
	// User and Password of the one mailbox ("" = User, Password).
	User, Password string
}

// Dovecot is a running test dovecot. It is stopped at the test's cleanup.
type Dovecot struct {
	t    testing.TB
	bin  string
	conf string
	// Dir holds the config, the mail and dovecot.log.
	Dir string
	// Port is the imap port (STARTTLS when TLS); TLSPort the imaps port
	// (TLS only).
	Port, TLSPort int
	// Roots trusts the self-signed certificate (TLS only).
	Roots *x509.CertPool
	// User and Password log in to the mailbox.
	User, Password string

	cmd    *exec.Cmd
	exited chan struct{}
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartDovecot writes a config and starts dovecot in the foreground; it is
// stopped at cleanup (and its log printed if the test failed). The test is
// skipped when dovecot is not installed.
func StartDovecot(t testing.TB, o Options) *Dovecot {
	t.Helper()
	bin := FindDovecot()
	if bin == "" {
		t.Skip("dovecot not found: `make test` installs it (apt-get install dovecot-imapd)")
	}
	if o.User == "" {
		o.User = User
	}
	if o.Password == "" {
		o.Password = Password
	}
	// Not t.TempDir(): its parents are private (0700) and dovecot's
	// unprivileged processes must reach the sockets and the mail.
	dir, err := os.MkdirTemp("", "email-dovecot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"base", "state", "mail"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// Who runs what. As root, dovecot refuses to run its login process as
	// root or to give root's uid to mail: use the package's own users
	// (dovenull for logins, dovecot for internals and the mail). As
	// anyone else, everything runs as the current user.
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	g, err := user.LookupGroupId(me.Gid)
	if err != nil {
		t.Fatal(err)
	}
	loginUser, internalUser, internalGroup := me.Username, me.Username, g.Name
	mailUID, mailGID := me.Uid, me.Gid
	if os.Geteuid() == 0 {
		dv, err1 := user.Lookup("dovecot")
		_, err2 := user.Lookup("dovenull")
		if err1 != nil || err2 != nil {
			t.Skip("running as root needs the dovecot and dovenull users (installed with dovecot-imapd)")
		}
		dg, err := user.LookupGroupId(dv.Gid)
		if err != nil {
			t.Fatal(err)
		}
		loginUser, internalUser, internalGroup = "dovenull", "dovecot", dg.Name
		mailUID, mailGID = dv.Uid, dv.Gid
		var uid, gid int
		fmt.Sscan(dv.Uid, &uid)
		fmt.Sscan(dv.Gid, &gid)
		if err := os.Chown(filepath.Join(dir, "mail"), uid, gid); err != nil {
			t.Fatal(err)
		}
	}

	d := &Dovecot{t: t, bin: bin, Dir: dir, conf: filepath.Join(dir, "dovecot.conf"), Port: FreePort(t), User: o.User, Password: o.Password}
	home := filepath.Join(dir, "mail", "bot")
	passwd := fmt.Sprintf("%s:{PLAIN}%s:%s:%s::%s\n", o.User, o.Password, mailUID, mailGID, home)
	if err := os.WriteFile(filepath.Join(dir, "passwd"), []byte(passwd), 0o644); err != nil {
		t.Fatal(err)
	}

	var sslConf, imapsListener string
	if o.TLS {
		d.TLSPort = FreePort(t)
		certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		d.Roots = WriteSelfSigned(t, certFile, keyFile)
		sslConf = fmt.Sprintf("ssl = required\nssl_cert = <%s\nssl_key = <%s\ndisable_plaintext_auth = yes\n", certFile, keyFile)
		imapsListener = fmt.Sprintf("  inet_listener imaps {\n    address = 127.0.0.1\n    port = %d\n    ssl = yes\n  }\n", d.TLSPort)
	} else {
		sslConf = "ssl = no\ndisable_plaintext_auth = no\n"
		imapsListener = "  inet_listener imaps {\n    port = 0\n  }\n"
	}
	capConf := ""
	if o.NoIdle {
		capConf = "imap_capability = IMAP4rev1 LITERAL+ SASL-IR ENABLE\n"
	}
	// Its own base_dir, state_dir and instance name: a system dovecot
	// (the package's service, on 143/993) is neither used nor disturbed.
	conf := fmt.Sprintf(`# throw-away test config
protocols = imap
listen = 127.0.0.1
base_dir = %[1]s/base
state_dir = %[1]s/state
instance_name = email-test-%[2]d
log_path = %[1]s/dovecot.log
info_log_path = %[1]s/dovecot.log
%[3]sauth_mechanisms = plain login
default_internal_user = %[4]s
default_internal_group = %[5]s
default_login_user = %[6]s
first_valid_uid = 1
mail_location = maildir:~/Maildir
mailbox_idle_check_interval = 1 secs
%[7]spassdb {
  driver = passwd-file
  args = %[1]s/passwd
}
userdb {
  driver = passwd-file
  args = %[1]s/passwd
}
service imap-login {
  chroot =
  inet_listener imap {
    address = 127.0.0.1
    port = %[2]d
  }
%[8]s}
service anvil {
  chroot =
}
`, dir, d.Port, sslConf, internalUser, internalGroup, loginUser, capConf, imapsListener)
	if err := os.WriteFile(d.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	d.Start()
	t.Cleanup(func() {
		d.Stop()
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "dovecot.log")); err == nil {
				t.Logf("dovecot.log:\n%s", b)
			}
		}
	})
	return d
}

// WriteSelfSigned writes a self-signed certificate for 127.0.0.1 and
// localhost and its key, and returns a pool that trusts it.
func WriteSelfSigned(t testing.TB, certFile, keyFile string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

// Start starts dovecot (again, after Stop) and returns once it greets on
// Port.
func (d *Dovecot) Start() {
	d.t.Helper()
	cmd := exec.Command(d.bin, "-F", "-c", d.conf)
	// A file, not a pipe: dovecot's children inherit stdout, and Wait
	// would wait for the last of them to close a pipe.
	outPath := filepath.Join(d.Dir, "stdout.log")
	outFile, err := os.OpenFile(outPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		d.t.Fatal(err)
	}
	defer outFile.Close()
	cmd.Stdout, cmd.Stderr = outFile, outFile
	// Its own process group, so that Stop reaches the imap processes too
	// (dovecot's master leaves a client's process alive for seconds).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		d.t.Fatalf("start dovecot: %v", err)
	}
	d.cmd = cmd
	d.exited = make(chan struct{})
	go func() { cmd.Wait(); close(d.exited) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", d.Port), time.Second)
		if err == nil {
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 256)
			n, _ := c.Read(buf)
			c.Close()
			if strings.HasPrefix(string(buf[:n]), "* OK") {
				return
			}
		}
		select {
		case <-d.exited:
			d.cmd = nil
			out, _ := os.ReadFile(outPath)
			d.t.Fatalf("dovecot exited: %s\n%s", out, d.Log())
		default:
		}
		if time.Now().After(deadline) {
			d.Stop()
			out, _ := os.ReadFile(outPath)
			d.t.Fatalf("dovecot did not answer on port %d: %v\n%s\n%s", d.Port, err, out, d.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Log returns dovecot.log.
func (d *Dovecot) Log() string {
	b, _ := os.ReadFile(filepath.Join(d.Dir, "dovecot.log"))
	return string(b)
}

// Stop ends dovecot (and, with it, its client connections).
func (d *Dovecot) Stop() {
	if d.cmd == nil {
		return
	}
	pgid := d.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(10 * time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-d.exited
	}
	// Children that outlived the master.
	syscall.Kill(-pgid, syscall.SIGKILL)
	d.cmd = nil
}

// Restart stops and starts dovecot on the same ports.
func (d *Dovecot) Restart() {
	d.t.Helper()
	d.Stop()
	d.Start()
}

// Client returns an IMAP client (plain, or STARTTLS with TLS), logged in
// and with INBOX selected. The caller closes it.
func (d *Dovecot) Client() *imapclient.Client {
	d.t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", d.Port)
	var c *imapclient.Client
	var err error
	if d.Roots != nil {
		c, err = imapclient.DialStartTLS(addr, &imapclient.Options{TLSConfig: &tls.Config{RootCAs: d.Roots}})
	} else {
		c, err = imapclient.DialInsecure(addr, nil)
	}
	if err != nil {
		d.t.Fatal(err)
	}
	if err := c.Login(d.User, d.Password).Wait(); err != nil {
		c.Close()
		d.t.Fatal(err)
	}
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		c.Close()
		d.t.Fatal(err)
	}
	return c
}

// Append delivers raw (LF or CRLF line ends) to INBOX with IMAP APPEND and
// returns its UID.
func (d *Dovecot) Append(raw string) imap.UID {
	d.t.Helper()
	c := d.Client()
	defer c.Close()
	raw = strings.ReplaceAll(strings.ReplaceAll(raw, "\r\n", "\n"), "\n", "\r\n")
	cmd := c.Append("INBOX", int64(len(raw)), nil)
	if _, err := cmd.Write([]byte(raw)); err != nil {
		d.t.Fatal(err)
	}
	if err := cmd.Close(); err != nil {
		d.t.Fatal(err)
	}
	data, err := cmd.Wait()
	if err != nil {
		d.t.Fatal(err)
	}
	return data.UID
}

// Flags returns the flags of the INBOX message with uid.
func (d *Dovecot) Flags(uid imap.UID) []imap.Flag {
	d.t.Helper()
	c := d.Client()
	defer c.Close()
	msgs, err := c.Fetch(imap.UIDSetNum(uid), &imap.FetchOptions{Flags: true, UID: true}).Collect()
	if err != nil {
		d.t.Fatal(err)
	}
	if len(msgs) != 1 {
		d.t.Fatalf("uid %d: %d messages", uid, len(msgs))
	}
	return msgs[0].Flags
}
