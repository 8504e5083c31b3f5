// Package gatewaytest holds the test fakes the turn core, the channel side
// and the control API share (as channeltest and transcripttest do for
// theirs): a scripted model, a model resolver, a channel adapter at the
// contract's boundary, a recording session store, and a harness that
// builds a gateway over a real bbolt file with the real tools.
package gatewaytest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/agent"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/store/bolt"
	"github.com/openclaw-edge/edge/engine/tool"
	"github.com/openclaw-edge/edge/engine/tool/exec"
	"github.com/openclaw-edge/edge/engine/tool/fs"
)

// Step is one scripted model reply.
type Step func(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error

// Model plays steps in order, then echoes.
type Model struct {
	mu    sync.Mutex
	Steps []Step // played in order; then the model echoes
	reqs  []*engine.ChatRequest
}

func (f *Model) Stream(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
	f.mu.Lock()
	i := len(f.reqs)
	f.reqs = append(f.reqs, req)
	var s Step
	if i < len(f.Steps) {
		s = f.Steps[i]
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
	return Reply("echo: "+text)(ctx, req, emit)
}

// Requests are the requests the model got, in order.
func (f *Model) Requests() []*engine.ChatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*engine.ChatRequest(nil), f.reqs...)
}

// Reply streams text word by word and ends the message.
func Reply(text string) Step {
	return func(_ context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
		for _, w := range strings.SplitAfter(text, " ") {
			emit(engine.Event{Type: engine.EventTextDelta, Text: w})
		}
		emit(engine.Event{Type: engine.EventMessageEnd, StopReason: engine.StopEnd, Usage: &engine.Usage{Input: 100, Output: 10, TotalTokens: 110}})
		return nil
	}
}

// CallTool asks for one tool call.
func CallTool(name string, args any) Step {
	return func(_ context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
		raw, _ := json.Marshal(args)
		emit(engine.Event{Type: engine.EventToolCall, ToolCall: &engine.ToolCall{ID: "call_" + name, Name: name, Arguments: raw}})
		emit(engine.Event{Type: engine.EventMessageEnd, StopReason: engine.StopToolUse, Usage: &engine.Usage{Input: 50, Output: 5, TotalTokens: 55}})
		return nil
	}
}

// Fail fails the model call with err.
func Fail(err error) Step {
	return func(context.Context, *engine.ChatRequest, func(engine.Event)) error { return err }
}

// Models resolves "fake/model" to M (gateway.Models).
type Models struct {
	M *Model
	// switchTo, when set, makes every turn fail over to it first.
	SwitchTo string
	// window, when set, is the model's context window (default 32000).
	Window int
	// Local makes the model a local one (ModelInfo.Local: prewarmed after
	// a compaction, its budget share caps the reply).
	Local bool
}

func (f Models) Resolve(refs []string, onSwitch func(gateway.Switch)) (agent.Model, gateway.ModelInfo, func() string, error) {
	ref := refs[0]
	if ref != "fake/model" {
		return nil, gateway.ModelInfo{}, nil, &engine.ModelError{Kind: engine.ErrNoModel, Message: "unknown model " + ref}
	}
	answered := ""
	var model agent.Model = f.M
	if f.SwitchTo != "" {
		model = switching{f.M, func() {
			onSwitch(gateway.Switch{From: ref, To: f.SwitchTo, Reason: "unreachable", Detail: "connection refused"})
			answered = f.SwitchTo
		}}
	}
	window := 32000
	if f.Window > 0 {
		window = f.Window
	}
	return model, gateway.ModelInfo{Ref: ref, Provider: "fake", ID: "model", API: "openai-completions", ContextWindow: window, Local: f.Local}, func() string { return answered }, nil
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
func (f Models) Refs() []string { return []string{"fake/model"} }

// Harness is a gateway over a real bbolt file, the real file and exec
// tools, and a scripted Model.
type Harness struct {
	G         *gateway.Gateway
	Model     *Model
	Workspace string
	Sessions  *session.Manager
	DB        *bolt.DB
}

// NewHarness builds a gateway with one agent "main" whose model is modelRef.
func NewHarness(t *testing.T, modelRef string, allowed func(string) bool, steps ...Step) *Harness {
	return NewHarnessConfig(t, modelRef, allowed, nil, steps...)
}

// State opens a fresh state database, dir/state.db (closed when the test
// ends), and makes the agent's workspace, dir/workspace.
func State(t testing.TB, dir string) (*bolt.DB, string) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, "state.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ws := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	return db, ws
}

