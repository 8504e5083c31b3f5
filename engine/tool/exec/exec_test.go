package exec

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/tool"
)

// fakeApprover is a hand-written fake: decide answers each request.
type fakeApprover struct {
	mu       sync.Mutex
	requests []tool.ApprovalRequest
	decide   func(ctx context.Context, req tool.ApprovalRequest) (tool.Decision, error)
}

var _ tool.Approver = (*fakeApprover)(nil)

func (a *fakeApprover) Approve(ctx context.Context, req tool.ApprovalRequest) (tool.Decision, error) {
	a.mu.Lock()
	a.requests = append(a.requests, req)
	a.mu.Unlock()
	return a.decide(ctx, req)
}

func (a *fakeApprover) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.requests)
}

func answer(d tool.Decision) *fakeApprover {
	return &fakeApprover{decide: func(context.Context, tool.ApprovalRequest) (tool.Decision, error) { return d, nil }}
}

type harness struct {
	t     *testing.T
	ws    string
	exec  tool.Tool
	proc  tool.Tool
	procs *Processes
	env   tool.Env
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	ws := t.TempDir()
	cfg.Processes = NewProcesses()
	t.Cleanup(func() {
		if err := cfg.Processes.Close(); err != nil {
			t.Error(err)
		}
	})
	tools := Tools(cfg)
	return &harness{t: t, ws: ws, exec: tools[0], proc: tools[1], procs: cfg.Processes,
		env: tool.Env{Workspace: ws, AgentID: "main", SessionKey: "agent:main:main"}}
}

func (h *harness) run(tl tool.Tool, args map[string]any) engine.ToolResult {
	h.t.Helper()
	return h.runCtx(context.Background(), tl, args)
}

func (h *harness) runCtx(ctx context.Context, tl tool.Tool, args map[string]any) engine.ToolResult {
	h.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		h.t.Fatal(err)
	}
	return tl.Run(ctx, h.env, raw)
}

func (h *harness) exists(name string) bool {
	_, err := os.Stat(filepath.Join(h.ws, name))
	return err == nil
}

