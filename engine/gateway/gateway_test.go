package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/prompt"
	"github.com/openclaw-edge/edge/engine/session"
)

func TestSendPersistsTurn(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil, gatewaytest.Reply("hi there"))
	res, evs, err := h.Send(t, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if res.Reply != "hi there" || res.SessionKey != "agent:main:main" || res.Model != "fake/model" || res.SessionID == "" {
		t.Fatalf("result = %+v", res)
	}
	var streamed strings.Builder
	for _, ev := range evs {
		if ev.Type == api.EventDelta {
			streamed.WriteString(ev.Text)
		}
	}
	if streamed.String() != "hi there" {
		t.Errorf("streamed %q", streamed.String())
	}
	if got := strings.Join(h.EntryRoles(t), " "); got != "user assistant" {
		t.Errorf("transcript = %s", got)
	}
	e, _, _ := h.Sessions.Get("main", "agent:main:main")
	if e.OpenTurn != "" || e.InputTokens != 100 || e.LastModel != "fake/model" {
		t.Errorf("session entry = %+v", e)
	}
	// The user message carries the trusted metadata block; the system prompt
	// does not carry per-message data.
	req := h.Model.Requests()[0]
	if !strings.HasPrefix(req.Messages[0].Text(), prompt.TrustedHeader) || !strings.HasSuffix(req.Messages[0].Text(), "hello") {
		t.Errorf("user message = %q", req.Messages[0].Text())
	}
	if req.CacheBoundary <= 0 || req.CacheBoundary > len(req.System) {
		t.Errorf("cache boundary %d of %d", req.CacheBoundary, len(req.System))
	}
}

func TestWriteToolCreatesFile(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil,
		gatewaytest.CallTool("write", map[string]string{"path": "notes/todo.md", "content": "buy milk\n"}),
		gatewaytest.Reply("Saved."))
	res, evs, err := h.Send(t, "remember to buy milk")
	if err != nil {
		t.Fatal(err)
	}
	if res.Reply != "Saved." {
		t.Fatalf("reply %q", res.Reply)
	}
	data, err := os.ReadFile(filepath.Join(h.Workspace, "notes/todo.md"))
	if err != nil || string(data) != "buy milk\n" {
		t.Fatalf("file: %q, %v", data, err)
	}
	var sawCall, sawResult bool
	for _, ev := range evs {
		sawCall = sawCall || ev.Type == api.EventToolCall && ev.Tool.Name == "write"
		sawResult = sawResult || ev.Type == api.EventToolResult && ev.Tool.Name == "write" && !ev.Tool.IsError
	}
	if !sawCall || !sawResult {
		t.Errorf("tool events missing: %+v", evs)
	}
	if got := strings.Join(h.EntryRoles(t), " "); got != "user assistant toolResult assistant" {
		t.Errorf("transcript = %s", got)
	}
}

func TestRefusedToolCalls(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "escape.txt")
	marker := filepath.Join(t.TempDir(), "ran")
	tests := []struct {
		name    string
		allowed func(string) bool
		call    gatewaytest.Step
		want    string // in the tool result
		check   func(t *testing.T)
	}{
		{
			name: "write outside the workspace",
			call: gatewaytest.CallTool("write", map[string]string{"path": outside, "content": "x"}),
			want: "outside the workspace",
			check: func(t *testing.T) {
				if _, err := os.Stat(outside); err == nil {
					t.Error("file written outside the workspace")
				}
			},
		},
		{
			name: "write through ..",
			call: gatewaytest.CallTool("write", map[string]string{"path": "../escape.txt", "content": "x"}),
			want: "outside the workspace",
		},
		{
			name:    "denied tool",
			allowed: func(name string) bool { return name != "write" },
			call:    gatewaytest.CallTool("write", map[string]string{"path": "a.txt", "content": "x"}),
			want:    "not allowed by policy",
		},
		{
			name: "unapproved exec",
			call: gatewaytest.CallTool("exec", map[string]string{"command": "touch " + marker}),
			want: "not approved",
			check: func(t *testing.T) {
				if _, err := os.Stat(marker); err == nil {
					t.Error("exec ran without approval")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := gatewaytest.NewHarness(t, "fake/model", tt.allowed, tt.call, gatewaytest.Reply("ok"))
			if _, _, err := h.Send(t, "do it"); err != nil {
				t.Fatal(err)
			}
			reqs := h.Model.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model calls", len(reqs))
			}
			msgs := reqs[1].Messages
			res := msgs[len(msgs)-1]
			if res.Role != engine.RoleToolResult || !res.IsError || !strings.Contains(res.Text(), tt.want) {
				t.Fatalf("tool result = %+v", res)
			}
			if _, err := os.Stat(filepath.Join(h.Workspace, "a.txt")); err == nil {
				t.Error("a.txt was written")
			}
			if tt.check != nil {
				tt.check(t)
			}
		})
	}
}

