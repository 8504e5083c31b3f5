package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/openclaw-edge/edge/engine"
)

// runSpec is a command ready to start.
type runSpec struct {
	command   string   // the text, for messages
	path      string   // the program to execve
	argv      []string // its argv (argv[0] as written)
	cwd       string
	workspace string
	extraEnv  []string // KEY=VALUE pairs the call adds
	sandbox   Sandbox  // nil: policy only
	elevated  bool     // the owner's answer: run outside the sandbox
}

// cmd builds the process for s in its own process group, confined by the
// sandbox unless elevated, with a private temp dir and a built
// environment; cancelling ctx kills the group. cleanup removes the temp
// dir: call it once the process has ended (or did not start).
func (s runSpec) cmd(ctx context.Context) (c *osexec.Cmd, cleanup func(), err error) {
	tmp, err := os.MkdirTemp("", "openclaw-exec-")
	if err != nil {
		return nil, nil, fmt.Errorf("create a temp dir: %w", err)
	}
	cleanup = func() { _ = os.RemoveAll(tmp) }
	path, argv := s.path, s.argv
	if s.sandbox != nil && !s.elevated {
		wrapped, err := s.sandbox.Wrap(argv, s.workspace, tmp)
		if err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("the sandbox cannot confine it: %w", err)
		}
		if len(wrapped) == 0 {
			cleanup()
			return nil, nil, errors.New("the sandbox returned an empty command")
		}
		argv = wrapped
		// The helper is named by an absolute path (the gateway binary);
		// a bare name is looked up in the child's PATH, never ours.
		if path = wrapped[0]; !filepath.IsAbs(path) {
			if path = LookPath(wrapped[0], s.cwd); path == "" {
				cleanup()
				return nil, nil, fmt.Errorf("sandbox helper %q not found", wrapped[0])
			}
		}
	}
	c = osexec.CommandContext(ctx, path, argv[1:]...)
	c.Args = slices.Clone(argv) // keep argv[0] as written
	c.Dir = s.cwd
	c.Env = buildEnv(s.workspace, tmp, s.extraEnv)
	setProcessGroup(c)
	c.Cancel = func() error { return killGroup(c.Process) }
	// Grandchildren that escaped the group may hold the pipe open: stop
	// waiting for them after a while.
	c.WaitDelay = waitDelay
	return c, cleanup, nil
}

// runForeground runs s to completion, or until timeout or ctx ends.
func runForeground(ctx context.Context, s runSpec, timeout time.Duration, maxOutput int) engine.ToolResult {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := newCapBuffer(maxOutput)
	c, cleanup, err := s.cmd(rctx)
	if err != nil {
		return engine.ErrorResult("exec: could not start `%s`: %v; nothing was run", s.command, err)
	}
	defer cleanup()
	c.Stdout, c.Stderr = out, out // the same writer: one pipe, interleaved
	start := time.Now()
	err = c.Run()
	dur := time.Since(start)
	if c.Process != nil {
		// Whatever the command left running in its group goes with it:
		// long-lived processes belong in background=true.
		_ = killGroup(c.Process)
	}

	var note string
	timedOut := rctx.Err() != nil && ctx.Err() == nil
	aborted := ctx.Err() != nil
	code := 0
	switch {
	case c.ProcessState != nil:
		code = exitCode(c.ProcessState)
	case err != nil:
		return engine.ErrorResult("exec: could not start `%s`: %v", s.command, err)
	}
	switch {
	case timedOut:
		note = fmt.Sprintf("[killed: no exit within %s]\n", timeout)
	case aborted:
		note = "[killed: the turn was stopped]\n"
	case err != nil && !isExitError(err) && !errors.Is(err, osexec.ErrWaitDelay):
		note = fmt.Sprintf("[%v]\n", err)
	}
	text, truncated := out.String()
	if text == "" {
		text = "(no output)"
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	text += "\n" + note + fmt.Sprintf("(exit code %d)", code)
	details, _ := json.Marshal(map[string]any{
		"exitCode":   code,
		"durationMs": dur.Milliseconds(),
		"truncated":  truncated,
		"timedOut":   timedOut,
		"cwd":        s.cwd,
	})
	return engine.ToolResult{
		Content: []engine.Block{engine.TextBlock(text)},
		Details: details,
		IsError: code != 0 || timedOut || aborted,
	}
}

func isExitError(err error) bool {
	var ee *osexec.ExitError
	return errors.As(err, &ee)
}

// capBuffer keeps the first and last max/2 bytes written to it. It is safe
// for concurrent use.
type capBuffer struct {
	mu      sync.Mutex
	half    int
	head    []byte
	tail    []byte // ring of the latest bytes once head is full
	pos     int    // next write position in tail once it is full
	dropped int64
}

func newCapBuffer(limit int) *capBuffer { return &capBuffer{half: max(limit/2, 1)} }

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if room := b.half - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		if len(b.tail) < b.half {
			k := min(b.half-len(b.tail), len(p))
			b.tail = append(b.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := min(b.half-b.pos, len(p))
		b.dropped += int64(k)
		copy(b.tail[b.pos:], p[:k])
		b.pos = (b.pos + k) % b.half
		p = p[k:]
	}
	return n, nil
}

// String returns the kept output, valid UTF-8, and whether some was
// dropped.
func (b *capBuffer) String() (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := append(append([]byte{}, b.tail[b.pos:]...), b.tail[:b.pos]...)
	if b.dropped == 0 {
		return strings.ToValidUTF8(string(b.head)+string(tail), "\uFFFD"), false
	}
	// Cut the tail at a rune start so the join stays readable.
	i := 0
	for i < len(tail) && i < utf8.UTFMax && !utf8.RuneStart(tail[i]) {
		i++
	}
	return strings.ToValidUTF8(string(b.head), "\uFFFD") +
		fmt.Sprintf("\n[... %d bytes of output omitted ...]\n", b.dropped) +
		strings.ToValidUTF8(string(tail[i:]), "\uFFFD"), true
}
