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

// TestKeyboardDuringTurn: while a turn runs the keyboard keeps every key
// for the next prompt, in order, except Ctrl-C, a "/stop" line and the
// answer to an approval, which go to the turn.
func TestKeyboardDuringTurn(t *testing.T) {
	tests := []struct {
		name       string
		before     string // typed before the turn
		keys       string // typed during the turn
		answerKeys string // typed after answering(true), then answering(false)
		wantCalls  []string
		wantEcho   string
		wantAhead  string // what the next prompt reads
	}{
		{name: "Ctrl-D waits for the prompt", keys: "\x04", wantAhead: "\x04"},
		{name: "text and Ctrl-D in order", before: "x", keys: "abc\x04", wantAhead: "xabc\x04"},
		{name: "a line waits too", keys: "next one\r", wantCalls: []string{"ahead next one"}, wantAhead: "next one\r"},
		{name: "/stop is taken", keys: "/stop\r", wantCalls: []string{"stop"}},
		{name: "/stop as edited", keys: "/STx\x7fOP \r", wantCalls: []string{"stop"}},
		{name: "/stop after other keys", keys: "ab\r\x04/stop\rcd", wantCalls: []string{"ahead ab", "stop"}, wantAhead: "ab\r\x04cd"},
		{name: "text before /stop is one line", keys: "ab/stop\r", wantCalls: []string{"ahead ab/stop"}, wantAhead: "ab/stop\r"},
		{name: "Ctrl-C goes to the turn", keys: "a\x03b\x03", wantCalls: []string{"ctrl-c", "ctrl-c"}, wantAhead: "ab"},
		{name: "an answer", keys: "ab", answerKeys: "ox\x7f\r", wantCalls: []string{"answer o"}, wantEcho: "ox\b \b\n", wantAhead: "ab"},
		{name: "Ctrl-D answers empty", answerKeys: "\x04", wantCalls: []string{"answer "}, wantEcho: "\n"},
		{name: "an unfinished answer is dropped", answerKeys: "on\x1b[D", wantEcho: "on\n"},
		{name: "Ctrl-U in an answer", answerKeys: "no\x15a\r", wantCalls: []string{"answer a"}, wantEcho: "no\b \b\b \ba\n"},
		{name: "a multibyte answer", answerKeys: "é\x7f\r", wantCalls: []string{"answer "}, wantEcho: "\xc3\xa9\b \b\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var echo bytes.Buffer
			var calls []string
			k := newKeyboard(&echo, func() { calls = append(calls, "ctrl-c") }, nil, nil)
			k.feed([]byte(tt.before))
			end := k.startTurn(&turnKeys{
				stop:   func() { calls = append(calls, "stop") },
				answer: func(l string) { calls = append(calls, "answer "+l) },
				ahead:  func(l string) { calls = append(calls, "ahead "+l) },
			})
			k.feed([]byte(tt.keys))
			if tt.answerKeys != "" {
				k.answering(true)
				k.feed([]byte(tt.answerKeys))
				k.answering(false)
			}
			end()
			k.ended(io.EOF)
			ahead, err := io.ReadAll(k)
			if err != nil {
				t.Fatal(err)
			}
			if string(ahead) != tt.wantAhead {
				t.Errorf("the next prompt reads %q, want %q", ahead, tt.wantAhead)
			}
			if !slices.Equal(calls, tt.wantCalls) {
				t.Errorf("calls %q, want %q", calls, tt.wantCalls)
			}
			if echo.String() != tt.wantEcho {
				t.Errorf("echo %q, want %q", echo.String(), tt.wantEcho)
			}
		})
	}
}