func TestExecApproval(t *testing.T) {
	for _, decision := range []string{"approve", "deny"} {
		t.Run(decision, func(t *testing.T) {
			h := gatewaytest.NewHarness(t, "fake/model", nil, gatewaytest.CallTool("exec", map[string]string{"command": "echo ran > out.txt"}), gatewaytest.Reply("done"))
			var wg sync.WaitGroup
			wg.Add(1)
			var sendErr error
			go func() {
				defer wg.Done()
				_, sendErr = h.G.Send(context.Background(), api.SendRequest{Text: "run it"}, func(ev api.Event) {
					if ev.Type == api.EventApproval {
						go func() {
							res, err := h.G.Send(context.Background(), api.SendRequest{Text: "/" + decision + " " + ev.Approval.ID}, nil)
							if err != nil || res.Command != decision {
								t.Errorf("/%s: %+v %v", decision, res, err)
							}
						}()
					}
				})
			}()
			wg.Wait()
			if sendErr != nil {
				t.Fatal(sendErr)
			}
			_, err := os.Stat(filepath.Join(h.Workspace, "out.txt"))
			if decision == "approve" && err != nil {
				t.Error("approved exec did not run")
			}
			if decision == "deny" && err == nil {
				t.Error("denied exec ran")
			}
		})
	}
}

func TestSilentReply(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil, gatewaytest.Reply("NO_REPLY"))
	res, evs, err := h.Send(t, "ping")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Suppressed || res.Reply != "" {
		t.Fatalf("result = %+v", res)
	}
	for _, ev := range evs {
		if ev.Type == api.EventDelta {
			t.Errorf("silent reply streamed %q", ev.Text)
		}
	}
}

func TestModelFailureIsRecorded(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil, gatewaytest.Fail(&engine.ModelError{Kind: engine.ErrAuth, Provider: "fake", Status: 401, Message: "invalid key"}))
	_, _, err := h.Send(t, "hello")
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeModelFailed || !strings.Contains(ae.Message, "credentials") {
		t.Fatalf("err = %v", err)
	}
	if got := strings.Join(h.EntryRoles(t), " "); got != "user assistant" {
		t.Errorf("transcript = %s", got)
	}
	e, _, _ := h.Sessions.Get("main", "agent:main:main")
	if e.OpenTurn != "" {
		t.Error("failed turn left open")
	}
	if st := h.G.Status(); !strings.Contains(st.LastError, "invalid key") {
		t.Errorf("last error = %q", st.LastError)
	}
	// The next message works.
	res, _, err := h.Send(t, "again")
	if err != nil || res.Reply != "echo: again" {
		t.Fatalf("next turn: %+v %v", res, err)
	}
}

func TestNoModelConfigured(t *testing.T) {
	h := gatewaytest.NewHarness(t, "", nil)
	_, _, err := h.Send(t, "hello")
	var ae *api.Error
	if !errors.As(err, &ae) || !strings.Contains(ae.Message, "no model is configured") {
		t.Fatalf("err = %v", err)
	}
	if got := strings.Join(h.EntryRoles(t), " "); got != "user assistant" {
		t.Errorf("inbound not kept: %s", got)
	}
}

