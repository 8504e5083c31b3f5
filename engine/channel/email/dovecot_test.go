package email

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

// The IMAP tests run a real dovecot on loopback, in a throw-away
// configuration under a temporary directory. `make test` installs it
// (apt-get install dovecot-imapd); without it they are skipped.

const (
	testUser = "bot@example.org"
	testPass = "s3cret-pass"
)

// findDovecot looks in PATH, then where distributions put it (sbin is
// often not in a normal user's PATH).
func findDovecot() string {
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

type dovecotOpts struct {
	tls    bool // ssl = required, STARTTLS on imap, implicit TLS on imaps
	noIdle bool // advertise no IDLE
}

type dovecot struct {
	t       testing.TB
	bin     string
	dir     string
	conf    string
	port    int // imap (STARTTLS when tls)
	tlsPort int // imaps, when tls
	cmd     *exec.Cmd
	exited  chan struct{}
	roots   *x509.CertPool // trusts the self-signed cert, when tls
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startDovecot writes a config and starts dovecot in the foreground; it is
// stopped at cleanup.
func startDovecot(t testing.TB, o dovecotOpts) *dovecot {
	t.Helper()
	bin := findDovecot()
	if bin == "" {
		t.Skip("dovecot not found: `make test` installs it (apt-get install dovecot-imapd)")
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

	d := &dovecot{t: t, bin: bin, dir: dir, conf: filepath.Join(dir, "dovecot.conf"), port: freePort(t)}
	home := filepath.Join(dir, "mail", "bot")
	passwd := fmt.Sprintf("%s:{PLAIN}%s:%s:%s::%s\n", testUser, testPass, mailUID, mailGID, home)
	if err := os.WriteFile(filepath.Join(dir, "passwd"), []byte(passwd), 0o644); err != nil {
		t.Fatal(err)
	}

	var sslConf, imapsListener string
	if o.tls {
		d.tlsPort = freePort(t)
		certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		d.roots = writeSelfSigned(t, certFile, keyFile)
		sslConf = fmt.Sprintf("ssl = required\nssl_cert = <%s\nssl_key = <%s\ndisable_plaintext_auth = yes\n", certFile, keyFile)
		imapsListener = fmt.Sprintf("  inet_listener imaps {\n    address = 127.0.0.1\n    port = %d\n    ssl = yes\n  }\n", d.tlsPort)
	} else {
		sslConf = "ssl = no\ndisable_plaintext_auth = no\n"
		imapsListener = "  inet_listener imaps {\n    port = 0\n  }\n"
	}
	capConf := ""
	if o.noIdle {
		capConf = "imap_capability = IMAP4rev1 LITERAL+ SASL-IR ENABLE\n"
	}
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
`, dir, d.port, sslConf, internalUser, internalGroup, loginUser, capConf, imapsListener)
	if err := os.WriteFile(d.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	d.start()
	t.Cleanup(func() {
		d.stop()
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "dovecot.log")); err == nil {
				t.Logf("dovecot.log:\n%s", b)
			}
		}
	})
	return d
}

func writeSelfSigned(t testing.TB, certFile, keyFile string) *x509.CertPool {
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

func (d *dovecot) start() {
	d.t.Helper()
	cmd := exec.Command(d.bin, "-F", "-c", d.conf)
	// A file, not a pipe: dovecot's children inherit stdout, and Wait
	// would wait for the last of them to close a pipe.
	outPath := filepath.Join(d.dir, "stdout.log")
	outFile, err := os.OpenFile(outPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		d.t.Fatal(err)
	}
	defer outFile.Close()
	cmd.Stdout, cmd.Stderr = outFile, outFile
	// Its own process group, so that stop reaches the imap processes too
	// (dovecot's master leaves a client's process alive for seconds).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := fileString(outPath)
	if err := cmd.Start(); err != nil {
		d.t.Fatalf("start dovecot: %v", err)
	}
	d.cmd = cmd
	d.exited = make(chan struct{})
	go func() { cmd.Wait(); close(d.exited) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", d.port), time.Second)
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
			log, _ := os.ReadFile(filepath.Join(d.dir, "dovecot.log"))
			d.t.Fatalf("dovecot exited: %s\n%s", out.String(), log)
		default:
		}
		if time.Now().After(deadline) {
			d.stop()
			log, _ := os.ReadFile(filepath.Join(d.dir, "dovecot.log"))
			d.t.Fatalf("dovecot did not answer on port %d: %v\n%s\n%s", d.port, err, out.String(), log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type fileString string

func (f fileString) String() string {
	b, _ := os.ReadFile(string(f))
	return string(b)
}

// stop ends dovecot (and, with it, its client connections).
func (d *dovecot) stop() {
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

func (d *dovecot) restart() {
	d.t.Helper()
	d.stop()
	d.start()
}

// client is a test IMAP client (plain or STARTTLS), logged in and with
// INBOX selected.
func (d *dovecot) client() *imapclient.Client {
	d.t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", d.port)
	var c *imapclient.Client
	var err error
	if d.roots != nil {
		c, err = imapclient.DialStartTLS(addr, &imapclient.Options{TLSConfig: &tls.Config{RootCAs: d.roots}})
	} else {
		c, err = imapclient.DialInsecure(addr, nil)
	}
	if err != nil {
		d.t.Fatal(err)
	}
	if err := c.Login(testUser, testPass).Wait(); err != nil {
		c.Close()
		d.t.Fatal(err)
	}
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		c.Close()
		d.t.Fatal(err)
	}
	return c
}

// appendMail delivers raw to INBOX with IMAP APPEND and returns its UID.
func (d *dovecot) appendMail(raw string) imap.UID {
	d.t.Helper()
	c := d.client()
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

// flags returns the flags of the message with uid.
func (d *dovecot) flags(uid imap.UID) []imap.Flag {
	d.t.Helper()
	c := d.client()
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
