package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/openclaw-edge/edge/engine"
)

// runSpec is a command ready to start.
type runSpec struct {
	shell   string
	command string
	cwd     string
	env     []string // extra KEY=VALUE pairs
}

// cmd builds the process for s in its own process group; cancelling ctx
// kills the group.
func (s runSpec) cmd(ctx context.Context) *osexec.Cmd {
	c := osexec.CommandContext(ctx, s.shell, "-c", s.command)
	c.Dir = s.cwd
	c.Env = append(os.Environ(), s.env...)
	setProcessGroup(c)
	c.Cancel = func() error { return killGroup(c.Process) }
	// Grandchildren that escaped the group may hold the pipe open: stop
	// waiting for them after a while.
	c.WaitDelay = waitDelay
	return c
}

// runForeground runs s to completion, or until timeout or ctx ends.
func runForeground(ctx context.Context, s runSpec, timeout time.Duration, maxOutput int) engine.ToolResult {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := newCapBuffer(maxOutput)
	c := s.cmd(rctx)
	c.Stdout, c.Stderr = out, out // the same writer: one pipe, interleaved
	start := time.Now()
	err := c.Run()
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
