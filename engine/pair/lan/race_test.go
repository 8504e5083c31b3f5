package lan_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/pair"
	"github.com/openclaw-edge/edge/engine/pair/lan"
	"github.com/openclaw-edge/edge/engine/store/bolt"
)

// gated holds the first UpdateRecords after arm() until release, so a
// test can run another write in between.
type gated struct {
	engine.Records
	mu      sync.Mutex
	armed   bool
	entered chan struct{}
	release chan struct{}
}

func (g *gated) arm() {
	g.mu.Lock()
	g.armed, g.entered, g.release = true, make(chan struct{}), make(chan struct{})
	g.mu.Unlock()
}

func (g *gated) UpdateRecords(fn func(engine.RecordTx) error) error {
	g.mu.Lock()
	hold := g.armed
	g.armed = false
	entered, release := g.entered, g.release
	g.mu.Unlock()
	if hold {
		close(entered)
		<-release
	}
	return g.Records.UpdateRecords(fn)
}

// pairedServer is a lan.Server whose store already holds one operator
// device (dev), over gated records.
func pairedServer(t *testing.T) (*gated, *lan.Server, *pair.Identity, *bolt.DB) {
	t.Helper()
	dir := t.TempDir()
	db, err := bolt.Open(filepath.Join(dir, "state.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	gw, err := pair.LoadOrCreate(filepath.Join(dir, "identity"), "gateway", "box")
	if err != nil {
		t.Fatal(err)
	}
	dev, err := pair.LoadOrCreate(t.TempDir(), "device", "laptop")
	if err != nil {
		t.Fatal(err)
	}
	fp := dev.Fingerprint
	d := api.Device{ID: fp.ID(), Name: "laptop", Fingerprint: fp.String(), Role: api.RoleOperator, CreatedAt: time.Now()}
	if err := db.UpdateRecords(func(tx engine.RecordTx) error { return tx.Put("devices", fp.String(), d) }); err != nil {
		t.Fatal(err)
	}
	g := &gated{Records: db}
	srv, err := lan.New(lan.Config{Identity: gw, Name: "box", Records: g})
	if err != nil {
		t.Fatal(err)
	}
	return g, srv, dev, db
}

// request runs one request of dev through the LAN handler.
func request(srv *lan.Server, dev *pair.Identity, method, path string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{dev.Cert.Leaf}}
	w := httptest.NewRecorder()
	srv.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})).ServeHTTP(w, r)
	return w
}

// A lastSeen write that started before a role change must not write the
// old role back: the device would be an operator again after a restart.
func TestLastSeenKeepsANewRole(t *testing.T) {
	g, srv, dev, db := pairedServer(t)
	g.arm()
	done := make(chan struct{})
	go func() { defer close(done); request(srv, dev, "GET", api.PathStatus) }() // writes lastSeen
	<-g.entered
	if _, err := srv.SetRole(dev.Fingerprint.ID(), api.RoleViewer); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Rename(dev.Fingerprint.ID(), "renamed"); err != nil {
		t.Fatal(err)
	}
	close(g.release)
	<-done
	again, err := lan.New(lan.Config{Identity: nil, Records: db})
	if err != nil {
		t.Fatal(err)
	}
	ds := again.Devices()
	if len(ds) != 1 || ds[0].Role != api.RoleViewer || ds[0].Name != "renamed" || ds[0].LastSeen.IsZero() {
		t.Fatalf("after a restart: %+v, want the viewer role, the new name and a lastSeen", ds)
	}
}

// Two revocations of one device at once: both succeed, neither panics.
func TestRevokeTwiceAtOnce(t *testing.T) {
	g, srv, dev, _ := pairedServer(t)
	g.arm()
	errc := make(chan error, 1)
	go func() { _, err := srv.Revoke(dev.Fingerprint.ID()); errc <- err }()
	<-g.entered
	if _, err := srv.Revoke(dev.Fingerprint.ID()); err != nil {
		t.Fatal(err)
	}
	close(g.release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Devices()); n != 0 {
		t.Fatalf("%d devices after revoke", n)
	}
	if w := request(srv, dev, "GET", api.PathStatus); w.Code == http.StatusOK {
		t.Fatal("a revoked device was served")
	}
}
