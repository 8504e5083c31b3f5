package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/models/openai/openaitest"
)

// TestMainDoctorAndLogs: the wired gateway answers GET /v1/doctor with its
// own state dir, socket and model registry, and keeps its log in
// <state>/logs/gateway.log for GET /v1/logs.
func TestMainDoctorAndLogs(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Reply{Text: "hi"})
	defer srv.Close()
	m := startMain(t, fakeConfig(srv.URL))
	c := client.New(m.Socket)

	rep, err := c.Doctor(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]api.DoctorCheck{}
	for _, ch := range rep.Checks {
		got[ch.Name] = ch
	}
	for _, name := range []string{"state dir", "control socket", "local models", "default model"} {
		if got[name].Status != api.DoctorOK {
			t.Errorf("%s: %+v", name, got[name])
		}
	}
	// Loopback: listening, or a warning when another test's gateway holds 18789.
	if lan := got["LAN API"]; !strings.Contains(got["state dir"].Detail, m.StateDir) ||
		!(lan.Status == api.DoctorOK && strings.Contains(lan.Detail, "listening on 127.0.0.1:")) && lan.Status != api.DoctorWarn {
		t.Errorf("checks %+v", rep.Checks)
	}

	fi, err := os.Stat(filepath.Join(m.StateDir, "logs", "gateway.log"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("log file: %v %v", fi, err)
	}
	var out strings.Builder
	if err := c.Logs(context.Background(), 50, false, &out); err != nil || !strings.Contains(out.String(), `msg="gateway ready"`) {
		t.Errorf("logs: %v\n%s", err, out.String())
	}
}
