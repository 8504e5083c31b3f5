package memory_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mem "github.com/openclaw-edge/edge/engine/memory"
	membleve "github.com/openclaw-edge/edge/engine/memory/bleve"
	"github.com/openclaw-edge/edge/engine/tool"
	memtool "github.com/openclaw-edge/edge/engine/tool/memory"
)

func setup(t *testing.T) (tool.Env, *mem.Index) {
	t.Helper()
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	files := map[string]string{
		"MEMORY.md":            "# Memory\n- The user's name is Ada.\n- Ada likes rowing.\n",
		"memory/2026-11-24.md": "line 1\nline 2\nline 3 the boat is called Petrel\nline 4\n",
		"memory/deep/x/y.md":   "deep note\n",
		"AGENTS.md":            "agent rules\n",
		"memory/notes.txt":     "not markdown\n",
		"../outside/secret.md": "secret\n",
		"memory/empty.md":      "",
	}
	for p, c := range files {
		full := filepath.Join(ws, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(filepath.Join(root, "outside", "secret.md"), filepath.Join(ws, "memory", "link.md"))
	os.Symlink(filepath.Join(ws, "AGENTS.md"), filepath.Join(ws, "memory", "agents.md"))
	os.Symlink(filepath.Join(root, "outside"), filepath.Join(ws, "memory", "linkdir"))
	ix, err := mem.Open(mem.Config{AgentID: "main", Workspace: ws, Dir: filepath.Join(root, "idx"),
		OpenText: func(d string) (mem.TextIndex, bool, error) { return membleve.Open(d) }, Query: mem.DefaultQuery()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return tool.Env{Workspace: ws, AgentID: "main"}, ix
}

func run(t *testing.T, tl tool.Tool, env tool.Env, args string) (string, bool) {
	t.Helper()
	r := tl.Run(context.Background(), env, json.RawMessage(args))
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String(), r.IsError
}

func TestMemoryGet(t *testing.T) {
	env, ix := setup(t)
	get := memtool.Tools(memtool.Config{Index: func(string) *mem.Index { return ix }})[1]
	for _, tc := range []struct {
		args, want string
		isErr      bool
	}{
		{`{"path":"MEMORY.md"}`, `"text":"# Memory\n- The user's name is Ada.\n- Ada likes rowing."`, false},
		{`{"path":"memory/2026-11-24.md","from":3,"lines":1}`, `"startLine":3,"endLine":3,"text":"line 3 the boat is called Petrel","more":true`, false},
		{`{"path":"memory/2026-11-24.md","startLine":4}`, `"text":"line 4"`, false},
		{`{"path":"memory/2026-11-24.md","from":99}`, `"text":""`, false},
		{`{"path":"./memory/deep/x/y.md"}`, `deep note`, false},
		{`{"path":"memory/empty.md"}`, `"text":""`, false},
		{`{"path":"` + filepath.Join(env.Workspace, "MEMORY.md") + `"}`, `Ada`, false},
		// Refused: not memory, outside, links, wrong type.
		{`{"path":"AGENTS.md"}`, "not a memory file", true},
		{`{"path":"memory/../AGENTS.md"}`, "not a memory file", true},
		{`{"path":"../outside/secret.md"}`, "outside the workspace", true},
		{`{"path":"/etc/passwd"}`, "outside the workspace", true},
		{`{"path":"memory/notes.txt"}`, "not a memory file", true},
		{`{"path":"memory/link.md"}`, "symbolic link", true},
		{`{"path":"memory/agents.md"}`, "symbolic link", true},
		{`{"path":"memory/linkdir/secret.md"}`, "symbolic link", true},
		{`{"path":"memory/missing.md"}`, "does not exist", true},
		{`{"path":"memory/deep"}`, "not a memory file", true},
		{`{"path":"memory/x\u0000.md"}`, "NUL", true},
		{`{"path":""}`, "path is required", true},
		{`{"path":"MEMORY.md","from":-1}`, "positive", true},
		{`"just a string"`, "memory_get", true},
	} {
		out, isErr := run(t, get, env, tc.args)
		if isErr != tc.isErr || !strings.Contains(out, tc.want) {
			t.Errorf("%s: error=%v %q, want error=%v containing %q", tc.args, isErr, out, tc.isErr, tc.want)
		}
		if strings.Contains(out, "secret") && !tc.isErr {
			t.Errorf("%s leaked the outside file", tc.args)
		}
	}
}

func TestMemorySearchTool(t *testing.T) {
	env, ix := setup(t)
	for _, tc := range []struct{ citations, want string }{
		{"", "Source: memory/2026-11-24.md#L1-L4"},
		{"auto", "Source: memory/2026-11-24.md#L1-L4"},
		{"on", "Source: memory/2026-11-24.md#L1-L4"},
		{"off", ""},
	} {
		search := memtool.Tools(memtool.Config{Index: func(string) *mem.Index { return ix }, Citations: tc.citations})[0]
		out, isErr := run(t, search, env, `{"query":"what is the boat called","maxResults":2}`)
		if isErr {
			t.Fatalf("%s", out)
		}
		var got memtool.SearchOutput
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Results) == 0 || got.Results[0].Path != "memory/2026-11-24.md" || got.Mode != "bm25" || got.Results[0].StartLine != 1 {
			t.Fatalf("%+v", got)
		}
		if has := strings.Contains(got.Results[0].Snippet, "Source:"); has != (tc.want != "") || !strings.Contains(got.Results[0].Snippet, tc.want) {
			t.Errorf("citations %q: snippet %q", tc.citations, got.Results[0].Snippet)
		}
	}
	search := memtool.Tools(memtool.Config{Index: func(string) *mem.Index { return ix }})[0]
	for args, want := range map[string]string{
		`{"query":"  "}`:                "query is required",
		`{"query":"x","maxResults":-2}`: "positive",
		`{}`:                            "query is required",
	} {
		if out, isErr := run(t, search, env, args); !isErr || !strings.Contains(out, want) {
			t.Errorf("%s: %v %q", args, isErr, out)
		}
	}
	// Off for this agent.
	off := memtool.Tools(memtool.Config{Index: func(string) *mem.Index { return nil }})
	for i, args := range []string{`{"query":"boat"}`, `{"path":"MEMORY.md"}`} {
		if out, isErr := run(t, off[i], env, args); !isErr || !strings.Contains(out, "off for this agent") {
			t.Errorf("disabled: %v %q", isErr, out)
		}
	}
}