func text(r engine.ToolResult) string {
	if len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

func TestApprovalModes(t *testing.T) {
	t.Parallel()
	const marker = "touch marker"
	denied := "exec denied: `touch marker` was not approved"
	tests := []struct {
		name     string
		cfg      Config
		approver *fakeApprover
		args     map[string]any
		wantRun  bool
		wantAsk  int
		wantText string
	}{
		{"safe bin runs without an approver", Config{}, nil,
			map[string]any{"command": "echo hi"}, false, 0, "hi\n\n(exit code 0)"},
		{"unsafe with nil approver is denied", Config{}, nil,
			map[string]any{"command": marker}, false, 0, denied + " (no approver is available for this session); nothing was run"},
		{"owner denies", Config{}, answer(tool.DecisionDeny),
			map[string]any{"command": marker}, false, 1, denied + " (denied by the owner)"},
		{"owner allows once", Config{}, answer(tool.DecisionAllowOnce),
			map[string]any{"command": marker}, true, 1, "(exit code 0)"},
		{"owner allows always without an allowlist", Config{}, answer(tool.DecisionAllowAlways),
			map[string]any{"command": marker}, true, 1, "(exit code 0)"},
		{"owner runs it elevated", Config{}, answer(tool.DecisionElevated),
			map[string]any{"command": marker}, true, 1, "(exit code 0)"},
		{"unknown decision is a denial", Config{}, answer("maybe"),
			map[string]any{"command": marker}, false, 1, `unknown decision "maybe"`},
		{"approver error", Config{}, &fakeApprover{decide: func(context.Context, tool.ApprovalRequest) (tool.Decision, error) {
			return "", errors.New("channel down")
		}}, map[string]any{"command": marker}, false, 1, denied + " (channel down); nothing was run"},
		{"approval timeout", Config{ApprovalTimeout: 50 * time.Millisecond}, &fakeApprover{decide: func(ctx context.Context, _ tool.ApprovalRequest) (tool.Decision, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}}, map[string]any{"command": marker}, false, 1, "no answer within 50ms"},
		{"deny refuses safe commands", Config{Security: SecurityDeny}, answer(tool.DecisionAllowOnce),
			map[string]any{"command": "echo hi"}, false, 0, "tools.exec.security=deny"},
		{"deny refuses the rest", Config{Security: SecurityDeny, Ask: AskOff}, answer(tool.DecisionAllowOnce),
			map[string]any{"command": marker}, false, 0, "tools.exec.security=deny"},
		{"allowlist with ask off refuses a miss", Config{Ask: AskOff}, answer(tool.DecisionAllowOnce),
			map[string]any{"command": marker}, false, 0, "tools.exec.ask=off"},
		{"allowlist with ask off runs safe", Config{Ask: AskOff}, answer(tool.DecisionDeny),
			map[string]any{"command": "echo hi"}, false, 0, "hi\n"},
		{"allowlist with ask always asks for safe", Config{Ask: AskAlways}, answer(tool.DecisionDeny),
			map[string]any{"command": "echo hi"}, false, 1, "denied by the owner"},
		{"full with ask off runs", Config{Security: SecurityFull, Ask: AskOff}, nil,
			map[string]any{"command": marker}, true, 0, "(exit code 0)"},
		{"full with ask on-miss runs", Config{Security: SecurityFull, Ask: AskOnMiss}, answer(tool.DecisionDeny),
			map[string]any{"command": marker}, true, 0, "(exit code 0)"},
		{"full with ask always asks", Config{Security: SecurityFull, Ask: AskAlways}, answer(tool.DecisionDeny),
			map[string]any{"command": marker}, false, 1, denied},
		{"unknown security value is deny", Config{Security: "sandbox", Ask: AskOff}, nil,
			map[string]any{"command": marker}, false, 0, "security=deny"},
		{"unknown ask value asks", Config{Security: SecurityFull, Ask: "elevated"}, answer(tool.DecisionDeny),
			map[string]any{"command": marker}, false, 1, denied},
		{"the model's elevated argument is ignored", Config{}, answer(tool.DecisionDeny),
			map[string]any{"command": marker, "elevated": true}, false, 1, denied},
		{"safe bin with env asks", Config{}, answer(tool.DecisionDeny),
			map[string]any{"command": "ls", "env": map[string]string{"COLUMNS": "80"}}, false, 1, "exec denied: `ls` was not approved"},
		{"unsafe option of a safe bin asks", Config{}, answer(tool.DecisionDeny),
			map[string]any{"command": "sort --co=sh x"}, false, 1, "was not approved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.cfg)
			if tt.approver != nil {
				h.env.Approver = tt.approver
			}
			res := h.run(h.exec, tt.args)
			if !strings.Contains(text(res), tt.wantText) {
				t.Errorf("result %q does not contain %q", text(res), tt.wantText)
			}
			if ran := h.exists("marker"); ran != tt.wantRun {
				t.Errorf("marker created = %v, want %v (%s)", ran, tt.wantRun, text(res))
			}
			if !tt.wantRun && !strings.Contains(tt.args["command"].(string), "echo hi") && !res.IsError {
				t.Error("a command that did not run is not an error")
			}
			if tt.approver != nil && tt.approver.count() != tt.wantAsk {
				t.Errorf("approver asked %d times, want %d", tt.approver.count(), tt.wantAsk)
			}
		})
	}
}

func TestAllowOnceIsOnce(t *testing.T) {
	h := newHarness(t, Config{})
	decisions := []tool.Decision{tool.DecisionAllowOnce, tool.DecisionDeny}
	ap := &fakeApprover{}
	ap.decide = func(context.Context, tool.ApprovalRequest) (tool.Decision, error) {
		return decisions[ap.count()-1], nil
	}
	h.env.Approver = ap
	if res := h.run(h.exec, map[string]any{"command": "touch one"}); res.IsError {
		t.Fatalf("first call: %s", text(res))
	}
	if res := h.run(h.exec, map[string]any{"command": "touch two"}); !res.IsError {
		t.Fatalf("second call ran without a new approval: %s", text(res))
	}
	if !h.exists("one") || h.exists("two") {
		t.Error("allow-once applied to more than one call")
	}
	req := ap.requests[0]
	if req.Command != "touch one" || req.Cwd != h.ws || req.Reason == "" {
		t.Errorf("approval request %+v", req)
	}
}