// NewHarnessConfig is NewHarness with tweak applied to the gateway's
// config before it is built (more tools, an allowlist); nil: none.
func NewHarnessConfig(t *testing.T, modelRef string, allowed func(string) bool, tweak func(*gateway.Config), steps ...Step) *Harness {
	t.Helper()
	db, ws := State(t, t.TempDir())
	execTools := exec.Tools(exec.Config{Ask: "always", ApprovalTimeout: 2 * time.Second})
	reg := tool.NewRegistry(append(fs.Tools(fs.Config{}), execTools...)...)
	m := &Model{Steps: steps}
	sessions := session.NewManager(db, session.Config{DailyResetHour: new(-1)})
	cfg := gateway.Config{
		Agents:          []gateway.Agent{{ID: "main", Name: "Claw", Workspace: ws, Model: modelRef, Allowed: allowed, MaxTurns: 5}},
		Sessions:        sessions,
		Tools:           reg,
		Models:          Models{M: m},
		ApprovalTimeout: 2 * time.Second,
		Version:         "test",
	}
	if tweak != nil {
		tweak(&cfg)
	}
	g, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &Harness{G: g, Model: m, Workspace: ws, Sessions: sessions, DB: db}
}

// Send sends text from the CLI and collects the events.
func (h *Harness) Send(t *testing.T, text string) (*api.Result, []api.Event, error) {
	t.Helper()
	var mu sync.Mutex
	var evs []api.Event
	res, err := h.G.Send(context.Background(), api.SendRequest{Text: text}, func(ev api.Event) {
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
	})
	return res, evs, err
}

