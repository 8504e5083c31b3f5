package sessions

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/tool"
)

// fakeSessions records what the tools ask; Spawn blocks on block when set.
type fakeSessions struct {
	mu      sync.Mutex
	spawned []tool.SpawnRequest
	sent    []engine.SessionKey
	block   chan struct{}
	started chan struct{}
}

func (f *fakeSessions) List(string) ([]tool.SessionInfo, error) {
	return []tool.SessionInfo{
		{Key: "agent:main:main", DisplayName: "CLI", Channel: "cli", Messages: 4, Model: "fake/model"},
		{Key: "agent:main:side", Messages: 2},
	}, nil
}

func (f *fakeSessions) History(_ string, key engine.SessionKey, limit int) ([]engine.Message, error) {
	return []engine.Message{
		engine.UserText("read the notes"),
		{Role: engine.RoleAssistant, Content: []engine.Block{engine.ToolCall{ID: "1", Name: "read"}.Block()}},
		engine.TextResult(strings.Repeat("x", 5000)).Message(engine.ToolCall{ID: "1", Name: "read"}),
		engine.ErrorResult("no such file").Message(engine.ToolCall{ID: "2", Name: "read"}),
		{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock("done")}},
	}, nil
}

func (f *fakeSessions) Status(_ string, key engine.SessionKey) (string, error) {
	return "Session: " + string(key), nil
}

func (f *fakeSessions) Send(_ context.Context, _ string, key engine.SessionKey, _ string, _ time.Duration) (string, bool, error) {
	f.mu.Lock()
	f.sent = append(f.sent, key)
	f.mu.Unlock()
	return "pong", true, nil
}

func (f *fakeSessions) Spawn(ctx context.Context, req tool.SpawnRequest) (tool.SpawnResult, error) {
	f.mu.Lock()
	f.spawned = append(f.spawned, req)
	f.mu.Unlock()
	if f.block != nil {
		close(f.started)
		select {
		case <-f.block:
		case <-ctx.Done():
			return tool.SpawnResult{}, ctx.Err()
		}
	}
	return tool.SpawnResult{Reply: "42", Model: "fake/model"}, nil
}

func byName(tools []tool.Tool) map[string]tool.Tool {
	m := map[string]tool.Tool{}
	for _, t := range tools {
		m[t.Spec().Name] = t
	}
	return m
}

func run(t *testing.T, tl tool.Tool, env tool.Env, args any) engine.ToolResult {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tl.Run(context.Background(), env, raw)
}

func text(r engine.ToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

var ownerEnv = tool.Env{AgentID: "main", SessionKey: "agent:main:main", Allowed: func(string) bool { return true }}

func TestChildPolicy(t *testing.T) {
	noExec := func(n string) bool { return n != "exec" }
	for _, tc := range []struct {
		name            string
		parent          func(string) bool
		requested       []string
		depth, maxDepth int
		allowed, denied []string
	}{
		{"inherits", noExec, nil, 0, 2,
			[]string{"read", "write", "sessions_spawn", "sessions_list", "sessions_history"},
			[]string{"exec", "cron", "message", "sessions_send", "session_status"}},
		{"narrowed", noExec, []string{"exec", "read"}, 0, 2,
			[]string{"read"}, []string{"exec", "write", "sessions_spawn"}},
		{"group", noExec, []string{"group:fs"}, 0, 2,
			[]string{"read", "write", "grep"}, []string{"exec", "process", "memory_search"}},
		{"askedForDenied", noExec, []string{"cron", "message", "sessions_send", "Read"}, 0, 2,
			[]string{"read"}, []string{"cron", "message", "sessions_send"}},
		{"capped", noExec, nil, 0, 1,
			[]string{"read"}, []string{"sessions_spawn", "sessions_list", "sessions_history"}},
		{"cappedDeeper", noExec, []string{"*"}, 1, 2,
			[]string{"read", "write"}, []string{"sessions_spawn", "exec"}},
		{"unknownParent", nil, []string{"read"}, 0, 2,
			nil, []string{"read", "write"}},
		{"emptyList", noExec, []string{}, 0, 2,
			nil, []string{"read", "write"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ChildPolicy(tc.parent, tc.requested, tc.depth, tc.maxDepth)
			for _, n := range tc.allowed {
				if !p(n) {
					t.Errorf("%s denied, want allowed", n)
				}
			}
			for _, n := range tc.denied {
				if p(n) {
					t.Errorf("%s allowed, want denied", n)
				}
			}
		})
	}
}

func TestKeysStayWithTheAgent(t *testing.T) {
	tools := byName(Tools(Config{Sessions: &fakeSessions{}}))
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
		err  bool
	}{
		{"sessions_history", map[string]any{"sessionKey": "agent:work:main"}, `belongs to agent "work"`, true},
		{"sessions_history", map[string]any{"sessionKey": "agent:main:a\tb"}, "bad sessionKey", true},
		{"sessions_history", map[string]any{}, "sessionKey is required", true},
		{"sessions_history", map[string]any{"sessionKey": "side"}, "user: read the notes", false},
		{"session_status", map[string]any{}, "Session: agent:main:main", false},
		{"session_status", map[string]any{"sessionKey": "side"}, "Session: agent:main:side", false},
		{"session_status", map[string]any{"sessionKey": "agent:work:side"}, `belongs to agent "work"`, true},
		{"sessions_send", map[string]any{"sessionKey": "agent:main:main", "message": "hi"}, "this session itself", true},
		{"sessions_send", map[string]any{"sessionKey": "agent:work:main", "message": "hi"}, `belongs to agent "work"`, true},
		{"sessions_send", map[string]any{"sessionKey": "side", "message": " "}, "message is empty", true},
		{"sessions_send", map[string]any{"sessionKey": "side", "message": "hi", "timeoutSeconds": -1}, "timeoutSeconds must be", true},
		{"sessions_send", map[string]any{"sessionKey": "side", "message": "hi"}, "Reply from agent:main:side:\npong", false},
		{"sessions_list", map[string]any{"limit": 1}, "2 session(s), the 1 most recent:\n- agent:main:main (this session) — CLI [cli], 4 messages", false},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			r := run(t, tools[tc.tool], ownerEnv, tc.args)
			if r.IsError != tc.err || !strings.Contains(text(r), tc.want) {
				t.Errorf("%v → %q (error %v), want %q (error %v)", tc.args, text(r), r.IsError, tc.want, tc.err)
			}
		})
	}
}

