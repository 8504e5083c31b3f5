package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/agent"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/store/bolt"
	"github.com/openclaw-edge/edge/engine/tool"
	"github.com/openclaw-edge/edge/engine/tool/exec"
	"github.com/openclaw-edge/edge/engine/tool/fs"
)

// step is one scripted model reply.
type step func(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error

// fakeModel plays steps in order, then echoes.
type fakeModel struct {
	mu    sync.Mutex
	steps []step
	reqs  []*engine.ChatRequest
}

func (f *fakeModel) Stream(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
	f.mu.Lock()
	i := len(f.reqs)
	f.reqs = append(f.reqs, req)
	var s step
	if i < len(f.steps) {
		s = f.steps[i]
	}
	f.mu.Unlock()
	if s != nil {
		return s(ctx, req, emit)
	}
	last := req.Messages[len(req.Messages)-1]
	text := last.Text()
	if i := strings.LastIndex(text, "\n"); i >= 0 {
		text = text[i+1:]
	}
	return reply("echo: "+text)(ctx, req, emit)
}

func (f *fakeModel) requests() []*engine.ChatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*engine.ChatRequest(nil), f.reqs...)
}

func reply(text string) step {
	return func(_ context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
		for _, w := range strings.SplitAfter(text, " ") {
			emit(engine.Event{Type: engine.EventTextDelta, Text: w})
		}
		emit(engine.Event{Type: engine.EventMessageEnd, StopReason: engine.StopEnd, Usage: &engine.Usage{Input: 100, Output: 10, TotalTokens: 110}})
		return nil
	}
}

func callTool(name string, args any) step {
	return func(_ context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
		raw, _ := json.Marshal(args)
		emit(engine.Event{Type: engine.EventToolCall, ToolCall: &engine.ToolCall{ID: "call_" + name, Name: name, Arguments: raw}})
		emit(engine.Event{Type: engine.EventMessageEnd, StopReason: engine.StopToolUse, Usage: &engine.Usage{Input: 50, Output: 5, TotalTokens: 55}})
		return nil
	}
}

func fail(err error) step {
	return func(context.Context, *engine.ChatRequest, func(engine.Event)) error { return err }
}

type fakeModels struct {
	m *fakeModel
	// switchTo, when set, makes every turn fail over to it first.
	switchTo string
	// window, when set, is the model's context window (default 32000).
	window int
}

func (f fakeModels) Resolve(refs []string, onSwitch func(Switch)) (agent.Model, ModelInfo, func() string, error) {
	ref := refs[0]
	if ref != "fake/model" {
		return nil, ModelInfo{}, nil, &engine.ModelError{Kind: engine.ErrNoModel, Message: "unknown model " + ref}
	}
	answered := ""
	var model agent.Model = f.m
	if f.switchTo != "" {
		model = switching{f.m, func() {
			onSwitch(Switch{From: ref, To: f.switchTo, Reason: "unreachable", Detail: "connection refused"})
			answered = f.switchTo
		}}
	}
	window := 32000
	if f.window > 0 {
		window = f.window
	}
	return model, ModelInfo{Ref: ref, Provider: "fake", ID: "model", API: "openai-completions", ContextWindow: window}, func() string { return answered }, nil
}

// switching announces a failover, then lets the next model answer.
type switching struct {
	next agent.Model
	sw   func()
}

func (s switching) Stream(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
	s.sw()
	return s.next.Stream(ctx, req, emit)
}
func (f fakeModels) Refs() []string { return []string{"fake/model"} }

type harness struct {
	g         *Gateway
	model     *fakeModel
	workspace string
	sessions  *session.Manager
	db        *bolt.DB
}