// EntryRoles summarises the current transcript of agent:main:main.
func (h *Harness) EntryRoles(t *testing.T) []string {
	t.Helper()
	_, entries, err := h.Sessions.History("main", "agent:main:main")
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

// Adapter is a channel adapter at the contract's boundary: the test
// plays the platform (Deliver) and reads what was sent.
type Adapter struct {
	name string
	Mu   sync.Mutex // guards Fail and what was sent
	in   channel.Inbox
	sent []channel.Outbound
	Fail func(channel.Outbound) error // when set, may fail a send
	ids  map[string]int               // idempotency key → sends
	up   chan struct{}
}

// NewAdapter returns an adapter of channel name, account "default".
func NewAdapter(name string) *Adapter {
	return &Adapter{name: name, ids: map[string]int{}, up: make(chan struct{})}
}

func (a *Adapter) Channel() string { return a.name }
func (a *Adapter) Account() string { return "default" }
func (a *Adapter) Run(ctx context.Context, in channel.Inbox) error {
	a.Mu.Lock()
	a.in = in
	a.Mu.Unlock()
	select {
	case <-a.up:
	default:
		close(a.up)
	}
	<-ctx.Done()
	return nil
}

func (a *Adapter) Send(ctx context.Context, m channel.Outbound) (channel.Receipt, error) {
	a.Mu.Lock()
	defer a.Mu.Unlock()
	if a.Fail != nil {
		if err := a.Fail(m); err != nil {
			return channel.Receipt{}, err
		}
	}
	a.ids[m.IdempotencyKey]++
	if a.ids[m.IdempotencyKey] > 1 {
		return channel.Receipt{MessageID: "dup-" + m.IdempotencyKey}, nil // the platform drops a repeat
	}
	a.sent = append(a.sent, m)
	return channel.Receipt{MessageID: "m-" + m.IdempotencyKey}, nil
}

func (a *Adapter) Status() channel.Status {
	return channel.Status{State: channel.StateLinked, Self: "+15550009999"}
}

// Deliver plays the platform: m arrives once the adapter runs.
func (a *Adapter) Deliver(t *testing.T, m engine.Inbound) {
	t.Helper()
	<-a.up
	a.Mu.Lock()
	in := a.in
	a.Mu.Unlock()
	if m.Timestamp.IsZero() {
		m.Timestamp = time.Now()
	}
	if err := in.Deliver(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

// WaitSent waits until n messages were sent and returns them.
func (a *Adapter) WaitSent(t *testing.T, n int) []channel.Outbound {
	t.Helper()
	return a.wait(t, func(got []channel.Outbound) bool { return len(got) >= n }, func(got []channel.Outbound) string {
		return fmt.Sprintf("sent %d messages, want %d: %+v", len(got), n, got)
	})
}

// WaitFor waits until ok holds for what was sent.
func (a *Adapter) WaitFor(t *testing.T, ok func([]channel.Outbound) bool) {
	t.Helper()
	a.wait(t, ok, func(got []channel.Outbound) string { return fmt.Sprintf("not sent: %+v", got) })
}

// wait polls what was sent until ok holds (10 s), failing with why.
func (a *Adapter) wait(t *testing.T, ok func([]channel.Outbound) bool, why func([]channel.Outbound) string) []channel.Outbound {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		a.Mu.Lock()
		got := append([]channel.Outbound(nil), a.sent...)
		a.Mu.Unlock()
		if ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatal(why(got))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Record notes req as a request the model got, for a model that wraps
// this one and answers itself.
func (f *Model) Record(req *engine.ChatRequest) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
}

// Reset forgets the steps left and the requests seen.
func (f *Model) Reset() {
	f.mu.Lock()
	f.Steps, f.reqs = nil, nil
	f.mu.Unlock()
}

// MemAllowlist is an in-memory gateway.Allowlist with the store's exact matching.
type MemAllowlist struct {
	mu      sync.Mutex
	entries map[string][]tool.AllowEntry
}

var _ gateway.Allowlist = (*MemAllowlist)(nil)

func sameEntry(a, b tool.AllowEntry) bool {
	if len(a.Argv) > 0 {
		return a.Path == b.Path && slices.Equal(a.Argv, b.Argv)
	}
	return len(b.Argv) == 0 && a.Command == b.Command
}

// Allowed is gateway.Allowlist's.
func (m *MemAllowlist) Allowed(agentID string, e tool.AllowEntry) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.ContainsFunc(m.entries[agentID], func(x tool.AllowEntry) bool { return sameEntry(x, e) }), nil
}

// Add is gateway.Allowlist's.
func (m *MemAllowlist) Add(agentID string, e tool.AllowEntry) error {
	if ok, _ := m.Allowed(agentID, e); ok {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[string][]tool.AllowEntry{}
	}
	m.entries[agentID] = append(m.entries[agentID], e)
	return nil
}

// List is gateway.Allowlist's.
func (m *MemAllowlist) List(agentID string) ([]tool.AllowEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.entries[agentID]), nil
}

// Remove is gateway.Allowlist's.
func (m *MemAllowlist) Remove(agentID string, e tool.AllowEntry) (tool.AllowEntry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := slices.IndexFunc(m.entries[agentID], func(x tool.AllowEntry) bool { return sameEntry(x, e) })
	if i < 0 {
		return tool.AllowEntry{}, false, nil
	}
	old := m.entries[agentID][i]
	m.entries[agentID] = slices.Delete(m.entries[agentID], i, i+1)
	return old, true, nil
}

// Exec stands in for the exec tool: it runs
// nothing, but follows the contract — allowlisted commands run without
// asking, everything else asks env.Approver, allow-always adds the command
// to the allowlist — and records what it decided.
type Exec struct {
	Allow *MemAllowlist

	mu   sync.Mutex
	runs []string // "<command>: <how>" — how is "allowlist" or the decision
}

// ExecArgs are Exec's arguments.
type ExecArgs struct {
	Command    string   `json:"command"`
	Argv       []string `json:"argv"`
	Env        []string `json:"env"`
	Background bool     `json:"background"`
}

// Spec names the tool "fakeexec".
func (f *Exec) Spec() engine.ToolSpec {
	return engine.ToolSpec{Name: "fakeexec", Description: "runs a command", Parameters: json.RawMessage(`{"type":"object"}`)}
}

// Run follows exec's contract without running anything.
func (f *Exec) Run(ctx context.Context, env tool.Env, raw json.RawMessage) engine.ToolResult {
	var a ExecArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return engine.ErrorResult("%v", err)
	}
	entry := tool.AllowEntry{Command: a.Command}
	resolved := ""
	if len(a.Argv) > 0 {
		resolved = "/usr/bin/" + a.Argv[0]
		entry = tool.AllowEntry{Path: resolved, Argv: a.Argv}
	}
	if ok, _ := f.Allow.Allowed(env.AgentID, entry); ok {
		f.record(a.Command + ": allowlist")
		return engine.TextResult("ran " + a.Command)
	}
	if env.Approver == nil {
		return engine.ErrorResult("no approver")
	}
	d, err := env.Approver.Approve(ctx, tool.ApprovalRequest{
		Command: a.Command, Argv: a.Argv, Resolved: resolved, Cwd: env.Workspace,
		Env: a.Env, Background: a.Background, Reason: "not in safeBins",
	})
	if err != nil || !d.Allowed() {
		f.record(a.Command + ": " + string(d))
		return engine.ErrorResult("denied")
	}
	if d == tool.DecisionAllowAlways {
		entry.AddedAt = time.Now()
		if err := f.Allow.Add(env.AgentID, entry); err != nil {
			return engine.ErrorResult("%v", err)
		}
	}
	f.record(a.Command + ": " + string(d))
	return engine.TextResult("ran " + a.Command)
}

func (f *Exec) record(s string) {
	f.mu.Lock()
	f.runs = append(f.runs, s)
	f.mu.Unlock()
}

// Got lists what the tool decided, in order.
func (f *Exec) Got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.runs)
}

// RunCmd asks Exec to run argv.
func RunCmd(argv ...string) Step {
	return CallTool("fakeexec", ExecArgs{Command: strings.Join(argv, " "), Argv: argv})
}
