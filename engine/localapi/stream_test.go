package localapi

import (
	"context"
	"errors"
	"fmt"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
)

// A client that sends a message and never reads its stream does not hold
// the turn up: once a write blocks past the deadline the client is dropped,
// and the turn completes durably.
func TestStuckClientDoesNotStallTurn(t *testing.T) {
	old := streamWriteTimeout
	streamWriteTimeout = 200 * time.Millisecond
	t.Cleanup(func() { streamWriteTimeout = old })
	// Far more than the socket buffers hold.
	chunk := strings.Repeat("x", 1023) + " "
	const chunks = 8000
	h := gatewaytest.NewHarness(t, "fake/model", nil, func(_ context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
		for range chunks {
			emit(engine.Event{Type: engine.EventTextDelta, Text: chunk})
		}
		emit(engine.Event{Type: engine.EventMessageEnd, StopReason: engine.StopEnd})
		return nil
	})
	sock := serveUnix(t, New(h.G, nil, Config{}))
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"text":"tell me everything"}`
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", api.PathMessages, len(body), body)
	// Never read. (8 MB through the stream under -race on a loaded 2-core
	// box takes most of a minute: the deadline only catches a hang.)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		e, ok, err := h.Sessions.Get("main", "agent:main:main")
		if err != nil {
			t.Fatal(err)
		}
		if ok && e.OpenTurn == "" && e.Messages == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("turn did not finish with a stuck client: %+v", e)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, entries, err := h.Sessions.History("main", "agent:main:main")
	if err != nil {
		t.Fatal(err)
	}
	last := entries[len(entries)-1].Message
	if last == nil || last.Role != engine.RoleAssistant || len(last.Text()) != chunks*len(chunk) {
		t.Errorf("last entry is not the whole reply: %d bytes", len(last.Text()))
	}
}

// Shutdown cancels a running turn, waits for it to close its transcript,
// and refuses new turns.
func TestShutdownClosesRunningTurn(t *testing.T) {
	started := make(chan struct{})
	h := gatewaytest.NewHarness(t, "fake/model", nil, func(ctx context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
		emit(engine.Event{Type: engine.EventTextDelta, Text: "working"})
		close(started)
		<-ctx.Done()
		return &engine.ModelError{Kind: engine.ErrAborted, Err: ctx.Err()}
	})
	done := make(chan error, 1)
	go func() { _, _, err := h.Send(t, "long task"); done <- err }()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := h.G.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Shutdown took %s", d)
	}
	var ae *api.Error
	if err := <-done; !errors.As(err, &ae) || ae.Code != api.CodeAborted {
		t.Errorf("turn err = %v", err)
	}
	e, _, _ := h.Sessions.Get("main", "agent:main:main")
	if e.OpenTurn != "" {
		t.Error("turn left open by Shutdown")
	}
	if roles := h.EntryRoles(t); len(roles) != 2 || roles[1] != "assistant" {
		t.Errorf("transcript after shutdown: %v", roles)
	}
	if _, _, err := h.Send(t, "after"); !errors.As(err, &ae) || !strings.Contains(ae.Message, "shutting down") {
		t.Errorf("turn after Shutdown: %v", err)
	}
}

// A turn that ignores cancellation makes Shutdown give up at its bound.
func TestShutdownBounded(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	h := gatewaytest.NewHarness(t, "fake/model", nil, func(ctx context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
		close(started)
		<-release
		return errors.New("late")
	})
	go h.Send(t, "stubborn")
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := h.G.Shutdown(ctx)
	if err == nil || !strings.Contains(err.Error(), "1 turn(s) still running") {
		t.Errorf("Shutdown = %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Shutdown took %s past its bound", d)
	}
	close(release)
}