func TestExecResult(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{Security: SecurityFull, Ask: AskOff, MaxOutput: 1000})
	if err := os.Mkdir(filepath.Join(h.ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    map[string]any
		wantErr bool
		want    []string
		code    int
	}{
		{"stdout and stderr", map[string]any{"command": "echo out; echo err >&2"}, false, []string{"out\nerr\n\n(exit code 0)"}, 0},
		{"non-zero exit", map[string]any{"command": "echo bad; exit 3"}, true, []string{"bad\n", "(exit code 3)"}, 3},
		{"no output", map[string]any{"command": "true"}, false, []string{"(no output)\n\n(exit code 0)"}, 0},
		{"workdir", map[string]any{"command": "pwd", "workdir": "sub"}, false, []string{filepath.Join(h.ws, "sub")}, 0},
		{"env", map[string]any{"command": "echo $GREETING", "env": map[string]string{"GREETING": "hola"}}, false, []string{"hola"}, 0},
		{"output capped", map[string]any{"command": "i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done"}, false,
			[]string{"line0\n", "bytes of output omitted", "line1999\n"}, 0},
		{"stdin is empty", map[string]any{"command": "cat"}, false, []string{"(no output)"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := h.run(h.exec, tt.args)
			if res.IsError != tt.wantErr {
				t.Errorf("IsError = %v: %s", res.IsError, text(res))
			}
			for _, w := range tt.want {
				if !strings.Contains(text(res), w) {
					t.Errorf("result %q does not contain %q", text(res), w)
				}
			}
			var d struct {
				ExitCode   int  `json:"exitCode"`
				DurationMs *int `json:"durationMs"`
				Truncated  bool `json:"truncated"`
			}
			if err := json.Unmarshal(res.Details, &d); err != nil {
				t.Fatal(err)
			}
			if d.ExitCode != tt.code || d.DurationMs == nil {
				t.Errorf("details %s", res.Details)
			}
		})
	}
	for _, args := range []map[string]any{
		{"command": "pwd", "workdir": ".."},
		{"command": "pwd", "workdir": "/"},
		{"command": "pwd", "workdir": "missing"},
		{"command": "  "},
		{"command": "echo", "env": map[string]string{"A=B": "x"}},
	} {
		if res := h.run(h.exec, args); !res.IsError {
			t.Errorf("%v: no error: %s", args, text(res))
		}
	}
}

func TestTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{Security: SecurityFull, Ask: AskOff})
	// The shell starts a grandchild that would create the marker later;
	// killing only the shell would leave it running.
	res := h.run(h.exec, map[string]any{"command": "(sleep 3; touch marker) & sleep 30", "timeout": 1})
	if !res.IsError || !strings.Contains(text(res), "killed: no exit within 1s") || !strings.Contains(text(res), "(exit code 137)") {
		t.Fatalf("result: %s", text(res))
	}
	var d struct {
		TimedOut bool `json:"timedOut"`
	}
	_ = json.Unmarshal(res.Details, &d)
	if !d.TimedOut {
		t.Errorf("details %s", res.Details)
	}
	time.Sleep(3500 * time.Millisecond)
	if h.exists("marker") {
		t.Error("the grandchild survived the timeout")
	}
}

func TestCancelKillsCommand(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{Security: SecurityFull, Ask: AskOff})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	res := h.runCtx(ctx, h.exec, map[string]any{"command": "sleep 30"})
	if !res.IsError || !strings.Contains(text(res), "the turn was stopped") {
		t.Fatalf("result: %s", text(res))
	}
}

func TestBackgroundProcess(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{Security: SecurityFull, Ask: AskOff})
	res := h.run(h.exec, map[string]any{"command": "echo started; read line; echo got $line; sleep 30", "background": true})
	if res.IsError {
		t.Fatal(text(res))
	}
	var d struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res.Details, &d); err != nil || !strings.HasPrefix(d.SessionID, "proc-") {
		t.Fatalf("details %s", res.Details)
	}
	id := d.SessionID

	// Output arrives; poll returns only what is new.
	waitFor(t, func() bool {
		return strings.Contains(text(h.run(h.proc, map[string]any{"action": "log", "sessionId": id})), "started")
	})
	if got := text(h.run(h.proc, map[string]any{"action": "poll", "sessionId": id})); !strings.Contains(got, "started") || !strings.Contains(got, "is running") {
		t.Errorf("first poll: %s", got)
	}
	if got := text(h.run(h.proc, map[string]any{"action": "poll", "sessionId": id})); !strings.Contains(got, "(no new output)") {
		t.Errorf("second poll: %s", got)
	}
	// stdin reaches it.
	if res := h.run(h.proc, map[string]any{"action": "write", "sessionId": id, "data": "ping\n"}); res.IsError {
		t.Fatal(text(res))
	}
	waitFor(t, func() bool {
		return strings.Contains(text(h.run(h.proc, map[string]any{"action": "log", "sessionId": id})), "got ping")
	})
	if got := text(h.run(h.proc, map[string]any{"action": "list"})); !strings.Contains(got, id) || !strings.Contains(got, "running") {
		t.Errorf("list: %s", got)
	}
	// Another session sees nothing.
	other := h.env
	other.SessionKey = "agent:main:other"
	raw, _ := json.Marshal(map[string]any{"action": "kill", "sessionId": id})
	if res := h.proc.Run(context.Background(), other, raw); !res.IsError {
		t.Errorf("another session killed the process: %s", text(res))
	}
	// Kill.
	if got := text(h.run(h.proc, map[string]any{"action": "kill", "sessionId": id})); !strings.Contains(got, "was killed") {
		t.Errorf("kill: %s", got)
	}
	if got := text(h.run(h.proc, map[string]any{"action": "poll", "sessionId": id})); !strings.Contains(got, "was killed (exit code 137)") {
		t.Errorf("poll after kill: %s", got)
	}
}