func TestCommands(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	if _, _, err := h.Send(t, "first"); err != nil {
		t.Fatal(err)
	}
	before, _, _ := h.Sessions.Get("main", "agent:main:main")
	tests := []struct {
		text, want string
		wantErr    bool
	}{
		{"/help", "/approve <id>", false},
		{"/status", "Session: agent:main:main", false},
		{"/think high", "Thinking: high", false},
		{"/think hard", "", true},
		{"/model", "fake/model", false},
		{"/model other/x", "", true},
		{"/stop", "Nothing is running", false},
		{"/approve nope", "", true},
		{"/new", "Cleared the thinking level (high): back to the agent's defaults.", false},
	}
	for _, tt := range tests {
		res, _, err := h.Send(t, tt.text)
		if tt.wantErr {
			if err == nil {
				t.Errorf("%s: no error, reply %q", tt.text, res.Reply)
			}
			continue
		}
		if err != nil || !strings.Contains(res.Reply, tt.want) {
			t.Errorf("%s: %+v %v, want %q", tt.text, res, err, tt.want)
		}
	}
	after, _, _ := h.Sessions.Get("main", "agent:main:main")
	// The explicit fresh start clears /think and /model (daily and idle
	// resets keep them: engine/session TestResets).
	if after.SessionID == before.SessionID || after.ThinkingLevel != "" || after.ModelOverride != "" {
		t.Errorf("after /new: %+v (before %s)", after, before.SessionID)
	}
	if res, _, err := h.Send(t, "/new"); err != nil || strings.Contains(res.Reply, "Cleared") {
		t.Errorf("/new with nothing to clear: %+v %v", res, err)
	}
	// Unknown slash words are ordinary text.
	res, _, err := h.Send(t, "/etc/hosts is a file")
	if err != nil || res.Command != "" {
		t.Errorf("plain text with slash: %+v %v", res, err)
	}
}

func TestStopAbortsTurn(t *testing.T) {
	started := make(chan struct{})
	h := gatewaytest.NewHarness(t, "fake/model", nil, func(ctx context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
		emit(engine.Event{Type: engine.EventTextDelta, Text: "thinking about it"})
		close(started)
		<-ctx.Done()
		return &engine.ModelError{Kind: engine.ErrAborted, Err: ctx.Err()}
	})
	done := make(chan error, 1)
	go func() { _, _, err := h.Send(t, "long task"); done <- err }()
	<-started
	res, _, err := h.Send(t, "/stop")
	if err != nil || !strings.Contains(res.Reply, "Stopped") {
		t.Fatalf("/stop: %+v %v", res, err)
	}
	err = <-done
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeAborted {
		t.Fatalf("turn err = %v", err)
	}
	e, _, _ := h.Sessions.Get("main", "agent:main:main")
	if e.OpenTurn != "" {
		t.Error("aborted turn left open")
	}
	// The user stopped it: no failure for status to report.
	if st := h.G.Status(); st.LastError != "" {
		t.Errorf("last error after /stop = %q", st.LastError)
	}
	if res, _, err := h.Send(t, "/status"); err != nil || strings.Contains(res.Reply, "Last error") {
		t.Errorf("/status after /stop: %+v %v", res, err)
	}
}

