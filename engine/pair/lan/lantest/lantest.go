// Package lantest holds what tests of the LAN API share: a relay that sits
// in the middle of a pairing the way an attacker on the LAN would.
package lantest

import (
	"crypto/tls"
	"io"
	"sync"
	"testing"

	"github.com/openclaw-edge/edge/engine/pair"
)

// Relay listens on listen (host:port; port 0 for any) and relays every
// connection to gateway while terminating TLS on both sides with a key of
// its own: it sees the pairing in the clear and can pass each message on
// unchanged. It returns the address it listens on; it stops with the test.
func Relay(t testing.TB, listen, gateway string) string {
	t.Helper()
	own, err := pair.LoadOrCreate(t.TempDir(), "relay", "relay")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", listen, &tls.Config{Certificates: []tls.Certificate{own.Cert}, ClientAuth: tls.RequireAnyClientCert, MinVersion: tls.VersionTLS13})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := tls.Dial("tcp", gateway, &tls.Config{Certificates: []tls.Certificate{own.Cert}, InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
			if err != nil {
				in.Close()
				continue
			}
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(out, in); out.Close() }()
			go func() { defer wg.Done(); io.Copy(in, out); in.Close() }()
		}
	}()
	return ln.Addr().String()
}
