package llamacpp_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/llamacpp"
)

// fakeGGUF is a path with a minimal valid GGUF header (no tensors), enough
// for the provider's header read; the fake runner ignores the file.
func fakeGGUF(t *testing.T) string {
	t.Helper()
	src, err := filepath.Abs("../../../shared/models/vocab-only/ggml-vocab-llama-spm.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(src); err != nil {
		t.Skipf("shared test models not found: %v", err)
	}
	return src
}

func stream(ctx context.Context, p *llamacpp.Provider, text string, onDelta func(string)) (string, *engine.Usage, error) {
	var b strings.Builder
	var usage *engine.Usage
	err := p.Stream(ctx, &engine.ChatRequest{SessionID: "s1", Messages: []engine.Message{engine.UserText(text)}}, func(ev engine.Event) {
		switch ev.Type {
		case engine.EventTextDelta:
			b.WriteString(ev.Text)
			if onDelta != nil {
				onDelta(ev.Text)
			}
		case engine.EventMessageEnd:
			usage = ev.Usage
		}
	})
	return b.String(), usage, err
}

// TestRunnerKilledMidReply: SIGKILL of the runner mid-reply fails the turn
// with an "unreachable" model error (so failover moves on), and the next
// request starts a fresh runner.
func TestRunnerKilledMidReply(t *testing.T) {
	pool := llamacpp.NewPool(llamacpp.Config{Command: testCommand("fake"), KeepAlive: -1})
	defer pool.Close()
	p := pool.Model("local", "fake", fakeGGUF(t))
	killed := false
	_, _, err := stream(context.Background(), p, "tell me a long story", func(string) {
		if killed {
			return
		}
		killed = true
		loaded := pool.Loaded()
		if len(loaded) != 1 {
			t.Errorf("loaded = %+v", loaded)
			return
		}
		if err := syscall.Kill(loaded[0].PID, syscall.SIGKILL); err != nil {
			t.Error(err)
		}
	})
	var me *engine.ModelError
	if !errors.As(err, &me) || me.Kind != engine.ErrUnreachable || !strings.Contains(me.Message, "killed") {
		t.Fatalf("err = %v", err)
	}
	out, _, err := stream(context.Background(), p, "quick", nil)
	if err != nil || out != "done" {
		t.Fatalf("after the crash: %q %v", out, err)
	}
}

func TestCancelStopsGeneration(t *testing.T) {
	pool := llamacpp.NewPool(llamacpp.Config{Command: testCommand("fake"), KeepAlive: -1})
	defer pool.Close()
	p := pool.Model("local", "fake", fakeGGUF(t))
	ctx, cancel := context.WithCancel(context.Background())
	_, _, err := stream(ctx, p, "a long one", func(string) { cancel() })
	if engine.KindOf(err) != engine.ErrAborted {
		t.Fatalf("err = %v", err)
	}
	// The runner is still there and answers.
	if out, _, err := stream(context.Background(), p, "quick", nil); err != nil || out != "done" {
		t.Fatalf("after cancel: %q %v", out, err)
	}
}

func TestIdleUnload(t *testing.T) {
	pool := llamacpp.NewPool(llamacpp.Config{Command: testCommand("fake"), KeepAlive: 100 * time.Millisecond})
	defer pool.Close()
	p := pool.Model("local", "fake", fakeGGUF(t))
	if _, _, err := stream(context.Background(), p, "quick", nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(pool.Loaded()) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("model still loaded long after keep-alive")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if out, _, err := stream(context.Background(), p, "quick", nil); err != nil || out != "done" {
		t.Fatalf("reload: %q %v", out, err)
	}
}

func TestMissingModelFile(t *testing.T) {
	pool := llamacpp.NewPool(llamacpp.Config{Command: testCommand("fake")})
	p := pool.Model("local", "nope", filepath.Join(t.TempDir(), "nope.gguf"))
	_, _, err := stream(context.Background(), p, "hi", nil)
	if engine.KindOf(err) != engine.ErrNoModel {
		t.Fatalf("err = %v", err)
	}
}

// TestRunnerDiesWhileLoading: a runner that exits before it is ready gives a
// clear "unreachable" error at once (this once deadlocked the supervisor).
func TestRunnerDiesWhileLoading(t *testing.T) {
	pool := llamacpp.NewPool(llamacpp.Config{Command: testCommand("crash")})
	defer pool.Close()
	p := pool.Model("local", "oom", fakeGGUF(t))
	done := make(chan error, 1)
	go func() { _, _, err := stream(context.Background(), p, "hi", nil); done <- err }()
	select {
	case err := <-done:
		var me *engine.ModelError
		if !errors.As(err, &me) || me.Kind != engine.ErrUnreachable || !strings.Contains(me.Message, "out of memory") {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Stream hung on a runner that died while loading")
	}
	if len(pool.Loaded()) != 0 {
		t.Fatalf("loaded = %+v", pool.Loaded())
	}
}

// TestToolCallConstrained: a tool call is generated in a grammar-constrained
// phase and comes out as a parsed call; its markup never reaches the user.
func TestToolCallConstrained(t *testing.T) {
	pool := llamacpp.NewPool(llamacpp.Config{Command: testCommand("toolcaller")})
	defer pool.Close()
	p := pool.Model("local", "tools", fakeGGUF(t))
	var text strings.Builder
	var calls []engine.ToolCall
	var end engine.Event
	err := p.Stream(context.Background(), &engine.ChatRequest{
		Messages: []engine.Message{engine.UserText("what is in notes.md?")},
		Tools:    []engine.ToolSpec{{Name: "read", Description: "read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}},
	}, func(ev engine.Event) {
		switch ev.Type {
		case engine.EventTextDelta:
			text.WriteString(ev.Text)
		case engine.EventToolCall:
			calls = append(calls, *ev.ToolCall)
		case engine.EventMessageEnd:
			end = ev
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].Name != "read" || !strings.Contains(string(calls[0].Arguments), "notes.md") {
		t.Fatalf("calls = %+v text %q end %+v", calls, text.String(), end)
	}
	if strings.Contains(text.String(), "tool_call") || !strings.Contains(text.String(), "Let me look.") {
		t.Fatalf("visible text = %q", text.String())
	}
	if end.StopReason != engine.StopToolUse || end.Usage.Output != 16 || end.Usage.CacheRead != 38 {
		t.Fatalf("end = %+v usage %+v", end, end.Usage)
	}
}