func TestSessionsRunInParallelTurnsInOrder(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	var wg sync.WaitGroup
	const sessions, perSession = 8, 5
	errs := make(chan error, sessions*perSession)
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("agent:main:s%d", s)
			for i := range perSession {
				res, err := h.G.Send(context.Background(), api.SendRequest{Text: fmt.Sprintf("m%d", i), SessionKey: key}, nil)
				if err != nil {
					errs <- err
					return
				}
				if want := fmt.Sprintf("echo: m%d", i); res.Reply != want {
					errs <- fmt.Errorf("%s: reply %q, want %q", key, res.Reply, want)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for s := range sessions {
		key := engine.SessionKey(fmt.Sprintf("agent:main:s%d", s))
		_, entries, err := h.Sessions.History("main", key)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 2*perSession {
			t.Fatalf("%s has %d entries", key, len(entries))
		}
		for i := range perSession {
			if got := entries[2*i+1].Message.Text(); got != fmt.Sprintf("echo: m%d", i) {
				t.Errorf("%s entry %d = %q (order or leak)", key, 2*i+1, got)
			}
		}
	}
}

func TestRecoverInterrupted(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	// A turn that began but never ended, as after a SIGKILL.
	if _, err := h.Sessions.BeginTurn("main", "agent:main:main", session.Meta{}, "", engine.UserText("lost?")); err != nil {
		t.Fatal(err)
	}
	n, err := h.G.RecoverInterrupted()
	if err != nil || n != 1 {
		t.Fatalf("recovered %d, %v", n, err)
	}
	if got := strings.Join(h.EntryRoles(t), " "); got != "user assistant" {
		t.Errorf("transcript = %s", got)
	}
	if n, _ := h.G.RecoverInterrupted(); n != 0 {
		t.Errorf("recovered again: %d", n)
	}
}

func TestDuplicateMessageDropped(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	for i := range 2 {
		res, err := h.G.Send(context.Background(), api.SendRequest{Text: "once", MessageID: "m-1"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 && !res.Suppressed {
			t.Errorf("duplicate answered: %+v", res)
		}
	}
	if n := len(h.Model.Requests()); n != 1 {
		t.Errorf("model called %d times", n)
	}
}

func TestBadRequests(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	for _, req := range []api.SendRequest{
		{Text: "  "},
		{Text: "x", SessionKey: "agent:main"},
		{Text: "x", SessionKey: "has space"},
		{Text: "x", AgentID: "nobody"},
		{Text: "x", SessionKey: "agent:main:main", AgentID: "other"},
	} {
		_, err := h.G.Send(context.Background(), req, nil)
		var ae *api.Error
		if !errors.As(err, &ae) || (ae.Code != api.CodeBadRequest && ae.Code != api.CodeNotFound) {
			t.Errorf("%+v: err = %v", req, err)
		}
	}
	if n := len(h.Model.Requests()); n != 0 {
		t.Errorf("model called %d times", n)
	}
}

func TestFailoverIsRecorded(t *testing.T) {
	h := gatewaytest.NewHarness(t, "fake/model", nil)
	h.G.SetModels(gatewaytest.Models{M: h.Model, SwitchTo: "other/model"})
	res, evs, err := h.Send(t, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if res.Model != "other/model" {
		t.Errorf("answered by %q", res.Model)
	}
	var saw bool
	for _, ev := range evs {
		saw = saw || ev.Type == api.EventFailover && strings.Contains(ev.Text, "fake/model → other/model (unreachable)")
	}
	if !saw {
		t.Errorf("no failover event in %+v", evs)
	}
	if got := strings.Join(h.EntryRoles(t), " "); got != "user custom assistant" {
		t.Errorf("transcript = %s", got)
	}
	_, entries, _ := h.Sessions.History("main", "agent:main:main")
	if e := entries[1]; e.CustomType != gateway.FailoverEntryType || !strings.Contains(string(e.Data), "other/model") {
		t.Errorf("failover entry = %+v", e)
	}
	if m := entries[2].Message; m.Provider != "other" || m.Model != "model" {
		t.Errorf("assistant stamped %s/%s", m.Provider, m.Model)
	}
	st := h.G.Status()
	if !strings.Contains(st.LastFailover, "other/model") || st.LastModel != "other/model" {
		t.Errorf("status = %+v", st)
	}
	if res, _, _ := h.Send(t, "/status"); !strings.Contains(res.Reply, "Last failover") {
		t.Errorf("/status = %q", res.Reply)
	}
}
