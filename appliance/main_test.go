package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/models/openai/openaitest"
)

// startMain runs a whole gateway in-process from a config file and returns
// once it is ready. The gateway stops when the test ends.
func startMain(t testing.TB, config string) *Main {
	t.Helper()
	return startMainWith(t, config, nil)
}

// startMainWith is startMain with setup applied to the Main before it runs.
func startMainWith(t testing.TB, config string, setup func(*Main)) *Main {
	t.Helper()
	dir, err := os.MkdirTemp("", "ocm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfgPath := filepath.Join(dir, "openclaw.json")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	m := &Main{
		ConfigPath: cfgPath,
		StateDir:   filepath.Join(dir, "state"),
		Socket:     filepath.Join(dir, "gw.sock"),
		Stderr:     testStderr(),
		Ready:      func(*Main) { close(ready) },
	}
	if setup != nil {
		setup(m)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("gateway stopped before ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("gateway not ready after 30 s")
	}
	return m
}

func fakeConfig(url string) string {
	return `{
  models: { providers: { fake: { api: 'openai-completions', baseUrl: '` + url + `', models: [{ id: 'echo' }] } } },
  agents: { defaults: { model: 'fake/echo' } },
}`
}

// TestMainEndToEnd builds the whole gateway in-process (the Main struct),
// checks that systemd hears READY=1 once the API listens, and runs a turn
// through the real control API on its Unix socket.
func TestMainEndToEnd(t *testing.T) {
	notifyDir, err := os.MkdirTemp("", "ocn")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(notifyDir)
	notify := filepath.Join(notifyDir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notify, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", notify)

	srv := openaitest.NewServer(openaitest.Reply{Text: "Hello from the model."})
	defer srv.Close()
	m := startMain(t, fakeConfig(srv.URL))

	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 256)
	n, err := conn.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), "READY=1") {
		t.Fatalf("sd_notify: %q, %v", buf[:n], err)
	}

	fi, err := os.Stat(m.Socket)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v", fi.Mode(), err)
	}
	c := client.New(m.Socket)
	var deltas strings.Builder
	res, err := c.Send(context.Background(), api.SendRequest{Text: "hi"}, func(ev api.Event) {
		if ev.Type == api.EventDelta {
			deltas.WriteString(ev.Text)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reply != "Hello from the model." || deltas.String() != res.Reply || res.Model != "fake/echo" {
		t.Fatalf("result %+v, streamed %q", res, deltas.String())
	}
	st, err := c.Status(context.Background())
	if err != nil || st.Sessions != 1 || st.LastModel != "fake/echo" || st.RSSBytes == 0 {
		t.Fatalf("status %+v %v", st, err)
	}
}

// TestSecondGatewayRefused: two gateways never share a state dir or socket.
func TestSecondGatewayRefused(t *testing.T) {
	srv := openaitest.NewServer()
	defer srv.Close()
	m := startMain(t, fakeConfig(srv.URL))
	second := &Main{ConfigPath: m.ConfigPath, StateDir: m.StateDir, Socket: m.Socket + "2", Stderr: io.Discard}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := second.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("second gateway on the same state: %v", err)
	}
}

// BenchmarkColdStart measures config load → state open → wiring → API
// listening → READY (docs/design.md §11: ≤ 100 ms on this machine).
func BenchmarkColdStart(b *testing.B) {
	srv := openaitest.NewServer()
	defer srv.Close()
	var total time.Duration
	for range b.N {
		start := time.Now()
		func() {
			dir, _ := os.MkdirTemp("", "ocb")
			defer os.RemoveAll(dir)
			cfg := filepath.Join(dir, "c.json")
			_ = os.WriteFile(cfg, []byte(fakeConfig(srv.URL)), 0o600)
			ready := make(chan time.Duration, 1)
			m := &Main{ConfigPath: cfg, StateDir: filepath.Join(dir, "s"), Socket: filepath.Join(dir, "g.sock"), Stderr: io.Discard,
				Ready: func(*Main) { ready <- time.Since(start) }}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- m.Run(ctx) }()
			select {
			case d := <-ready:
				total += d
			case err := <-done:
				b.Fatal(err)
			}
			cancel()
			<-done
		}()
	}
	b.ReportMetric(float64(total)/float64(b.N)/float64(time.Millisecond), "ready-ms")
}

