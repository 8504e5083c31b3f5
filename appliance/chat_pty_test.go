//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/models/openai/openaitest"
)

// TestChatPTY drives the real openclaw CLI in a pseudo-terminal against a
// real gateway process (both are this test binary, as in the scripts):
// Ctrl-C while a reply streams stops the turn on the gateway, says what was
// kept and returns to the prompt, and so does /stop typed meanwhile; the
// next message is answered at once;
// the history survives a restart of chat; Ctrl-C at an empty prompt exits
// 130 and Ctrl-D exits 0.
func TestChatPTY(t *testing.T) {
	// The first reply streams half its text and then stalls until the
	// gateway gives up on it: only a /stop ends that turn.
	story := "Once upon a time there was a small garden behind a house, and in it grew tomatoes."
	g := startChatGateway(t, openaitest.Reply{Text: story, Stall: true},
		openaitest.Reply{Text: "Another story begins in a forest far away, where the trees talk to each other.", Stall: true})
	cliBin, env, cl, dir := g.cliBin, g.env, g.cl, g.dir

	// First chat: a message, Ctrl-C mid-reply, the next message.
	c := startPTY(t, cliBin, env)
	c.waitFor("Ctrl-D or /quit to leave")
	c.waitFor("you> ")
	c.send("tell me a story\r")
	c.waitFor("Once upon")
	c.send("\x03") // Ctrl-C: a key in chat's raw terminal; it stops the turn
	c.waitFor("⏹ stopped; the session keeps your message and the partial reply (")
	c.waitFor("you> ")
	// /stop typed while the next reply streams does the same.
	c.send("another one\r")
	c.waitFor("Another story")
	c.send("/stop\r")
	c.waitFor("⏹ stopped; the session keeps your message and the partial reply (")
	c.waitFor("you> ")
	start := time.Now()
	c.send("and now?\r")
	c.waitFor("echo: and now?")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the message after the stop took %s: the stopped turn held the session", d)
	}
	c.waitFor("you> ")
	c.send("\x04") // Ctrl-D at the prompt
	if code := c.wait(); code != 0 {
		t.Fatalf("chat after Ctrl-D exited %d, want 0\n%s", code, c.output())
	}

	// The gateway kept the partial reply, marked as aborted.
	h, err := cl.History(context.Background(), "agent:main:main")
	if err != nil {
		t.Fatal(err)
	}
	var entries []string
	for _, e := range h.Entries {
		entries = append(entries, string(e))
	}
	all := strings.Join(entries, "\n")
	if !strings.Contains(all, `"stopReason":"aborted"`) || !strings.Contains(all, "Once upon") {
		t.Errorf("the transcript does not keep the stopped partial reply:\n%s", all)
	}

	// The history file: private, with both messages.
	hist := filepath.Join(dir, "cli", "chat_history")
	fi, err := os.Stat(hist)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("history file mode %v, want 0600", fi.Mode().Perm())
	}
	if data, _ := os.ReadFile(hist); string(data) != "tell me a story\nanother one\nand now?\n" {
		t.Errorf("history file = %q", data)
	}

	// Second chat: the Up arrow recalls the last message of the first one;
	// Ctrl-C with text typed clears the line; at an empty prompt it exits
	// 130.
	c = startPTY(t, cliBin, env)
	c.waitFor("you> ")
	c.send("\x1b[A")
	c.waitFor("and now?")
	c.send("\r")
	c.waitFor("echo: and now?")
	c.waitFor("you> ")
	c.send("half typed")
	c.waitFor("half typed")
	c.send("\x03")
	c.waitFor("you> ")
	c.send("\x03")
	if code := c.wait(); code != 130 {
		t.Fatalf("chat after Ctrl-C at an empty prompt exited %d, want 130\n%s", code, c.output())
	}
	if strings.Contains(c.output(), "echo: half typed") {
		t.Errorf("the cleared line was sent:\n%s", c.output())
	}
}

// chatGateway is a real gateway process for the chat tests, with a fake
// model that replies replies in order, then echoes.
type chatGateway struct {
	cliBin string
	env    []string
	cl     *client.Client
	dir    string
}

