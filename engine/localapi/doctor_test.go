package localapi

import (
	"context"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/doctor"
)

// TestDoctorEndpoint asks GET /v1/doctor over a Unix socket: the checks
// run in the gateway with what the wiring gave it (the checks themselves
// are tested in engine/doctor).
func TestDoctorEndpoint(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	stateDir := t.TempDir()
	if err := os.Chmod(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	dc := DoctorConfig{
		Models: func() []doctor.ModelFile { return []doctor.ModelFile{{Name: "gone", Path: "/nonexistent/gone.gguf"}} },
		Bind:   "loopback",
		Facts: func(in *doctor.Inputs) {
			in.ClockSync = func() doctor.Sync { return doctor.Synced }
		},
	}
	// The handler needs the socket's path, known once it is served.
	var handler atomic.Pointer[http.Handler]
	sock := serveUnix(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) }))
	hh := New(h.G, nil, Config{StateDir: stateDir, Doctor: dc, Socket: sock})
	handler.Store(&hh)
	if err := os.Chmod(sock, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := client.New(sock).Doctor(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]api.DoctorCheck{}
	for _, c := range rep.Checks {
		got[c.Name] = c
	}
	if rep.OK {
		t.Errorf("report ok with a missing model file: %+v", rep)
	}
	for name, status := range map[string]string{
		doctor.NameStateDir: api.DoctorOK, doctor.NameSocket: api.DoctorOK, doctor.NameLAN: api.DoctorOK,
		doctor.NameModel: api.DoctorOK, "model gone": api.DoctorFail, doctor.NameChannels: api.DoctorOK,
	} {
		if got[name].Status != status {
			t.Errorf("%s: %+v, want %s", name, got[name], status)
		}
	}
	if c := got["model gone"]; !strings.Contains(c.Detail, "/nonexistent/gone.gguf") || c.Fix == "" {
		t.Errorf("model check: %+v", c)
	}
}