// TestKeyboardRead: outside a turn the line editor reads every key as it
// comes; during one it waits, and gets what was typed ahead once the turn
// ends.
func TestKeyboardRead(t *testing.T) {
	k := newKeyboard(io.Discard, func() {}, nil, nil)
	k.feed([]byte("hi\r"))
	buf := make([]byte, 16)
	if n, err := k.Read(buf); err != nil || string(buf[:n]) != "hi\r" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	end := k.startTurn(&turnKeys{ahead: func(string) {}})
	got := make(chan string, 1)
	go func() {
		n, _ := k.Read(buf)
		got <- string(buf[:n])
	}()
	k.feed([]byte("\x04"))
	select {
	case s := <-got:
		t.Fatalf("read %q while the turn ran", s)
	case <-time.After(50 * time.Millisecond):
	}
	end()
	select {
	case s := <-got:
		if s != "\x04" {
			t.Errorf("after the turn: %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the key typed during the turn never came")
	}
}

func TestEditLine(t *testing.T) {
	for keys, want := range map[string]string{
		"abc":               "abc",
		"ab\x7fc":           "ac",
		"ab\x08\x08\x08x":   "x",
		"one two\x17":       "one ",
		"one two  \x17":     "one ",
		"abc\x15d":          "d",
		"a\x1b[Ab\x1bOHc":   "abc",
		"a\x1b[1;5Cb":       "ab",
		"a\x04\x01b\t":      "ab",
		"héllo\x7f\x7f\x7f": "hé",
	} {
		if got := editLine([]byte(keys)); got != want {
			t.Errorf("editLine(%q) = %q, want %q", keys, got, want)
		}
	}
}

// TestChatBanner: the banner names the session's model, which its /model
// override decides.
func TestChatBanner(t *testing.T) {
	st := &api.Status{DefaultAgent: "main", Model: "local/qwen3", AgentModels: map[string]string{"main": "local/qwen3", "work": "ollama/llama3.2", "bare": ""}}
	tests := []struct {
		key, agent       string
		sessions         []api.SessionInfo
		wantKey, wantAgt string
		wantModel        string
	}{
		{wantKey: "agent:main:main", wantAgt: "main", wantModel: "local/qwen3"},
		{agent: "work", wantKey: "agent:work:main", wantAgt: "work", wantModel: "ollama/llama3.2"},
		{key: "agent:work:x", wantKey: "agent:work:x", wantAgt: "work", wantModel: "ollama/llama3.2"},
		{key: "agent:main:main", sessions: []api.SessionInfo{{Key: "agent:main:main", Model: "local/qwen3", ModelOverride: "openai/gpt-4o"}},
			wantKey: "agent:main:main", wantAgt: "main", wantModel: "openai/gpt-4o"},
		{key: "agent:main:other", sessions: []api.SessionInfo{{Key: "agent:main:main", ModelOverride: "openai/gpt-4o"}},
			wantKey: "agent:main:other", wantAgt: "main", wantModel: "local/qwen3"},
		{agent: "bare", wantKey: "agent:bare:main", wantAgt: "bare", wantModel: ""},
	}
	for _, tt := range tests {
		key, agent := chatTarget(st, tt.key, tt.agent)
		if key != tt.wantKey || agent != tt.wantAgt {
			t.Errorf("chatTarget(%q, %q) = %q, %q", tt.key, tt.agent, key, agent)
		}
		if got := modelOf(st, tt.sessions, key, agent); got != tt.wantModel {
			t.Errorf("%s: model %q, want %q", key, got, tt.wantModel)
		}
	}
	if got := chatBanner("/run/gw.sock", "", "agent:bare:main"); !strings.Contains(got, "model none configured · session agent:bare:main") {
		t.Errorf("banner = %q", got)
	}
}

// TestSpinner: the spinner turns until the reply's first text, a note
// line lets it come back, and each write erases it first.
func TestSpinner(t *testing.T) {
	var term syncBuffer
	s := startSpinner(&term, 0, time.Millisecond)
	waitUntil(t, func() bool { return strings.Contains(term.String(), "thinking…") })
	errw := s.before(&term, false)
	io.WriteString(errw, "… queued\n")
	if !strings.Contains(term.String(), "thinking…\r\x1b[K… queued\n") {
		t.Fatalf("the note did not erase the spinner: %q", term.String())
	}
	waitUntil(t, func() bool { return strings.Contains(term.String(), "… queued\n\r") })
	io.WriteString(s.before(&term, true), "Hello")
	before := term.String()
	if !strings.HasSuffix(before, "\r\x1b[KHello") {
		t.Fatalf("reply text did not erase the spinner: %q", before)
	}
	time.Sleep(20 * time.Millisecond)
	s.end()
	if term.String() != before {
		t.Errorf("the spinner came back after the reply started: %q", term.String())
	}
}
