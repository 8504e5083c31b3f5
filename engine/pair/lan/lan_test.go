package lan_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/localapi"
	"github.com/openclaw-edge/edge/engine/pair"
	"github.com/openclaw-edge/edge/engine/pair/lan"
	"github.com/openclaw-edge/edge/engine/pair/lan/lantest"
	"github.com/openclaw-edge/edge/engine/store/bolt"
)

type box struct {
	srv  *lan.Server
	addr string
	id   *pair.Identity
	db   *bolt.DB
}

// startBox runs a LAN server over a real TLS listener on loopback whose
// control API answers /v1/status, a session reset, and the device
// endpoints (engine/localapi's, over this server's record).
func startBox(t *testing.T, dir string) *box {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, "state.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := pair.LoadOrCreate(filepath.Join(dir, "identity"), "gateway", "box")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := lan.New(lan.Config{Identity: id, Name: "box", Records: db})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc(api.PathStatus, func(w http.ResponseWriter, r *http.Request) {
		api.WriteJSON(w, http.StatusOK, api.Status{Version: "test"})
	})
	mux.HandleFunc("POST /v1/sessions/reset", func(w http.ResponseWriter, r *http.Request) {
		api.WriteJSON(w, http.StatusOK, api.SessionInfo{Key: "k"})
	})
	// The device endpoints, as the gateway serves them behind this layer.
	mux.Handle("/", localapi.New(nil, nil, localapi.Config{Devices: srv}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler(mux), ConnContext: srv.ConnContext, ConnState: srv.ConnState}
	go hs.Serve(tls.NewListener(ln, srv.TLSConfig()))
	t.Cleanup(func() { hs.Close(); db.Close() })
	return &box{srv: srv, addr: ln.Addr().String(), id: id, db: db}
}

func device(t *testing.T, name string) tls.Certificate {
	t.Helper()
	id, err := pair.LoadOrCreate(t.TempDir(), "device", name)
	if err != nil {
		t.Fatal(err)
	}
	return id.Cert
}

func code(t *testing.T, b *box) string {
	t.Helper()
	c, err := b.srv.NewCode()
	if err != nil {
		t.Fatal(err)
	}
	return c.Code
}

func wrong(c string) string {
	if c[0] == 'A' {
		return "B" + c[1:]
	}
	return "A" + c[1:]
}

func errCode(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}

func TestPairThenUse(t *testing.T) {
	ctx := context.Background()
	b := startBox(t, t.TempDir())
	dev := device(t, "laptop")

	// Not paired: only pairing answers.
	if _, err := client.NewTLS(b.addr, dev, b.id.Fingerprint).Status(ctx); errCode(err) != api.CodeNotPaired {
		t.Fatalf("status before pairing: %v", err)
	}
	if _, err := client.Pair(ctx, b.addr, dev, "ABCD2345", "laptop"); errCode(err) != api.CodeNoCode {
		t.Fatalf("pair without a code: %v", err)
	}
	c := code(t, b)
	p, err := client.Pair(ctx, b.addr, dev, pair.FormatCode(c), "laptop")
	if err != nil {
		t.Fatal(err)
	}
	if p.Fingerprint != b.id.Fingerprint || p.Done.Device.Name != "laptop" || p.Done.Device.Role != api.RoleOperator || p.Done.GatewayID != b.id.Fingerprint.ID() {
		t.Fatalf("paired: %+v", p)
	}
	cl := client.NewTLS(b.addr, dev, p.Fingerprint)
	if st, err := cl.Status(ctx); err != nil || st.Version != "test" {
		t.Fatalf("status after pairing: %v %v", st, err)
	}
	// Single use.
	if _, err := client.Pair(ctx, b.addr, device(t, "other"), c, "other"); errCode(err) != api.CodeNoCode {
		t.Fatalf("a used code paired again: %v", err)
	}
	// A gateway with another key is refused by the pin.
	other := startBox(t, t.TempDir())
	if _, err := client.NewTLS(other.addr, dev, p.Fingerprint).Status(ctx); !errors.Is(err, client.ErrKeyChanged) {
		t.Fatalf("another gateway's key: %v", err)
	}
	// Devices persist across a restart of the server.
	srv2, err := lan.New(lan.Config{Identity: b.id, Name: "box", Records: b.db})
	if err != nil {
		t.Fatal(err)
	}
	if ds := srv2.Devices(); len(ds) != 1 || ds[0].Name != "laptop" {
		t.Fatalf("devices after restart: %+v", ds)
	}
}