func TestHistorySummarizesTools(t *testing.T) {
	r := run(t, byName(Tools(Config{Sessions: &fakeSessions{}}))["sessions_history"], ownerEnv, map[string]any{"sessionKey": "main"})
	want := "Last 5 message(s) of agent:main:main:\n" +
		"user: read the notes\n" +
		"assistant: [called read]\n" +
		"toolResult(read): 5000 characters\n" +
		"toolResult(read): failed: no such file\n" +
		"assistant: done"
	if got := text(r); got != want {
		t.Errorf("history:\n%s\nwant:\n%s", got, want)
	}
}

// TestSpawn: the request the turn core gets, and the refusals that come
// before it.
func TestSpawn(t *testing.T) {
	f := &fakeSessions{}
	spawn := byName(Tools(Config{Sessions: f, Model: "fake/sub"}))["sessions_spawn"]
	r := run(t, spawn, ownerEnv, map[string]any{"task": "add it up", "label": "sum", "tools": []string{"read"}})
	if r.IsError || !strings.Contains(text(r), "Its answer:\n42") {
		t.Fatalf("spawn: %q", text(r))
	}
	req := f.spawned[0]
	if !strings.HasPrefix(string(req.Key), "agent:main:subagent:") || req.Key.Valid() != nil || req.Parent != "agent:main:main" ||
		req.Depth != 1 || req.Model != "fake/sub" || req.Label != "sum" || !strings.Contains(req.Message, "Task:\nadd it up") {
		t.Errorf("request %+v", req)
	}
	if !req.Allowed("read") || req.Allowed("write") || req.Allowed("sessions_spawn") {
		t.Error("the child's policy is not the requested, capped one")
	}
	for _, tc := range []struct {
		name string
		env  tool.Env
		args map[string]any
		want string
	}{
		{"deep", tool.Env{AgentID: "main", SessionKey: "agent:main:subagent:x", Depth: 1, Allowed: ownerEnv.Allowed}, map[string]any{"task": "more"}, "cannot spawn another"},
		{"empty", ownerEnv, map[string]any{"task": " "}, "task is empty"},
		{"long", ownerEnv, map[string]any{"task": strings.Repeat("x", maxTaskChars+1)}, "at most"},
		{"tooLong", ownerEnv, map[string]any{"task": "x", "timeoutSeconds": 99999}, "timeoutSeconds must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, spawn, tc.env, tc.args)
			if !r.IsError || !strings.Contains(text(r), tc.want) {
				t.Errorf("%q, want an error with %q", text(r), tc.want)
			}
		})
	}
	if len(f.spawned) != 1 {
		t.Errorf("refused spawns reached the turn core: %d", len(f.spawned))
	}
}

// TestSpawnConcurrency: one more sub-agent than maxConcurrent is refused,
// not queued; a finished one frees its slot.
func TestSpawnConcurrency(t *testing.T) {
	f := &fakeSessions{block: make(chan struct{}), started: make(chan struct{})}
	spawn := byName(Tools(Config{Sessions: f, MaxConcurrent: 1}))["sessions_spawn"]
	first := make(chan engine.ToolResult, 1)
	go func() { first <- run(t, spawn, ownerEnv, map[string]any{"task": "slow"}) }()
	<-f.started
	if r := run(t, spawn, ownerEnv, map[string]any{"task": "second"}); !r.IsError || !strings.Contains(text(r), "maxConcurrent") {
		t.Errorf("a second sub-agent: %q, want refused", text(r))
	}
	close(f.block)
	if r := <-first; r.IsError {
		t.Errorf("the first: %q", text(r))
	}
	f.block = nil
	if r := run(t, spawn, ownerEnv, map[string]any{"task": "third"}); r.IsError {
		t.Errorf("after the first finished: %q", text(r))
	}
}

// TestSpawnTimeout: a sub-agent that outlives timeoutSeconds is stopped and
// the parent told so.
func TestSpawnTimeout(t *testing.T) {
	f := &fakeSessions{block: make(chan struct{}), started: make(chan struct{})}
	spawn := byName(Tools(Config{Sessions: f}))["sessions_spawn"]
	raw, _ := json.Marshal(map[string]any{"task": "slow", "timeoutSeconds": 1})
	start := time.Now()
	r := spawn.Run(context.Background(), ownerEnv, raw)
	if !r.IsError || !strings.Contains(text(r), "did not finish within 1s") || time.Since(start) > 5*time.Second {
		t.Errorf("%q after %s", text(r), time.Since(start))
	}
}
