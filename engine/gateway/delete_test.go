package gateway_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/tool"
)

// apiCode is the code of an *api.Error; "" for anything else.
func apiCode(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}

// Delete waits for the session's running turn to end on its own, then
// removes the session as the turn left it.
func TestDeleteWaitsForRunningTurn(t *testing.T) {
	started, finish := make(chan struct{}), make(chan struct{})
	h := gatewaytest.NewHarness(t, "fake/model", nil, func(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
		close(started)
		<-finish
		return gatewaytest.Reply("done")(ctx, req, emit)
	})
	turn := make(chan error, 1)
	go func() { _, _, err := h.Send(t, "long task"); turn <- err }()
	<-started

	type result struct {
		e   session.Entry
		err error
	}
	deleted := make(chan result, 1)
	go func() {
		e, err := h.G.Delete(context.Background(), "main", "agent:main:main")
		deleted <- result{e, err}
	}()
	select {
	case r := <-deleted:
		t.Fatalf("Delete returned while the turn ran: %+v %v", r.e, r.err)
	case <-time.After(100 * time.Millisecond):
	}
	if _, ok, _ := h.Sessions.Get("main", "agent:main:main"); !ok {
		t.Fatal("the session went while its turn ran")
	}
	close(finish)
	if err := <-turn; err != nil {
		t.Fatalf("the turn was cut: %v", err)
	}
	r := <-deleted
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.e.Messages != 2 || r.e.OpenTurn != "" {
		t.Errorf("deleted entry = %+v; want the finished turn's", r.e)
	}
	if _, ok, _ := h.Sessions.Get("main", "agent:main:main"); ok {
		t.Error("the session is still there")
	}
	if _, _, err := h.Sessions.Transcript(r.e.SessionID); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("its transcript: %v", err)
	}
}

// A delete whose wait is cancelled deletes nothing; a missing session or
// agent is not_found, a bad key bad_request.
func TestDeleteErrors(t *testing.T) {
	started, finish := make(chan struct{}), make(chan struct{})
	h := gatewaytest.NewHarness(t, "fake/model", nil, func(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
		close(started)
		<-finish
		return gatewaytest.Reply("done")(ctx, req, emit)
	})
	turn := make(chan error, 1)
	go func() { _, _, err := h.Send(t, "long task"); turn <- err }()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := h.G.Delete(ctx, "main", "agent:main:main"); apiCode(err) != api.CodeAborted {
		t.Errorf("cancelled wait: %v", err)
	}
	close(finish)
	if err := <-turn; err != nil {
		t.Fatal(err)
	}
	if e, ok, _ := h.Sessions.Get("main", "agent:main:main"); !ok || e.Messages != 2 {
		t.Errorf("a cancelled delete changed the session: %+v %v", e, ok)
	}

	tests := []struct {
		name, agent string
		key         engine.SessionKey
		code        string
	}{
		{"no such session", "main", "agent:main:nope", api.CodeNotFound},
		{"no such agent", "ghost", "agent:ghost:main", api.CodeNotFound},
		{"another agent's key", "work", "agent:main:main", api.CodeBadRequest},
		{"bad key", "main", "agent:main:", api.CodeBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := h.G.Delete(context.Background(), tt.agent, tt.key); apiCode(err) != tt.code {
				t.Errorf("err = %v; want %s", err, tt.code)
			}
		})
	}
	if _, ok, _ := h.Sessions.Get("main", "agent:main:main"); !ok {
		t.Error("a failed delete removed the session")
	}
}

// A turn waiting for an exec approval makes Delete refuse at once
// (conflict) rather than wait for, or answer, the owner's decision; once
// the owner has answered and the turn ended, the delete goes through.
func TestDeleteRefusedWhileApprovalPending(t *testing.T) {
	fx := &gatewaytest.Exec{Allow: &gatewaytest.MemAllowlist{}}
	h := gatewaytest.NewHarnessConfig(t, "fake/model", nil, func(c *gateway.Config) {
		c.Tools.Add(fx)
		c.ApprovalTimeout = time.Minute
	}, gatewaytest.RunCmd("rm", "-rf", "build"), gatewaytest.Reply("ok"))
	aps := make(chan *api.Approval, 1)
	turn := make(chan error, 1)
	go func() {
		_, err := h.G.Send(context.Background(), api.SendRequest{Text: "clean up"}, func(ev api.Event) {
			if ev.Type == api.EventApproval {
				aps <- ev.Approval
			}
		})
		turn <- err
	}()
	var ap *api.Approval
	select {
	case ap = <-aps:
	case <-time.After(5 * time.Second):
		t.Fatal("no approval asked")
	}
	start := time.Now()
	_, err := h.G.Delete(context.Background(), "main", "agent:main:main")
	if apiCode(err) != api.CodeConflict {
		t.Fatalf("delete with a pending approval: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the refusal took %s", d)
	}
	if pending := h.G.Approvals(); len(pending) != 1 || pending[0].ID != ap.ID {
		t.Errorf("the approval was answered by the delete: %+v", pending)
	}
	if _, err := h.G.Decide("", ap.ID, tool.DecisionDeny); err != nil {
		t.Fatal(err)
	}
	if err := <-turn; err != nil {
		t.Fatal(err)
	}
	if got := fx.Got(); len(got) != 1 || got[0] != "rm -rf build: deny" {
		t.Errorf("exec decisions = %v", got)
	}
	if _, err := h.G.Delete(context.Background(), "main", "agent:main:main"); err != nil {
		t.Fatalf("delete after the answer: %v", err)
	}
}
