// Package pair is the cryptography of pairing a device with a gateway
// (docs/design.md §9), shared by both ends: the long-lived TLS identities
// (an Ed25519 key in a self-signed certificate, named by the hash of its
// public key, as Syncthing names devices), the pairing code's alphabet, and
// the two halves of a CPace exchange (filippo.io/cpace, ristretto255) whose
// context is both TLS identities and the TLS session's exported keying
// material.
//
// Why it holds against a network attacker: the code never crosses the
// wire; each exchange lets an active attacker test one guess, and the
// gateway counts and locks those. A relay in the middle terminates TLS
// with its own keys on both sides, so the two ends see different
// certificates and different exporters, derive different keys, and the
// key confirmation fails on both ends — even when the relay knows nothing
// but forwards every byte.
//
// Choices where the spec was silent:
//   - A fingerprint is SHA-256 over the certificate's SubjectPublicKeyInfo
//     (the key, not the certificate), so a certificate can be reissued
//     without re-pairing. The device id shown to people is its first 80
//     bits in base32, as XXXX-XXXX-XXXX-XXXX.
//   - Codes are 8 characters from ABCDEFGHJKLMNPQRSTUVWXYZ23456789 (40
//     bits); typed with or without a dash, in any case.
//   - Key confirmation is HMAC-SHA256 over both CPace messages with the
//     role as label, the device's first.
package pair

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base32"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"filippo.io/cpace"
)

// Alphabet is the pairing code's alphabet: no 0/O, 1/I.
const Alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// CodeLen is the length of a pairing code.
const CodeLen = 8

// NewCode returns a random pairing code.
func NewCode() (string, error) {
	b := make([]byte, CodeLen)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(Alphabet))))
		if err != nil {
			return "", fmt.Errorf("make a pairing code: %w", err)
		}
		b[i] = Alphabet[n.Int64()]
	}
	return string(b), nil
}

// NormalizeCode accepts a code as a person types it (lower case, a dash or
// spaces in the middle) and returns it in canonical form, or an error that
// says what is wrong with it.
func NormalizeCode(s string) (string, error) {
	c := strings.ToUpper(strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return -1
		}
		return r
	}, s))
	if len(c) != CodeLen {
		return "", fmt.Errorf("a pairing code has %d characters, got %d", CodeLen, len(c))
	}
	for _, r := range c {
		if !strings.ContainsRune(Alphabet, r) {
			return "", fmt.Errorf("%q is not in a pairing code (codes use %s)", r, Alphabet)
		}
	}
	return c, nil
}

// FormatCode shows a code as XXXX-XXXX for reading out.
func FormatCode(c string) string {
	if len(c) != CodeLen {
		return c
	}
	return c[:4] + "-" + c[4:]
}

// Fingerprint is SHA-256 over a certificate's public key.
type Fingerprint [sha256.Size]byte

// Of returns the fingerprint of cert's public key.
func Of(cert *x509.Certificate) Fingerprint {
	return sha256.Sum256(cert.RawSubjectPublicKeyInfo)
}

// String is the fingerprint in hex.
func (f Fingerprint) String() string { return hex.EncodeToString(f[:]) }

// ParseFingerprint reads a fingerprint written by String.
func ParseFingerprint(s string) (Fingerprint, error) {
	var f Fingerprint
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(f) {
		return f, fmt.Errorf("fingerprint %q: want %d hex digits", s, 2*len(f))
	}
	copy(f[:], b)
	return f, nil
}

// ID is the short, human-checkable device id: XXXX-XXXX-XXXX-XXXX.
func (f Fingerprint) ID() string {
	s := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(f[:10])
	return s[:4] + "-" + s[4:8] + "-" + s[8:12] + "-" + s[12:16]
}

// Identity is a long-lived TLS key pair of a gateway or a device.
type Identity struct {
	Cert        tls.Certificate
	Fingerprint Fingerprint
}

// LoadOrCreate loads the identity <dir>/<name>.key + .crt, making a new one
// (Ed25519, self-signed, common name cn) when there is none. The key file
// is 0600 in a 0700 directory.
func LoadOrCreate(dir, name, cn string) (*Identity, error) {
	keyPath := filepath.Join(dir, name+".key")
	crtPath := filepath.Join(dir, name+".crt")
	if _, err := os.Stat(keyPath); err == nil {
		return load(keyPath, crtPath)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("identity %s: %w", keyPath, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("identity directory: %w", err)
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make a key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, fmt.Errorf("make a serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(100, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("make a certificate: %w", err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode the key: %w", err)
	}
	// The certificate first: a key without its certificate is re-made on
	// the next start, a certificate without its key never is used.
	if err := writeFile(crtPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, err
	}
	if err := writeFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600); err != nil {
		return nil, err
	}
	return load(keyPath, crtPath)
}