func TestBackgroundExitAndPollWait(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{Security: SecurityFull, Ask: AskOff})
	res := h.run(h.exec, map[string]any{"command": "echo one; echo two; exit 4", "background": true})
	var d struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(res.Details, &d)
	got := text(h.run(h.proc, map[string]any{"action": "poll", "sessionId": d.SessionID, "timeout": 20}))
	if !strings.Contains(got, "one\ntwo\n") || !strings.Contains(got, "exited with code 4") {
		t.Errorf("poll: %s", got)
	}
	if got := text(h.run(h.proc, map[string]any{"action": "log", "sessionId": d.SessionID, "offset": 1, "limit": 1})); !strings.HasPrefix(got, "two\n") {
		t.Errorf("log offset=1 limit=1: %q", got)
	}
	if res := h.run(h.proc, map[string]any{"action": "write", "sessionId": d.SessionID, "data": "x"}); !res.IsError {
		t.Error("write to an exited process succeeded")
	}
	for _, args := range []map[string]any{{"action": "poll"}, {"action": "poll", "sessionId": "proc-nope"}, {"action": "dance"}, {}} {
		if res := h.run(h.proc, args); !res.IsError {
			t.Errorf("%v: no error: %s", args, text(res))
		}
	}
}

func TestBackgroundNeedsApproval(t *testing.T) {
	h := newHarness(t, Config{})
	res := h.run(h.exec, map[string]any{"command": "touch marker", "background": true})
	if !res.IsError || !strings.Contains(text(res), "nothing was run") {
		t.Fatalf("result: %s", text(res))
	}
	time.Sleep(100 * time.Millisecond)
	if h.exists("marker") {
		t.Error("an unapproved background command ran")
	}
}

func TestCloseKillsBackground(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{Security: SecurityFull, Ask: AskOff})
	res := h.run(h.exec, map[string]any{"command": "sleep 2; touch marker", "background": true})
	if res.IsError {
		t.Fatal(text(res))
	}
	// The gateway closes the tools that are io.Closers.
	if err := h.proc.(io.Closer).Close(); err != nil {
		t.Fatal(err)
	}
	if res := h.run(h.exec, map[string]any{"command": "true", "background": true}); !res.IsError {
		t.Error("background start after Close succeeded")
	}
	time.Sleep(2500 * time.Millisecond)
	if h.exists("marker") {
		t.Error("a background process survived Close")
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
	if err := (Config{Ask: AskOnMiss, Security: SecurityAllowlist}).Validate(); err != nil {
		t.Errorf("defaults spelled out: %v", err)
	}
	for _, tt := range []struct {
		cfg  Config
		want []string
	}{
		{Config{Ask: "never", Security: "loose", SafeBins: []string{"/bin/ls"}},
			[]string{`ask: "never" is not one of off, on-miss, always`, `security: "loose" is not one of deny, allowlist, full`, `safeBins: "/bin/ls"`}},
		{Config{Ask: "elevated"}, []string{`ask: "elevated" is no longer a mode; use off, on-miss or always`, "/approve <id> elevated"}},
		{Config{Security: "sandbox"}, []string{`security: "sandbox" is no longer a mode; use deny, allowlist or full`, "every exec child"}},
	} {
		err := tt.cfg.Validate()
		for _, want := range tt.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Validate(%+v) = %v, want it to mention %s", tt.cfg, err, want)
			}
		}
	}
}

func TestRing(t *testing.T) {
	r := newRing(10)
	_, _ = r.Write([]byte("0123456789abcdef"))
	data, start, end := r.since(0, 100)
	if string(data) != "6789abcdef" || start != 6 || end != 16 {
		t.Errorf("since(0) = %q, %d, %d", data, start, end)
	}
	data, _, end = r.since(12, 2)
	if string(data) != "cd" || end != 14 {
		t.Errorf("since(12, 2) = %q, %d", data, end)
	}
	b := newCapBuffer(8)
	_, _ = b.Write([]byte("abcdefghijklmnop"))
	if s, trunc := b.String(); !trunc || !strings.HasPrefix(s, "abcd") || !strings.HasSuffix(s, "mnop") {
		t.Errorf("capBuffer = %q, %v", s, trunc)
	}
}

// waitFor polls cond until it holds or 10 s pass (a bound on a hang, not a
// timing assertion).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
