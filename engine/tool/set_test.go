package tool

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/policy"
)

// fakeTool is a hand-written fake: its behaviour is a func field.
type fakeTool struct {
	name string
	run  func(env Env, args json.RawMessage) engine.ToolResult
}

var _ Tool = (*fakeTool)(nil)

func (f *fakeTool) Spec() engine.ToolSpec {
	return engine.ToolSpec{Name: f.name, Description: "fake " + f.name, Parameters: MustSchema(`{"type":"object"}`)}
}

func (f *fakeTool) Run(_ context.Context, env Env, args json.RawMessage) engine.ToolResult {
	if f.run == nil {
		return engine.TextResult(f.name + " ran with " + string(args))
	}
	return f.run(env, args)
}

func newTestSet(allow []string, window int) *Set {
	reg := NewRegistry(
		&fakeTool{name: "read"},
		&fakeTool{name: "exec"},
		&fakeTool{name: "ls"},
		&fakeTool{name: "boom", run: func(Env, json.RawMessage) engine.ToolResult { panic("kaput") }},
		&fakeTool{name: "big", run: func(env Env, _ json.RawMessage) engine.ToolResult {
			return engine.ToolResult{Content: []engine.Block{
				engine.TextBlock(strings.Repeat("z", 50_000)),
				{Type: engine.BlockImage, Data: strings.Repeat("A", 50_000), MimeType: "image/png"},
			}}
		}},
		&fakeTool{name: "budget", run: func(env Env, _ json.RawMessage) engine.ToolResult {
			return engine.TextResult(strings.Repeat("b", env.ResultChars))
		}},
		&fakeTool{name: "empty", run: func(Env, json.RawMessage) engine.ToolResult { return engine.ToolResult{} }},
	)
	var allowed func(string) bool
	if allow != nil {
		allowed = policy.Allowed([]policy.Layer{{Name: "global", Allow: allow}}, ExpandGroup)
	}
	return NewSet(reg, allowed, Env{Workspace: "/ws"}, TruncateConfig{ContextWindow: window})
}

func TestSetSpecs(t *testing.T) {
	s := newTestSet([]string{"ls", "read", "big"}, 0)
	var names []string
	for _, sp := range s.Specs() {
		names = append(names, sp.Name)
	}
	if got := strings.Join(names, ","); got != "big,ls,read" {
		t.Errorf("Specs names = %s, want big,ls,read", got)
	}
	if all := newTestSet(nil, 0).Names(); len(all) != 7 {
		t.Errorf("nil policy allows %v, want all 7", all)
	}
}

func TestSetRun(t *testing.T) {
	s := newTestSet([]string{"read", "boom", "big", "budget", "empty"}, 0)
	tests := []struct {
		name    string
		call    engine.ToolCall
		wantErr bool
		want    string // substring of the first text block
	}{
		{"runs", engine.ToolCall{Name: "read", Arguments: json.RawMessage(`{"path":"a"}`)}, false, `read ran with {"path":"a"}`},
		{"case-insensitive name", engine.ToolCall{Name: "Read", Arguments: json.RawMessage(`{}`)}, false, "read ran with {}"},
		{"empty args are {}", engine.ToolCall{Name: "read"}, false, "read ran with {}"},
		{"null args are {}", engine.ToolCall{Name: "read", Arguments: json.RawMessage(`null`)}, false, "read ran with {}"},
		{"unknown tool", engine.ToolCall{Name: "rm"}, true, `unknown tool "rm"; available: big, boom, budget, empty, read`},
		{"not allowed", engine.ToolCall{Name: "exec", Arguments: json.RawMessage(`{}`)}, true, `tool "exec" is not allowed by policy`},
		{"double-encoded args", engine.ToolCall{Name: "read", Arguments: json.RawMessage(`"{\"path\":\"b\"}"`)}, false, `read ran with {"path":"b"}`},
		{"string args", engine.ToolCall{Name: "read", Arguments: json.RawMessage(`"hello"`)}, true, `tool "read": arguments must be a JSON object, got string`},
		{"array args", engine.ToolCall{Name: "read", Arguments: json.RawMessage(`[1]`)}, true, `tool "read": arguments must be a JSON object, got array`},
		{"broken JSON", engine.ToolCall{Name: "read", Arguments: json.RawMessage(`{"path":`)}, true, `tool "read": arguments are not valid JSON`},
		{"panic recovered", engine.ToolCall{Name: "boom"}, true, `tool "boom" failed: internal error: kaput`},
		{"empty result", engine.ToolCall{Name: "empty"}, false, "(no output)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := s.Run(context.Background(), tt.call)
			if res.IsError != tt.wantErr {
				t.Errorf("IsError = %v, want %v (%s)", res.IsError, tt.wantErr, res.Content[0].Text)
			}
			if len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, tt.want) {
				t.Errorf("result %+v does not contain %q", res.Content, tt.want)
			}
		})
	}
}