func TestWrongCodesLock(t *testing.T) {
	ctx := context.Background()
	b := startBox(t, t.TempDir())
	c := code(t, b)
	dev := device(t, "mallory")
	for i := range lan.MaxTries {
		_, err := client.Pair(ctx, b.addr, dev, wrong(c), "mallory")
		if errCode(err) != api.CodePairFailed {
			t.Fatalf("wrong code #%d: %v", i+1, err)
		}
	}
	// Locked: even the right code is refused now.
	if _, err := client.Pair(ctx, b.addr, device(t, "laptop"), c, "laptop"); errCode(err) != api.CodePairLocked {
		t.Fatalf("right code after 5 wrong: %v", err)
	}
	if n := len(b.srv.Devices()); n != 0 {
		t.Fatalf("%d devices after failed pairings", n)
	}
	// A new code works.
	if _, err := client.Pair(ctx, b.addr, device(t, "laptop"), code(t, b), "laptop"); err != nil {
		t.Fatalf("new code: %v", err)
	}
}

func TestRelayInTheMiddleFails(t *testing.T) {
	ctx := context.Background()
	b := startBox(t, t.TempDir())
	c := code(t, b)
	_, err := client.Pair(ctx, lantest.Relay(t, "127.0.0.1:0", b.addr), device(t, "laptop"), c, "laptop")
	if errCode(err) != api.CodePairFailed {
		t.Fatalf("pairing through a relay: %v, want %s", err, api.CodePairFailed)
	}
	if n := len(b.srv.Devices()); n != 0 {
		t.Fatalf("the relay got a device recorded: %+v", b.srv.Devices())
	}
}

func TestRevokeClosesOpenConnections(t *testing.T) {
	ctx := context.Background()
	b := startBox(t, t.TempDir())
	dev := device(t, "laptop")
	p, err := client.Pair(ctx, b.addr, dev, code(t, b), "laptop")
	if err != nil {
		t.Fatal(err)
	}
	cl := client.NewTLS(b.addr, dev, p.Fingerprint)
	if _, err := cl.Status(ctx); err != nil { // leaves a kept-alive connection
		t.Fatal(err)
	}
	if ds := b.srv.Devices(); len(ds) != 1 || !ds[0].Connected {
		t.Fatalf("devices: %+v", ds)
	}
	if _, err := b.srv.Revoke(p.Done.Device.ID[:9]); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Status(ctx); errCode(err) != api.CodeNotPaired {
		t.Fatalf("status after revoke: %v", err)
	}
}

func TestViewerOnlyReads(t *testing.T) {
	ctx := context.Background()
	b := startBox(t, t.TempDir())
	dev := device(t, "tablet")
	p, err := client.Pair(ctx, b.addr, dev, code(t, b), "tablet")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.srv.SetRole(p.Done.Device.ID, api.RoleViewer); err != nil {
		t.Fatal(err)
	}
	cl := client.NewTLS(b.addr, dev, p.Fingerprint)
	if _, err := cl.Status(ctx); err != nil {
		t.Fatalf("viewer read: %v", err)
	}
	if _, err := cl.Reset(ctx, "agent:main:main"); errCode(err) != api.CodeForbidden {
		t.Fatalf("viewer write: %v", err)
	}
	if _, err := cl.PairCode(ctx); errCode(err) != api.CodeForbidden {
		t.Fatalf("pair code over TLS: %v", err)
	}
	_ = time.Second
}

// A stranger's connection must not outlive a failed pairing request: the
// listener's connection slots are for paired devices, and a keep-alive on
// /v1/pair/* would let one host hold them all by sending a bogus finish
// every idle timeout.
func TestStrangerPairFailureClosesConnection(t *testing.T) {
	b := startBox(t, t.TempDir())
	dev := device(t, "mallory")
	for _, tc := range []struct{ path, body string }{
		{api.PathPairFinish, `{"session":"nope","confirm":"AAAA"}`},
		{api.PathPairStart, `{"name":"m","msgA":"AAAA"}`}, // no code active
		{api.PathPairStart, `not json`},
	} {
		conn, err := tls.Dial("tcp", b.addr, &tls.Config{Certificates: []tls.Certificate{dev}, InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
		if err != nil {
			t.Fatal(err)
		}
		req := "POST " + tc.path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(tc.body)) + "\r\n\r\n" + tc.body
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			t.Fatalf("%s: %s", tc.path, resp.Status)
		}
		if !resp.Close {
			t.Errorf("%s %s: the connection is kept alive after a failed pairing request", tc.path, tc.body)
		}
		if _, err := br.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s: connection still open: %v", tc.path, err)
		}
		conn.Close()
	}
}
