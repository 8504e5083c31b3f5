package localapi

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
)

// An import with ?updatedAt= keeps the session's last activity (migrate
// passes OpenClaw's); without it the session is as new as its import; a
// time after the import is the import's; a bad one is refused.
func TestImportUpdatedAt(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	sock := serveUnix(t, New(h.G, nil, Config{}))
	c := client.New(sock)
	ctx := context.Background()
	src, err := os.ReadFile(filepath.Join("..", "transcript", "testdata", "openclaw.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	then := time.Date(2026, 9, 10, 8, 0, 3, 500e6, time.UTC)
	start := time.Now()
	for _, tc := range []struct {
		key     string
		updated time.Time
		want    func(time.Time) bool
	}{
		{"agent:main:kept", then, func(u time.Time) bool { return u.Equal(then) }},
		{"agent:main:unknown", time.Time{}, func(u time.Time) bool { return !u.Before(start.Add(-time.Minute)) }},
		{"agent:main:future", time.Now().Add(48 * time.Hour), func(u time.Time) bool { return u.Before(time.Now().Add(time.Hour)) }},
	} {
		if _, err := c.ImportWith(ctx, client.ImportOptions{Key: tc.key, UpdatedAt: tc.updated}, bytes.NewReader(src)); err != nil {
			t.Fatalf("%s: %v", tc.key, err)
		}
		e, ok, err := h.G.Sessions().Get("main", engine.SessionKey(tc.key))
		if err != nil || !ok || !tc.want(e.UpdatedAt) {
			t.Errorf("%s: updatedAt %v (%v, %v), sent %v", tc.key, e.UpdatedAt, ok, err, tc.updated)
		}
	}
	// A time that does not parse: refused before anything is stored.
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	resp, err := hc.Post("http://gw"+api.PathSessionImport+"?key=agent:main:bad&updatedAt=yesterday", "application/x-ndjson", bytes.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "?updatedAt=yesterday: want an RFC 3339 time") {
		t.Errorf("bad updatedAt: %d %s", resp.StatusCode, body)
	}
	if _, ok, _ := h.G.Sessions().Get("main", "agent:main:bad"); ok {
		t.Error("a refused import stored a session")
	}
}