// TestRunnerKilledMidReply: SIGKILL of the local runner while it is
// answering leaves the gateway up, the turn ends with a clear error, and the
// next message starts a fresh runner and is answered.
func TestRunnerKilledMidReply(t *testing.T) {
	needRunner(t) // a real openclaw-runner, as $OPENCLAW_RUNNER
	model, err := filepath.Abs("../../shared/models/stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(model); err != nil {
		t.Skipf("shared test model: %v", err)
	}
	// Two entries for one file: a long reply to kill, then short ones.
	m := startMain(t, `{
  models: {
    providers: { local: { api: 'local', models: [
      { id: 'stories', path: '`+model+`', maxTokens: 4000 },
      { id: 'short', path: '`+model+`', maxTokens: 24 },
    ] } },
    local: { contextSize: 8192, threads: 1, keepAlive: '-1', cacheBudgetMB: 1 },
  },
  agents: { defaults: { model: 'local/stories', promptMode: 'none' } },
}`)
	c := client.New(m.Socket)
	killed := 0
	_, err = c.Send(context.Background(), api.SendRequest{Text: "Once upon a time"}, func(ev api.Event) {
		if ev.Type != api.EventDelta || killed != 0 {
			return
		}
		st, err := c.Status(context.Background())
		if err != nil || len(st.Runners) != 1 {
			t.Errorf("status: %+v %v", st, err)
			return
		}
		killed = st.Runners[0].PID
		if err := syscall.Kill(killed, syscall.SIGKILL); err != nil {
			t.Error(err)
		}
	})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeModelFailed || !strings.Contains(ae.Message, "local runner stopped") {
		t.Fatalf("turn error = %v", err)
	}
	if killed == 0 {
		t.Fatal("the runner was never seen answering")
	}
	// The gateway is up and the next message works with a new runner.
	if _, err := c.Send(context.Background(), api.SendRequest{Text: "/model local/short"}, nil); err != nil {
		t.Fatal(err)
	}
	res, err := c.Send(context.Background(), api.SendRequest{Text: "The end"}, nil)
	if err != nil || res.Model != "local/short" {
		t.Fatalf("next message: %+v %v", res, err)
	}
	st, err := c.Status(context.Background())
	if err != nil || len(st.Runners) != 1 || st.Runners[0].PID == killed {
		t.Fatalf("after restart: %+v %v", st, err)
	}
	// What this box measured for the model, for `openclaw status`.
	if r := st.Runners[0]; r.PromptTokPerSec <= 0 || r.GenTokPerSec <= 0 {
		t.Fatalf("no measured speed after a turn: %+v", r)
	}
	// The transcript holds both turns, the first closed with its error.
	h, err := c.History(context.Background(), "agent:main:main")
	if err != nil || len(h.Entries) < 4 || !strings.Contains(string(h.Entries[1]), `"stopReason":"error"`) {
		t.Fatalf("history: %d entries, %v", len(h.Entries), err)
	}
}

// testStderr is where in-process gateways log: nowhere, unless
// OPENCLAW_TEST_LOG=1 (debugging a test).
func testStderr() io.Writer {
	if os.Getenv("OPENCLAW_TEST_LOG") == "1" {
		return os.Stderr
	}
	return io.Discard
}

// TestWorkspaceBootstrap: the first start writes the bootstrap files into
// the agent's workspace and the first request carries them (BOOTSTRAP.md
// included); once the agent deleted BOOTSTRAP.md, a restart does not bring
// it back, and the files the user edited are kept.
func TestWorkspaceBootstrap(t *testing.T) {
	srv := openaitest.NewServer()
	defer srv.Close()
	dir, err := os.MkdirTemp("", "ocw")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ws := filepath.Join(dir, "ws")
	cfgPath := filepath.Join(dir, "openclaw.json")
	cfg := `{
  models: { providers: { fake: { api: 'openai-completions', baseUrl: '` + srv.URL + `', models: [{ id: 'echo' }] } } },
  agents: { defaults: { model: 'fake/echo', workspace: '` + ws + `' } },
}`
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// turn starts the gateway, sends one message, stops it, and returns
	// the system prompt the model got.
	turn := func() string {
		t.Helper()
		ready := make(chan struct{})
		m := &Main{ConfigPath: cfgPath, StateDir: filepath.Join(dir, "state"), Socket: filepath.Join(dir, "gw.sock"),
			Stderr: testStderr(), Ready: func(*Main) { close(ready) }}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("gateway stopped before ready: %v", err)
		}
		n := len(srv.Requests())
		if _, err := client.New(m.Socket).Send(ctx, api.SendRequest{Text: "hi"}, nil); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		if len(reqs) <= n {
			t.Fatal("the model got no request")
		}
		var req struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(reqs[n], &req); err != nil || len(req.Messages) == 0 || req.Messages[0].Role != "system" {
			t.Fatalf("request %s: %v", reqs[n], err)
		}
		var system string
		if err := json.Unmarshal(req.Messages[0].Content, &system); err != nil {
			t.Fatalf("system content %s: %v", req.Messages[0].Content, err)
		}
		return system
	}

	system := turn()
	for _, name := range []string{"AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "BOOTSTRAP.md"} {
		if fi, err := os.Lstat(filepath.Join(ws, name)); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("%s after the first start: %v", name, err)
		}
		if !strings.Contains(system, "## "+name+"\n") {
			t.Errorf("the first request's system prompt lacks %s", name)
		}
	}

	// The ritual: the agent fills in USER.md and deletes BOOTSTRAP.md.
	if err := os.WriteFile(filepath.Join(ws, "USER.md"), []byte("Ana, Madrid.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ws, "BOOTSTRAP.md")); err != nil {
		t.Fatal(err)
	}
	system = turn()
	if _, err := os.Lstat(filepath.Join(ws, "BOOTSTRAP.md")); !os.IsNotExist(err) {
		t.Fatalf("BOOTSTRAP.md came back after a restart: %v", err)
	}
	if strings.Contains(system, "## BOOTSTRAP.md") || !strings.Contains(system, "Ana, Madrid.") {
		t.Errorf("second start's system prompt:\n%s", system)
	}
}