func newHarness(t *testing.T, modelRef string, allowed func(string) bool, steps ...step) *harness {
	t.Helper()
	dir := t.TempDir()
	db, err := bolt.Open(filepath.Join(dir, "state.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ws := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	execTools := exec.Tools(exec.Config{Ask: "always", ApprovalTimeout: 2 * time.Second})
	reg := tool.NewRegistry(append(fs.Tools(fs.Config{}), execTools...)...)
	m := &fakeModel{steps: steps}
	sessions := session.NewManager(db, session.Config{DailyResetHour: new(-1)})
	g, err := New(Config{
		Agents:          []Agent{{ID: "main", Name: "Claw", Workspace: ws, Model: modelRef, Allowed: allowed, MaxTurns: 5}},
		Sessions:        sessions,
		Tools:           reg,
		Models:          fakeModels{m: m},
		ApprovalTimeout: 2 * time.Second,
		Version:         "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{g: g, model: m, workspace: ws, sessions: sessions, db: db}
}

func (h *harness) send(t *testing.T, text string) (*api.Result, []api.Event, error) {
	t.Helper()
	var mu sync.Mutex
	var evs []api.Event
	res, err := h.g.Send(context.Background(), api.SendRequest{Text: text}, func(ev api.Event) {
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
	})
	return res, evs, err
}

// entryRoles summarises the current transcript of agent:main:main.
func (h *harness) entryRoles(t *testing.T) []string {
	t.Helper()
	_, entries, err := h.sessions.History("main", "agent:main:main")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Message != nil {
			s := string(e.Message.Role)
			if e.Message.IsError {
				s += "!"
			}
			out = append(out, s)
		} else {
			out = append(out, string(e.Type))
		}
	}
	return out
}

func TestSendPersistsTurn(t *testing.T) {
	h := newHarness(t, "fake/model", nil, reply("hi there"))
	res, evs, err := h.send(t, "hello")
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
	if got := strings.Join(h.entryRoles(t), " "); got != "user assistant" {
		t.Errorf("transcript = %s", got)
	}
	e, _, _ := h.sessions.Get("main", "agent:main:main")
	if e.OpenTurn != "" || e.InputTokens != 100 || e.LastModel != "fake/model" {
		t.Errorf("session entry = %+v", e)
	}
	// The user message carries the trusted metadata block; the system prompt
	// does not carry per-message data.
	req := h.model.requests()[0]
	if !strings.Contains(req.Messages[0].Text(), "openclaw.inbound_meta.v2") || !strings.HasSuffix(req.Messages[0].Text(), "hello") {
		t.Errorf("user message = %q", req.Messages[0].Text())
	}
	if req.CacheBoundary <= 0 || req.CacheBoundary > len(req.System) {
		t.Errorf("cache boundary %d of %d", req.CacheBoundary, len(req.System))
	}
}

func TestWriteToolCreatesFile(t *testing.T) {
	h := newHarness(t, "fake/model", nil,
		callTool("write", map[string]string{"path": "notes/todo.md", "content": "buy milk\n"}),
		reply("Saved."))
	res, evs, err := h.send(t, "remember to buy milk")
	if err != nil {
		t.Fatal(err)
	}
	if res.Reply != "Saved." {
		t.Fatalf("reply %q", res.Reply)
	}
	data, err := os.ReadFile(filepath.Join(h.workspace, "notes/todo.md"))
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
	if got := strings.Join(h.entryRoles(t), " "); got != "user assistant toolResult assistant" {
		t.Errorf("transcript = %s", got)
	}
}

func TestRefusedToolCalls(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "escape.txt")
	marker := filepath.Join(t.TempDir(), "ran")
	tests := []struct {
		name    string
		allowed func(string) bool
		call    step
		want    string // in the tool result
		check   func(t *testing.T)
	}{
		{
			name: "write outside the workspace",
			call: callTool("write", map[string]string{"path": outside, "content": "x"}),
			want: "outside the workspace",
			check: func(t *testing.T) {
				if _, err := os.Stat(outside); err == nil {
					t.Error("file written outside the workspace")
				}
			},
		},
		{
			name: "write through ..",
			call: callTool("write", map[string]string{"path": "../escape.txt", "content": "x"}),
			want: "outside the workspace",
		},
		{
			name:    "denied tool",
			allowed: func(name string) bool { return name != "write" },
			call:    callTool("write", map[string]string{"path": "a.txt", "content": "x"}),
			want:    "not allowed by policy",
		},
		{
			name: "unapproved exec",
			call: callTool("exec", map[string]string{"command": "touch " + marker}),
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
			h := newHarness(t, "fake/model", tt.allowed, tt.call, reply("ok"))
			if _, _, err := h.send(t, "do it"); err != nil {
				t.Fatal(err)
			}
			reqs := h.model.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model calls", len(reqs))
			}
			msgs := reqs[1].Messages
			res := msgs[len(msgs)-1]
			if res.Role != engine.RoleToolResult || !res.IsError || !strings.Contains(res.Text(), tt.want) {
				t.Fatalf("tool result = %+v", res)
			}
			if _, err := os.Stat(filepath.Join(h.workspace, "a.txt")); err == nil {
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
			h := newHarness(t, "fake/model", nil, callTool("exec", map[string]string{"command": "echo ran > out.txt"}), reply("done"))
			var wg sync.WaitGroup
			wg.Add(1)
			var sendErr error
			go func() {
				defer wg.Done()
				_, sendErr = h.g.Send(context.Background(), api.SendRequest{Text: "run it"}, func(ev api.Event) {
					if ev.Type == api.EventApproval {
						go func() {
							res, err := h.g.Send(context.Background(), api.SendRequest{Text: "/" + decision + " " + ev.Approval.ID}, nil)
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
			_, err := os.Stat(filepath.Join(h.workspace, "out.txt"))
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
	h := newHarness(t, "fake/model", nil, reply("NO_REPLY"))
	res, evs, err := h.send(t, "ping")
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
	h := newHarness(t, "fake/model", nil, fail(&engine.ModelError{Kind: engine.ErrAuth, Provider: "fake", Status: 401, Message: "invalid key"}))
	_, _, err := h.send(t, "hello")
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeModelFailed || !strings.Contains(ae.Message, "credentials") {
		t.Fatalf("err = %v", err)
	}
	if got := strings.Join(h.entryRoles(t), " "); got != "user assistant" {
		t.Errorf("transcript = %s", got)
	}
	e, _, _ := h.sessions.Get("main", "agent:main:main")
	if e.OpenTurn != "" {
		t.Error("failed turn left open")
	}
	if st := h.g.Status(); !strings.Contains(st.LastError, "invalid key") {
		t.Errorf("last error = %q", st.LastError)
	}
	// The next message works.
	res, _, err := h.send(t, "again")
	if err != nil || res.Reply != "echo: again" {
		t.Fatalf("next turn: %+v %v", res, err)
	}
}

func TestNoModelConfigured(t *testing.T) {
	h := newHarness(t, "", nil)
	_, _, err := h.send(t, "hello")
	var ae *api.Error
	if !errors.As(err, &ae) || !strings.Contains(ae.Message, "no model is configured") {
		t.Fatalf("err = %v", err)
	}
	if got := strings.Join(h.entryRoles(t), " "); got != "user assistant" {
		t.Errorf("inbound not kept: %s", got)
	}
}

func TestCommands(t *testing.T) {
	h := newHarness(t, "fake/model", nil)
	if _, _, err := h.send(t, "first"); err != nil {
		t.Fatal(err)
	}
	before, _, _ := h.sessions.Get("main", "agent:main:main")
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
		res, _, err := h.send(t, tt.text)
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
	after, _, _ := h.sessions.Get("main", "agent:main:main")
	// The explicit fresh start clears /think and /model (daily and idle
	// resets keep them: engine/session TestResets).
	if after.SessionID == before.SessionID || after.ThinkingLevel != "" || after.ModelOverride != "" {
		t.Errorf("after /new: %+v (before %s)", after, before.SessionID)
	}
	if res, _, err := h.send(t, "/new"); err != nil || strings.Contains(res.Reply, "Cleared") {
		t.Errorf("/new with nothing to clear: %+v %v", res, err)
	}
	// Unknown slash words are ordinary text.
	res, _, err := h.send(t, "/etc/hosts is a file")
	if err != nil || res.Command != "" {
		t.Errorf("plain text with slash: %+v %v", res, err)
	}
}

func TestStopAbortsTurn(t *testing.T) {
	started := make(chan struct{})
	h := newHarness(t, "fake/model", nil, func(ctx context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
		emit(engine.Event{Type: engine.EventTextDelta, Text: "thinking about it"})
		close(started)
		<-ctx.Done()
		return &engine.ModelError{Kind: engine.ErrAborted, Err: ctx.Err()}
	})
	done := make(chan error, 1)
	go func() { _, _, err := h.send(t, "long task"); done <- err }()
	<-started
	res, _, err := h.send(t, "/stop")
	if err != nil || !strings.Contains(res.Reply, "Stopped") {
		t.Fatalf("/stop: %+v %v", res, err)
	}
	err = <-done
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeAborted {
		t.Fatalf("turn err = %v", err)
	}
	e, _, _ := h.sessions.Get("main", "agent:main:main")
	if e.OpenTurn != "" {
		t.Error("aborted turn left open")
	}
}

func TestSessionsRunInParallelTurnsInOrder(t *testing.T) {
	h := newHarness(t, "fake/model", nil)
	var wg sync.WaitGroup
	const sessions, perSession = 8, 5
	errs := make(chan error, sessions*perSession)
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("agent:main:s%d", s)
			for i := range perSession {
				res, err := h.g.Send(context.Background(), api.SendRequest{Text: fmt.Sprintf("m%d", i), SessionKey: key}, nil)
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
		_, entries, err := h.sessions.History("main", key)
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
	h := newHarness(t, "fake/model", nil)
	// A turn that began but never ended, as after a SIGKILL.
	if _, err := h.sessions.BeginTurn("main", "agent:main:main", session.Meta{}, "", engine.UserText("lost?")); err != nil {
		t.Fatal(err)
	}
	n, err := h.g.RecoverInterrupted()
	if err != nil || n != 1 {
		t.Fatalf("recovered %d, %v", n, err)
	}
	if got := strings.Join(h.entryRoles(t), " "); got != "user assistant" {
		t.Errorf("transcript = %s", got)
	}
	if n, _ := h.g.RecoverInterrupted(); n != 0 {
		t.Errorf("recovered again: %d", n)
	}
}

func TestDuplicateMessageDropped(t *testing.T) {
	h := newHarness(t, "fake/model", nil)
	for i := range 2 {
		res, err := h.g.Send(context.Background(), api.SendRequest{Text: "once", MessageID: "m-1"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 && !res.Suppressed {
			t.Errorf("duplicate answered: %+v", res)
		}
	}
	if n := len(h.model.requests()); n != 1 {
		t.Errorf("model called %d times", n)
	}
}

func TestBadRequests(t *testing.T) {
	h := newHarness(t, "fake/model", nil)
	for _, req := range []api.SendRequest{
		{Text: "  "},
		{Text: "x", SessionKey: "agent:main"},
		{Text: "x", SessionKey: "has space"},
		{Text: "x", AgentID: "nobody"},
		{Text: "x", SessionKey: "agent:main:main", AgentID: "other"},
	} {
		_, err := h.g.Send(context.Background(), req, nil)
		var ae *api.Error
		if !errors.As(err, &ae) || (ae.Code != api.CodeBadRequest && ae.Code != api.CodeNotFound) {
			t.Errorf("%+v: err = %v", req, err)
		}
	}
	if n := len(h.model.requests()); n != 0 {
		t.Errorf("model called %d times", n)
	}
}

func TestFailoverIsRecorded(t *testing.T) {
	h := newHarness(t, "fake/model", nil)
	h.g.cfg.Models = fakeModels{m: h.model, switchTo: "other/model"}
	res, evs, err := h.send(t, "hello")
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
	if got := strings.Join(h.entryRoles(t), " "); got != "user custom assistant" {
		t.Errorf("transcript = %s", got)
	}
	_, entries, _ := h.sessions.History("main", "agent:main:main")
	if e := entries[1]; e.CustomType != FailoverEntryType || !strings.Contains(string(e.Data), "other/model") {
		t.Errorf("failover entry = %+v", e)
	}
	if m := entries[2].Message; m.Provider != "other" || m.Model != "model" {
		t.Errorf("assistant stamped %s/%s", m.Provider, m.Model)
	}
	st := h.g.Status()
	if !strings.Contains(st.LastFailover, "other/model") || st.LastModel != "other/model" {
		t.Errorf("status = %+v", st)
	}
	if res, _, _ := h.send(t, "/status"); !strings.Contains(res.Reply, "Last failover") {
		t.Errorf("/status = %q", res.Reply)
	}
}