func TestSetTruncatesText(t *testing.T) {
	s := newTestSet(nil, 0)
	res := s.Run(context.Background(), engine.ToolCall{Name: "big"})
	if n := len(res.Content[0].Text); n > DefaultResultChars {
		t.Errorf("text block is %d chars, want ≤ %d", n, DefaultResultChars)
	}
	if !strings.Contains(res.Content[0].Text, "chars truncated; narrow args]") {
		t.Error("no truncation note")
	}
	if len(res.Content[1].Data) != 50_000 {
		t.Error("image block was changed")
	}
	// Tools learn the budget, and a result of exactly that size is kept.
	s = newTestSet(nil, 8_192)
	res = s.Run(context.Background(), engine.ToolCall{Name: "budget"})
	if got := res.Content[0].Text; len(got) != MaxResultChars(8_192) {
		t.Errorf("budget tool wrote %d chars, want %d", len(got), MaxResultChars(8_192))
	}
}

func TestEnvRel(t *testing.T) {
	ws := t.TempDir()
	env := Env{Workspace: ws}
	tests := []struct {
		in, want string
		outside  bool
	}{
		{"", ".", false},
		{".", ".", false},
		{"a/b.txt", "a/b.txt", false},
		{"a/../b", "b", false},
		{"./a//b/", "a/b", false},
		{filepath.Join(ws, "x", "y"), "x/y", false},
		{ws, ".", false},
		{"..", "", true},
		{"../x", "", true},
		{"a/../../x", "", true},
		{"/etc/passwd", "", true},
		{filepath.Dir(ws), "", true},
		{"~/notes", "", true},
	}
	for _, tt := range tests {
		got, err := env.Rel(tt.in)
		var oe *OutsideError
		if tt.outside {
			if !errors.As(err, &oe) {
				t.Errorf("Rel(%q) = %q, %v; want an OutsideError", tt.in, got, err)
			} else if !strings.Contains(err.Error(), "is outside the workspace "+ws) {
				t.Errorf("Rel(%q) error %q", tt.in, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Rel(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestGroupsAndProfiles(t *testing.T) {
	var all []string
	for _, g := range []string{"group:fs", "group:runtime", "group:sessions", "group:memory", "group:messaging", "group:automation"} {
		all = append(all, Groups[g]...)
	}
	if strings.Join(all, ",") != strings.Join(Groups["group:openclaw"], ",") {
		t.Errorf("group:openclaw = %v, want the union %v", Groups["group:openclaw"], all)
	}
	tests := []struct {
		profile string
		want    string
	}{
		{"minimal", "session_status"},
		{"coding", "apply_patch,cron,edit,exec,find,grep,ls,memory_get,memory_search,process,read,session_status,sessions_history,sessions_list,sessions_send,sessions_spawn,write"},
		{"messaging", "cron,message,session_status,sessions_history,sessions_list,sessions_send"},
		{"full", strings.Join(sorted(Groups["group:openclaw"]), ",")},
	}
	for _, tt := range tests {
		ok := policy.Allowed([]policy.Layer{{Name: "profile", Profile: tt.profile}}, ExpandGroup)
		var got []string
		for _, n := range sorted(Groups["group:openclaw"]) {
			if ok(n) {
				got = append(got, n)
			}
		}
		if strings.Join(got, ",") != tt.want {
			t.Errorf("profile %s allows %v, want %s", tt.profile, got, tt.want)
		}
	}
	if _, ok := ProfileAllow("nope"); ok {
		t.Error("unknown profile reported as known")
	}
	for _, e := range []string{"read", "EXEC", "group:fs", "profile:coding", "profile:full"} {
		if !KnownEntry(e) {
			t.Errorf("KnownEntry(%q) = false", e)
		}
	}
	for _, e := range []string{"rm", "group:x", "profile:x"} {
		if KnownEntry(e) {
			t.Errorf("KnownEntry(%q) = true", e)
		}
	}
	if err := policy.Validate(policy.Layer{Name: "agent", Profile: "coding", Allow: []string{"group:fs", "bash"}}, KnownEntry); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func sorted(s []string) []string {
	return slices.Sorted(slices.Values(s))
}

func TestDecodeArgs(t *testing.T) {
	var v struct {
		Path   string `json:"path"`
		Offset Int    `json:"offset"`
		Flag   Bool   `json:"flag"`
	}
	if err := DecodeArgs(json.RawMessage(`{"path":"a","offset":"12","flag":"true","extra":1}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.Path != "a" || v.Offset != 12 || !v.Flag {
		t.Errorf("decoded %+v", v)
	}
	if err := DecodeArgs(json.RawMessage(`{"path":3}`), &v); err == nil || !strings.Contains(err.Error(), `"path" must be a string`) {
		t.Errorf("error = %v", err)
	}
	if err := DecodeArgs(json.RawMessage(`{"offset":1.5}`), &v); err == nil {
		t.Error("1.5 accepted as an integer")
	}
}
