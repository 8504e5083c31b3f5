package command

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

// slowTurns are the fake gateway's running "slow" turns: session key →
// closed by /stop.
var slowTurns sync.Map

func (g *fakeGateway) slowOrStop(s stream, r *http.Request, text, key string, done func(string)) {
	if text == "/stop" {
		reply := "Nothing is running in this session."
		if ch, ok := slowTurns.LoadAndDelete(key); ok {
			close(ch.(chan struct{}))
			reply = "Stopped the running turn."
		}
		s.send(api.Event{Type: api.EventDone, Result: &api.Result{Reply: reply, SessionKey: key, Command: "stop"}})
		return
	}
	ch := make(chan struct{})
	slowTurns.Store(key, ch)
	s.send(api.Event{Type: api.EventAccepted, Accepted: &api.Accepted{SessionKey: key}},
		api.Event{Type: api.EventDelta, Text: "Once upon a time"})
	select {
	case <-ch:
		s.send(api.Event{Type: api.EventError, Error: &api.Error{Code: api.CodeAborted, Message: "stopped"}})
	case <-time.After(20 * time.Second):
		done("Once upon a time, the end.")
	case <-r.Context().Done():
	}
}

// TestSendInterrupt: Ctrl-C during message send stops the turn on the
// gateway (the fake only ends a slow turn on /stop), says what was kept
// and exits 130; with --json the failure object is printed too.
func TestSendInterrupt(t *testing.T) {
	g, err := startFakeGateway()
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprint("json=", asJSON), func(t *testing.T) {
			ctx, in := withInterrupts(context.Background())
			args := []string{"--socket", g.socket, "message", "send", "--session", fmt.Sprintf("agent:main:s%v", asJSON), "slow"}
			if asJSON {
				args = append(args, "--json")
			}
			stdout, stderr := &syncBuffer{}, &syncBuffer{}
			code := make(chan int, 1)
			go func() { code <- run(ctx, args, strings.NewReader(""), stdout, stderr) }()
			// Ctrl-C once the turn is running (it waits for the handler).
			waitUntil(t, func() bool { _, ok := slowTurns.Load(fmt.Sprintf("agent:main:s%v", asJSON)); return ok && in.fire() })
			select {
			case c := <-code:
				if c != 130 {
					t.Errorf("exit %d, want 130; stderr:\n%s", c, stderr)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("message send did not end after Ctrl-C: the turn was not stopped")
			}
			if want := "⏹ stopped; the session keeps your message and the partial reply (16 chars)\n"; !strings.HasSuffix(stderr.String(), want) {
				t.Errorf("stderr = %q, want it to end with %q", stderr, want)
			}
			if asJSON && !strings.Contains(stdout.String(), `"code": "aborted"`) {
				t.Errorf("--json stdout = %q, want the aborted failure", stdout)
			}
			if !asJSON && stdout.String() != "Once upon a time\n" {
				t.Errorf("stdout = %q", stdout)
			}
		})
	}
}

// TestChatPiped covers what piped chat adds: """ blocks, the local answer
// to an unknown command, and the gateway-down message before any input is
// read.
func TestChatPiped(t *testing.T) {
	g, err := startFakeGateway()
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	in := "/frobnicate now\n\"\"\"\nfirst line\n  second line\n\"\"\"\n/etc/hosts\n/STATUS\n"
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--socket", g.socket, "chat"}, strings.NewReader(in), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, &stderr)
	}
	// /STATUS is a known command (case folded, as the gateway does); the
	// fake echoes what is not "/status" exactly.
	want := "echo: first line\n  second line\necho: /etc/hosts\necho: /STATUS\n"
	if stdout.String() != want {
		t.Errorf("stdout = %q, want %q", &stdout, want)
	}
	if !strings.HasPrefix(stderr.String(), "unknown command /frobnicate (not sent). Commands:\n  /new [message]") ||
		!strings.Contains(stderr.String(), "/quit, /exit") {
		t.Errorf("stderr = %q", &stderr)
	}

	// Down: said at once, with how to start it, and no input consumed.
	r := &countingReader{r: strings.NewReader("hello\n")}
	stderr.Reset()
	down := filepath.Join(g.dir, "down.sock")
	if code := run(context.Background(), []string{"--socket", down, "chat"}, r, &stdout, &stderr); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if r.n != 0 {
		t.Errorf("chat read %d bytes of input before saying the gateway is down", r.n)
	}
	if s := stderr.String(); !strings.Contains(s, "cannot reach the gateway") || !strings.Contains(s, "openclaw-gateway run") || !strings.Contains(s, "systemctl start openclaw-gateway") {
		t.Errorf("stderr = %q", s)
	}

	// An unterminated block is not sent.
	stdout.Reset()
	stderr.Reset()
	run(context.Background(), []string{"--socket", g.socket, "chat"}, strings.NewReader("\"\"\"\nnever sent\n"), &stdout, &stderr)
	if stdout.Len() != 0 || !strings.Contains(stderr.String(), `input ended inside a """ block; it was not sent`) {
		t.Errorf("unterminated block: stdout %q, stderr %q", &stdout, &stderr)
	}
}

