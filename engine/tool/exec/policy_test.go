package exec

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/tool"
)

// fakeSandbox records what it wraps and runs it unchanged.
type fakeSandbox struct {
	mu    sync.Mutex
	calls [][]string // argv
	tmps  []string
	err   error
}

func (s *fakeSandbox) Wrap(argv []string, workspace, tmp string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, slices.Clone(argv))
	s.tmps = append(s.tmps, tmp)
	return argv, s.err
}

func (s *fakeSandbox) Status() (bool, string) { return true, "fake" }

// fakeAllowlist is an in-memory allowlist with exact matching.
type fakeAllowlist struct {
	mu      sync.Mutex
	entries map[string][]tool.AllowEntry
}

func (l *fakeAllowlist) Allowed(agent string, e tool.AllowEntry) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.entries[agent] {
		if x.Path == e.Path && slices.Equal(x.Argv, e.Argv) && x.Command == e.Command {
			return true, nil
		}
	}
	return false, nil
}

func (l *fakeAllowlist) Add(agent string, e tool.AllowEntry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.entries == nil {
		l.entries = map[string][]tool.AllowEntry{}
	}
	l.entries[agent] = append(l.entries[agent], e)
	return nil
}

func TestEnvRefused(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"PATH", "path", "HOME", "TMPDIR", "LD_PRELOAD", "ld_library_path", "LD_AUDIT", "DYLD_INSERT_LIBRARIES",
		"PYTHONPATH", "NODE_OPTIONS", "BASH_ENV", "ENV", "IFS", "OPENAI_API_KEY", "api_key", "MONKEY",
		"GITHUB_TOKEN", "MY_SECRET", "DB_PASSWORD", "password", "1ABC", "A-B", "A B", "", "A=B", "Ä",
	} {
		h := newHarness(t, Config{Security: SecurityFull, Ask: AskOff})
		res := h.run(h.exec, map[string]any{"command": "touch marker", "env": map[string]string{name: "x"}})
		if !res.IsError || !strings.Contains(text(res), "nothing was run") || !strings.Contains(text(res), strconvQuote(name)) {
			t.Errorf("env %q: %s", name, text(res))
		}
		if h.exists("marker") {
			t.Errorf("env %q: the command ran", name)
		}
	}
	for _, name := range []string{"COLUMNS", "GIT_AUTHOR_NAME", "_X", "lower_ok", "DEBUG1"} {
		h := newHarness(t, Config{Security: SecurityFull, Ask: AskOff})
		res := h.run(h.exec, map[string]any{"command": "printf %s \"$" + name + "\"", "env": map[string]string{name: "val"}})
		if res.IsError || !strings.HasPrefix(text(res), "val") {
			t.Errorf("env %q refused or lost: %s", name, text(res))
		}
	}
}

func strconvQuote(s string) string { return `"` + s + `"` } // names in the table need no escaping

func TestEnvIsBuilt(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-must-not-leak")
	t.Setenv("SOME_GATEWAY_VAR", "gateway-only")
	t.Setenv("TZ", "UTC")
	h := newHarness(t, Config{})
	h.env.Approver = answer(tool.DecisionAllowOnce)
	res := h.run(h.exec, map[string]any{"command": "env", "env": map[string]string{"EXTRA": "1"}})
	out := text(res)
	if res.IsError {
		t.Fatal(out)
	}
	for _, leak := range []string{"sk-test-must-not-leak", "OPENAI_API_KEY", "SOME_GATEWAY_VAR"} {
		if strings.Contains(out, leak) {
			t.Errorf("env output shows %s:\n%s", leak, out)
		}
	}
	for _, want := range []string{"PATH=" + SafePath + "\n", "HOME=" + h.ws + "\n", "TMPDIR=" + os.TempDir(), "TZ=UTC\n", "EXTRA=1\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("env output lacks %q:\n%s", want, out)
		}
	}
}

func TestSandboxWrapsEveryChild(t *testing.T) {
	t.Parallel()
	sb := &fakeSandbox{}
	h := newHarness(t, Config{Sandbox: sb})
	decision := tool.DecisionAllowOnce
	h.env.Approver = &fakeApprover{decide: func(context.Context, tool.ApprovalRequest) (tool.Decision, error) { return decision, nil }}

	// A safe command: its argv, no shell.
	if res := h.run(h.exec, map[string]any{"command": `echo '$HOME' "a b"`}); res.IsError || !strings.HasPrefix(text(res), "$HOME a b\n") {
		t.Fatalf("safe: %s", text(res))
	}
	// Approved: the text through the shell, wrapped.
	if res := h.run(h.exec, map[string]any{"command": "touch one"}); res.IsError {
		t.Fatalf("approved: %s", text(res))
	}
	// Background: wrapped too.
	if res := h.run(h.exec, map[string]any{"command": "touch two", "background": true}); res.IsError {
		t.Fatalf("background: %s", text(res))
	}
	// Elevated: the owner's answer runs it unwrapped.
	decision = tool.DecisionElevated
	if res := h.run(h.exec, map[string]any{"command": "touch three"}); res.IsError {
		t.Fatalf("elevated: %s", text(res))
	}
	deadline := time.Now().Add(5 * time.Second)
	for !h.exists("two") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	sb.mu.Lock()
	calls, tmps := sb.calls, sb.tmps
	sb.mu.Unlock()
	want := [][]string{{"echo", "$HOME", "a b"}, {"/bin/sh", "-c", "touch one"}, {"/bin/sh", "-c", "touch two"}}
	if len(calls) != len(want) {
		t.Fatalf("wrapped %q, want %q", calls, want)
	}
	for i := range want {
		if !slices.Equal(calls[i], want[i]) {
			t.Errorf("wrap %d = %q, want %q", i, calls[i], want[i])
		}
	}
	if !h.exists("three") {
		t.Error("the elevated command did not run")
	}
	// Each child had its own temp dir, gone once it ended.
	for i, tmp := range tmps[:2] {
		if tmp == "" || slices.Contains(tmps[i+1:], tmp) {
			t.Errorf("temp dir %d %q is not private", i, tmp)
		}
		if _, err := os.Stat(tmp); !os.IsNotExist(err) {
			t.Errorf("temp dir %q survived its command: %v", tmp, err)
		}
	}
}

func TestSandboxFailureRunsNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{Security: SecurityFull, Ask: AskOff, Sandbox: &fakeSandbox{err: os.ErrPermission}})
	for _, bg := range []bool{false, true} {
		res := h.run(h.exec, map[string]any{"command": "touch marker", "background": bg})
		if !res.IsError || !strings.Contains(text(res), "the sandbox cannot confine it") {
			t.Errorf("background=%v: %s", bg, text(res))
		}
	}
	time.Sleep(50 * time.Millisecond)
	if h.exists("marker") {
		t.Error("ran without the sandbox")
	}
}

func TestAllowAlways(t *testing.T) {
	t.Parallel()
	al := &fakeAllowlist{}
	h := newHarness(t, Config{Allowlist: al})
	ap := answer(tool.DecisionAllowAlways)
	h.env.Approver = ap
	for _, c := range []string{"touch 'a b'", "touch x && touch y"} {
		if res := h.run(h.exec, map[string]any{"command": c}); res.IsError {
			t.Fatalf("%s: %s", c, text(res))
		}
	}
	touch := LookPath("touch", h.ws)
	want := []tool.AllowEntry{{Path: touch, Argv: []string{"touch", "a b"}}, {Command: "touch x && touch y"}}
	got := al.entries["main"]
	if len(got) != 2 || got[0].Path != touch || !slices.Equal(got[0].Argv, want[0].Argv) || got[0].Command != "" ||
		got[1].Command != want[1].Command || got[1].Argv != nil || got[0].AddedAt.IsZero() {
		t.Fatalf("allowlist = %+v, want %+v", got, want)
	}
	// Now they run without asking; the same argv spelled differently too;
	// anything else (more arguments, added env) still asks.
	h.env.Approver = answer(tool.DecisionDeny)
	os.Remove(filepath.Join(h.ws, "a b"))
	for _, c := range []string{"touch 'a b'", `touch a\ b`, "touch x && touch y"} {
		if res := h.run(h.exec, map[string]any{"command": c}); res.IsError {
			t.Errorf("allowlisted %q asked: %s", c, text(res))
		}
	}
	if !h.exists("a b") {
		t.Error("allowlisted command did not run")
	}
	for _, args := range []map[string]any{
		{"command": "touch 'a b' c"},
		{"command": "touch 'a b'", "env": map[string]string{"X": "1"}},
		{"command": "touch x &&  touch y"},
	} {
		if res := h.run(h.exec, args); !res.IsError {
			t.Errorf("%v ran without approval", args)
		}
	}
	// ask=always asks even for allowlisted commands.
	h2 := newHarness(t, Config{Allowlist: al, Ask: AskAlways})
	ap2 := answer(tool.DecisionDeny)
	h2.env.Approver = ap2
	if res := h2.run(h2.exec, map[string]any{"command": "touch 'a b'"}); !res.IsError || ap2.count() != 1 {
		t.Errorf("ask=always did not ask: %s", text(res))
	}
}

func TestApprovalRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	ap := answer(tool.DecisionDeny)
	h.env.Approver = ap
	h.run(h.exec, map[string]any{"command": "sort --co=sh x", "background": true, "env": map[string]string{"B": "2", "A": "1"}})
	h.run(h.exec, map[string]any{"command": "ls | wc -l"})
	if ap.count() != 2 {
		t.Fatalf("asked %d times", ap.count())
	}
	r := ap.requests[0]
	if r.Command != "sort --co=sh x" || !slices.Equal(r.Argv, []string{"sort", "--co=sh", "x"}) ||
		r.Resolved != LookPath("sort", h.ws) || r.Resolved == "" || r.Cwd != h.ws ||
		!slices.Equal(r.Env, []string{"A=1", "B=2"}) || !r.Background || r.Reason == "" {
		t.Errorf("request %+v", r)
	}
	r = ap.requests[1]
	if r.Argv != nil || r.Resolved != "" || r.Env != nil || r.Background || !strings.Contains(r.Reason, "not one simple command") {
		t.Errorf("request %+v", r)
	}
}
