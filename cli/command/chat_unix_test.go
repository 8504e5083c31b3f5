//go:build unix

package command

import (
	"context"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chzyer/readline"
	"github.com/creack/pty"
)

// TestChatTerminal runs chat in a pseudo-terminal, in this process, against
// the fake gateway: keys typed while a reply streams wait for the next
// prompt (text shows in it; Ctrl-D there leaves), Ctrl-C and /stop typed
// meanwhile stop the turn, and an approval's answer is echoed and taken.
func TestChatTerminal(t *testing.T) {
	g, err := startFakeGateway()
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	t.Setenv("OPENCLAW_CONFIG_DIR", t.TempDir())
	t.Setenv("TERM", "xterm")
	term := startTerm(t)
	before, err := readline.GetState(int(term.tty.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, _ := withInterrupts(context.Background())
	code := make(chan int, 1)
	go func() { code <- run(ctx, []string{"--socket", g.socket, "chat"}, term.tty, term.tty, term.tty) }()

	term.waitFor("model local/qwen3-1.7b · session agent:main:main · Ctrl-D or /quit to leave")
	term.waitFor("you> ")

	// Text typed during a turn shows in the next prompt.
	term.send("slow\r")
	term.waitFor("Once upon a time")
	term.send("draft")
	term.send("\x03") // Ctrl-C: stops the turn
	term.waitFor("⏹ stopped; the session keeps your message and the partial reply (16 chars)")
	term.waitFor("you> ")
	term.waitFor("draft")
	term.send(" two\r")
	term.waitFor("echo: draft two")

	// /stop typed meanwhile stops the turn too, and is not kept.
	term.waitFor("you> ")
	term.send("slow\r")
	term.waitFor("Once upon a time")
	term.send("/stop\r")
	term.waitFor("⏹ stopped")
	term.waitFor("you> ")

	// An approval: the answer is echoed as typed.
	term.send("run ls\r")
	term.waitFor("[N]o: ")
	term.send("x\x7fo\r")
	term.waitFor("You have one file: notes.md.")
	if out := term.output(); !strings.Contains(out, "[N]o: x\b \bo\r\n") {
		t.Errorf("the answer was not echoed:\n%q", out)
	}

	// Ctrl-D typed while a reply streams leaves once it ends.
	term.waitFor("you> ")
	term.send("slow\r")
	term.waitFor("Once upon a time")
	term.send("\x04")
	time.Sleep(50 * time.Millisecond) // in the terminal before the Ctrl-C
	term.send("\x03")
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d after Ctrl-D, want 0\n%s", c, term.output())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("chat did not leave after Ctrl-D:\n%s", term.output())
	}
	if after, err := readline.GetState(int(term.tty.Fd())); err != nil || !reflect.DeepEqual(after, before) {
		t.Errorf("the terminal was left changed: %+v, want %+v (%v)", after, before, err)
	}
	if out := term.output(); strings.Contains(out, "(not sent") || strings.Contains(out, "/stop\r\n") {
		t.Errorf("keys typed during a turn were shown or refused:\n%s", out)
	}
}

// fakeTerm is a pseudo-terminal: tty is the program's side.
type fakeTerm struct {
	t    *testing.T
	tty  *os.File
	ptmx *os.File
	mu   sync.Mutex
	out  strings.Builder
	seen int // output up to here has been matched
}

func startTerm(t *testing.T) *fakeTerm {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 160}); err != nil {
		t.Fatal(err)
	}
	term := &fakeTerm{t: t, tty: tty, ptmx: ptmx}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		tty.Close()
		ptmx.Close()
		<-done
	})
	return term
}

func (f *fakeTerm) output() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.out.String()
}

func (f *fakeTerm) send(s string) {
	f.t.Helper()
	if _, err := f.ptmx.WriteString(s); err != nil {
		f.t.Fatalf("type %q: %v", s, err)
	}
}

// waitFor waits until s shows after what was matched before.
func (f *fakeTerm) waitFor(s string) {
	f.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		f.mu.Lock()
		out := f.out.String()
		if i := strings.Index(out[f.seen:], s); i >= 0 {
			f.seen += i + len(s)
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		if time.Now().After(deadline) {
			f.t.Fatalf("waited 10s for %q; the terminal shows:\n%s", s, out)
		}
	}
}