func TestCompleteSlash(t *testing.T) {
	tests := []struct {
		prefix string
		want   []string
	}{
		{"/s", []string{"/status", "/stop"}},
		{"/ST", []string{"/status", "/stop"}},
		{"/q", []string{"/quit"}},
		{"/x", nil},
		{"/", nil}, // checked below: everything
	}
	for _, tt := range tests[:4] {
		if got := completeSlash(tt.prefix); !slices.Equal(got, tt.want) {
			t.Errorf("completeSlash(%q) = %q, want %q", tt.prefix, got, tt.want)
		}
	}
	if got := completeSlash("/"); len(got) != len(api.Commands)+2 {
		t.Errorf("completeSlash(/) = %q: want every command and /quit, /exit", got)
	}
	sugg, n := slashCompleter{}.Do([]rune("/sto"), 4)
	if n != 4 || len(sugg) != 1 || string(sugg[0]) != "p " {
		t.Errorf("Do(/sto) = %q, %d", sugg, n)
	}
	if sugg, _ := (slashCompleter{}).Do([]rune("hi /st"), 6); sugg != nil {
		t.Errorf("completed a slash word after text: %q", sugg)
	}
}

func TestUnknownCommand(t *testing.T) {
	tests := []struct {
		text string
		word string
	}{
		{"/frob", "/frob"},
		{"/frob with args", "/frob"},
		{"/frob\tx", "/frob"},
		{"/stop", ""},
		{"/STOP", ""},
		{"/approve a1 always", ""},
		{"/quit", ""},
		{"/etc/hosts is what?", ""},
		{"/", ""},
		{"/ hello", ""},
		{"hello /frob", ""},
		{"/café", ""},
	}
	for _, tt := range tests {
		word, ok := unknownCommand(tt.text)
		if word != tt.word || ok != (tt.word != "") {
			t.Errorf("unknownCommand(%q) = %q, %v; want %q", tt.text, word, ok, tt.word)
		}
	}
}

func TestHistoryFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix permissions")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "chat_history")

	h, lines, err := openHistory(path, 3)
	if err != nil || len(lines) != 0 {
		t.Fatalf("new history: %v %q", err, lines)
	}
	for _, l := range []string{"one", "/approve a1", "two", "/DENY a2", "three", "four"} {
		if historyWorthy(l) {
			if err := h.add(l); err != nil {
				t.Fatal(err)
			}
		}
	}
	h.close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	// Reopened: the last 3, and the file trimmed to them.
	h, lines, err = openHistory(path, 3)
	if err != nil || !slices.Equal(lines, []string{"two", "three", "four"}) {
		t.Fatalf("reopened: %v %q", err, lines)
	}
	h.close()
	if data, _ := os.ReadFile(path); string(data) != "two\nthree\nfour\n" {
		t.Errorf("file = %q", data)
	}

	// A file others may read is made private; lines with control
	// characters (a stray escape sequence) are skipped.
	os.WriteFile(path, []byte("ok\nbad\x1b[2Jline\n"), 0o644)
	os.Chmod(path, 0o644)
	h, lines, err = openHistory(path, 3)
	if err != nil || !slices.Equal(lines, []string{"ok"}) {
		t.Fatalf("loose file: %v %q", err, lines)
	}
	h.close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v after open, want 0600", fi.Mode().Perm())
	}

	// A symlink or a directory is refused (a warning for chat), and the
	// symlink's target is left alone.
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("secret\n"), 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(target, link)
	if _, _, err := openHistory(link, 3); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("symlink: %v", err)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o644 {
		t.Errorf("the symlink's target was changed: %v", fi.Mode().Perm())
	}
	if _, _, err := openHistory(dir, 3); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
}

func TestHistoryWorthy(t *testing.T) {
	for line, want := range map[string]bool{
		"hello": true, "  ": false, "/approve a1": false, "/Approve a1 always": false, "/deny a1": false,
		"/new": true, `"""`: false, "a\x07b": false, strings.Repeat("x", maxHistoryLine+1): false, "tab\tok": true,
	} {
		if got := historyWorthy(line); got != want {
			t.Errorf("historyWorthy(%q) = %v, want %v", line, got, want)
		}
	}
}

func TestReadMessageBlock(t *testing.T) {
	ctx := context.Background()
	in := &pipedInput{ctx: ctx, lines: readLines(ctx, strings.NewReader("one\n\"\"\"\na\n\nb\n  \"\"\"  \nafter\n"))}
	var errw bytes.Buffer
	for _, want := range []string{"one", "a\n\nb", "after"} {
		got, err := readMessage(in, &errw)
		if err != nil || got != want {
			t.Fatalf("readMessage = %q, %v; want %q", got, err, want)
		}
	}
	if _, err := readMessage(in, &errw); err != io.EOF {
		t.Errorf("at the end: %v, want io.EOF", err)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