func load(keyPath, crtPath string) (*Identity, error) {
	fi, err := os.Stat(keyPath)
	if err != nil {
		return nil, fmt.Errorf("identity key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("identity key %s is readable by others (mode %o): run chmod 600 %s", keyPath, fi.Mode().Perm(), keyPath)
	}
	cert, err := tls.LoadX509KeyPair(crtPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("identity %s: %w", keyPath, err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("identity certificate %s: %w", crtPath, err)
	}
	cert.Leaf = leaf
	return &Identity{Cert: cert, Fingerprint: Of(leaf)}, nil
}

// writeFile writes data through a temporary file and a rename, so a crash
// leaves the old file or the new one.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ExporterLabel is the TLS exporter label both ends use for the pairing
// context (RFC 8446 §7.5).
const ExporterLabel = "EXPORTER-openclaw-pair-v1"

// Binding is what a pairing is bound to: both identities and the TLS
// session they met in.
type Binding struct {
	Device, Gateway Fingerprint
	Exporter        []byte // 32 bytes of ExportKeyingMaterial(ExporterLabel, nil, 32)
}

// BindingOf reads the binding of a TLS connection; self is the local
// identity, device says whether this end is the device (the TLS client).
func BindingOf(cs *tls.ConnectionState, self Fingerprint, device bool) (Binding, error) {
	if len(cs.PeerCertificates) == 0 {
		return Binding{}, errors.New("the other end sent no certificate")
	}
	peer := Of(cs.PeerCertificates[0])
	ekm, err := cs.ExportKeyingMaterial(ExporterLabel, nil, 32)
	if err != nil {
		return Binding{}, fmt.Errorf("TLS exporter: %w", err)
	}
	if device {
		return Binding{Device: self, Gateway: peer, Exporter: ekm}, nil
	}
	return Binding{Device: peer, Gateway: self, Exporter: ekm}, nil
}

func (b Binding) context() *cpace.ContextInfo {
	return cpace.NewContextInfo(b.Device.String(), b.Gateway.String(), append([]byte("openclaw-pair-v1\x00"), b.Exporter...))
}

// ErrMismatch means the two ends did not derive the same key: a wrong
// code, or someone in the middle.
var ErrMismatch = errors.New("the pairing keys do not match: the code was wrong, or someone is in the middle")

// DeviceState is the device's half of an exchange in progress.
type DeviceState struct {
	s    *cpace.State
	msgA []byte
}

// Start begins an exchange on the device: msgA goes to the gateway.
func Start(code string, b Binding) (msgA []byte, st *DeviceState, err error) {
	msgA, s, err := cpace.Start(code, b.context())
	if err != nil {
		return nil, nil, fmt.Errorf("pairing: %w", err)
	}
	return msgA, &DeviceState{s: s, msgA: msgA}, nil
}

// Finish takes the gateway's msgB and returns the device's confirmation
// and a checker for the gateway's.
func (d *DeviceState) Finish(msgB []byte) (confirm []byte, checkGateway func([]byte) error, err error) {
	key, err := d.s.Finish(msgB)
	if err != nil {
		return nil, nil, ErrMismatch
	}
	return mac(key, "device", d.msgA, msgB), func(c []byte) error {
		if !hmac.Equal(c, mac(key, "gateway", d.msgA, msgB)) {
			return ErrMismatch
		}
		return nil
	}, nil
}

// GatewayState is the gateway's half of an exchange in progress.
type GatewayState struct {
	key, msgA, msgB []byte
}

// Exchange answers a device's msgA on the gateway.
func Exchange(code string, b Binding, msgA []byte) (msgB []byte, st *GatewayState, err error) {
	msgB, key, err := cpace.Exchange(code, b.context(), msgA)
	if err != nil {
		return nil, nil, ErrMismatch
	}
	return msgB, &GatewayState{key: key, msgA: msgA, msgB: msgB}, nil
}

// Check verifies the device's confirmation and returns the gateway's.
func (g *GatewayState) Check(confirm []byte) ([]byte, error) {
	if !hmac.Equal(confirm, mac(g.key, "device", g.msgA, g.msgB)) {
		return nil, ErrMismatch
	}
	return mac(g.key, "gateway", g.msgA, g.msgB), nil
}

func mac(key []byte, role string, msgA, msgB []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("openclaw-pair-confirm\x00" + role + "\x00"))
	h.Write(msgA)
	h.Write(msgB)
	return h.Sum(nil)
}
