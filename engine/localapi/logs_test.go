package localapi

import (
	"context"
	"errors"
	"fmt"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/logfile"
)

// syncBuffer is a strings.Builder safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLogsEndpoint reads the log's tail and follows it over a Unix socket;
// the follow ends when the client goes away.
func TestLogsEndpoint(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	// First without a log file, then with one: the handler is swapped.
	var handler atomic.Pointer[http.Handler]
	hh := New(h.G, nil, Config{})
	handler.Store(&hh)
	c := client.New(serveUnix(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) })))
	ctx := context.Background()

	var ae *api.Error
	if err := c.Logs(ctx, 10, false, io.Discard); !errors.As(err, &ae) || ae.Code != api.CodeNotFound || !strings.Contains(ae.Message, "journalctl") {
		t.Fatalf("no log file: %v", err)
	}

	lf, err := logfile.Open(filepath.Join(t.TempDir(), "logs", "gateway.log"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	withLogs := New(h.G, nil, Config{Logs: lf})
	handler.Store(&withLogs)
	for i := range 5 {
		fmt.Fprintf(lf, "msg=%d\n", i)
	}
	var out strings.Builder
	if err := c.Logs(ctx, 2, false, &out); err != nil || out.String() != "msg=3\nmsg=4\n" {
		t.Fatalf("tail: %q, %v", out.String(), err)
	}
	if err := c.Logs(ctx, -1, false, &out); err != nil {
		t.Fatal(err)
	}
	if err := c.Logs(ctx, 0, false, io.Discard); err != nil {
		t.Errorf("lines=0: %v", err)
	}

	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got syncBuffer
	done := make(chan error, 1)
	go func() { done <- c.Logs(fctx, 1, true, &got) }()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(got.String(), "msg=later") {
		if time.Now().After(deadline) {
			t.Fatalf("followed %q", got.String())
		}
		fmt.Fprintln(lf, "msg=later") // until the follower is attached
		time.Sleep(20 * time.Millisecond)
	}
	// The tail is the last line before the follower attached.
	if g := got.String(); !strings.HasPrefix(g, "msg=4\n") && !strings.HasPrefix(g, "msg=later\n") {
		t.Errorf("follow started with %q", got.String())
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("follow ended with %v", err)
	}
}

func TestLogsBadLines(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	sock := serveUnix(t, New(h.G, nil, Config{}))
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	resp, err := hc.Get("http://gw" + api.PathLogs + "?lines=lots")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "want a number of lines") {
		t.Errorf("lines=lots: %d %s", resp.StatusCode, body)
	}
}