func startChatGateway(t *testing.T, replies ...openaitest.Reply) *chatGateway {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end")
	}
	gwBin, err := exec.LookPath("openclaw-gateway")
	if err != nil {
		t.Fatal(err)
	}
	cliBin, err := exec.LookPath("openclaw")
	if err != nil {
		t.Fatal(err)
	}
	srv := openaitest.NewServer(replies...)
	t.Cleanup(srv.Close)

	dir, err := os.MkdirTemp("", "ocpty") // short: a Unix socket path is limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "gw.sock")
	cfg := filepath.Join(dir, "openclaw.json")
	conf := `{
  models: { providers: { fake: { api: 'openai-completions', baseUrl: '` + srv.URL + `', models: [{ id: 'echo' }, { id: 'other' }] } } },
  agents: { defaults: { model: 'fake/echo', workspace: '` + filepath.Join(dir, "workspace") + `' } },
}`
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"OPENCLAW_SOCKET="+sock,
		"OPENCLAW_STATE_DIR="+filepath.Join(dir, "state"),
		"OPENCLAW_CONFIG_DIR="+filepath.Join(dir, "cli"),
		"HOME="+dir,
		"TERM=xterm",
		"GORACE=atexit_sleep_ms=0",
	)

	gw := exec.Command(gwBin, "run", "--config", cfg, "--socket", sock)
	gw.Env = env
	var gwLog strings.Builder
	gw.Stdout, gw.Stderr = &lockedWriter{w: &gwLog}, &lockedWriter{w: &gwLog}
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		gw.Process.Signal(os.Interrupt)
		gw.Wait()
		if t.Failed() {
			t.Logf("gateway log:\n%s", gwLog.String())
		}
	})
	cl := client.New(sock)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := cl.Status(context.Background()); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("gateway did not come up: %v", err)
		}
	}
	return &chatGateway{cliBin: cliBin, env: env, cl: cl, dir: dir}
}

// TestChatPTYKeysDuringReply: keys typed while a reply streams are kept
// for the next prompt, in order — text shows in it, and a Ctrl-D pressed
// the moment the reply shows leaves chat (it used to be lost when the
// terminal went back to its line mode for the turn). The banner names the
// session's model: its /model override.
func TestChatPTYKeysDuringReply(t *testing.T) {
	g := startChatGateway(t, openaitest.Reply{Text: "The first story begins slowly and then stalls for good.", Stall: true})

	c := startPTY(t, g.cliBin, g.env)
	c.waitFor("model fake/echo · session agent:main:main")
	c.waitFor("you> ")
	c.send("first\r")
	c.waitFor("The first")
	c.send("draft") // while the reply streams: not shown, kept
	c.send("\x03")
	c.waitFor("⏹ stopped")
	c.waitFor("you> ")
	c.waitFor("draft")
	c.send(" again\r")
	c.waitFor("echo: draft again")

	c.waitFor("you> ")
	c.send("/model fake/other\r")
	c.waitFor("This session now uses fake/other.")
	c.waitFor("you> ")
	c.send("tell me\r")
	c.waitFor("echo: ")
	c.send("\x04") // at once: the turn may not have ended yet
	if code := c.wait(); code != 0 {
		t.Fatalf("chat after Ctrl-D exited %d, want 0\n%s", code, c.output())
	}
	if out := c.output(); strings.Contains(out, "(typed ahead") {
		t.Errorf("a Ctrl-D alone was reported as a line typed ahead:\n%s", out)
	}

	// A new chat names the override.
	c = startPTY(t, g.cliBin, g.env)
	c.waitFor("model fake/other · session agent:main:main")
	c.waitFor("you> ")
	c.send("\x04")
	if code := c.wait(); code != 0 {
		t.Fatalf("chat after Ctrl-D exited %d, want 0\n%s", code, c.output())
	}
}

// ptyChat is the CLI running in a pseudo-terminal.
type ptyChat struct {
	t    *testing.T
	cmd  *exec.Cmd
	f    *os.File
	mu   sync.Mutex
	out  strings.Builder
	seen int // output up to here has been matched
	done chan struct{}
}

func startPTY(t *testing.T, bin string, env []string) *ptyChat {
	t.Helper()
	cmd := exec.Command(bin, "chat")
	cmd.Env = env
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	c := &ptyChat{t: t, cmd: cmd, f: f, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			c.mu.Lock()
			c.out.Write(buf[:n])
			c.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		f.Close()
	})
	return c
}

func (c *ptyChat) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

func (c *ptyChat) send(s string) {
	c.t.Helper()
	if _, err := c.f.WriteString(s); err != nil {
		c.t.Fatalf("write to the terminal: %v", err)
	}
}

// waitFor waits until s appears in the output after what was matched
// before.
func (c *ptyChat) waitFor(s string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c.mu.Lock()
		out := c.out.String()
		if i := strings.Index(out[c.seen:], s); i >= 0 {
			c.seen += i + len(s)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if time.Now().After(deadline) {
			c.t.Fatalf("waited 30s for %q; the terminal shows:\n%s", s, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wait waits for the CLI to exit and returns its status.
func (c *ptyChat) wait() int {
	c.t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- c.cmd.Wait() }()
	select {
	case err := <-errc:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		} else if err != nil {
			c.t.Fatal(err)
		}
		return 0
	case <-time.After(30 * time.Second):
		c.t.Fatalf("chat did not exit; the terminal shows:\n%s", c.output())
		return -1
	}
}

// lockedWriter serializes writes from the gateway's stdout and stderr.
type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
