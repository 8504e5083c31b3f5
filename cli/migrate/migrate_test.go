package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/cli/openclawdir"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/config"
)

// fakeSource is an OpenClaw state dir in memory.
type fakeSource struct {
	cfg      map[string]any
	agents   []string // nil: main only
	files    []openclawdir.File
	sessions []openclawdir.Session
	deleted  bool // Sessions was asked for deleted archives
}

func (f *fakeSource) Path() string { return "/home/me/.openclaw" }
func (f *fakeSource) Close() error { return nil }
func (f *fakeSource) Config() (*openclawdir.Config, error) {
	if f.cfg == nil {
		return nil, nil
	}
	return &openclawdir.Config{File: "/home/me/.openclaw/openclaw.json", Raw: f.cfg}, nil
}
func (f *fakeSource) Agents() ([]openclawdir.Agent, error) {
	ids := f.agents
	if ids == nil {
		ids = []string{"main"}
	}
	var out []openclawdir.Agent
	for _, id := range ids {
		out = append(out, openclawdir.Agent{ID: id, Workspace: "/home/me/.openclaw/workspace-" + id})
	}
	return out, nil
}
func (f *fakeSource) WorkspaceFiles(string) ([]openclawdir.File, error) { return f.files, nil }
func (f *fakeSource) Sessions(_ string, opt openclawdir.SessionOptions) ([]openclawdir.Session, error) {
	f.deleted = opt.Deleted
	var out []openclawdir.Session
	for _, s := range f.sessions {
		if !s.Deleted || opt.Deleted {
			out = append(out, s)
		}
	}
	return out, nil
}

func opener(s string) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(s)), nil }
}

// fakeMigrateGW records what migrate sends and answers like the gateway.
type fakeMigrateGW struct {
	agents   []string // the agents it runs; nil: any
	sessions []api.SessionInfo
	config   map[string]json.RawMessage
	files    map[string]string
	imports  []client.ImportOptions
	sets     []string
}

func (g *fakeMigrateGW) Sessions(_ context.Context, agentID string) ([]api.SessionInfo, error) {
	if agentID != "" && g.agents != nil && !slices.Contains(g.agents, agentID) {
		return nil, &api.Error{Code: api.CodeNotFound, Message: "agent " + agentID + " is not configured"}
	}
	return g.sessions, nil
}
func (g *fakeMigrateGW) ConfigGet(_ context.Context, key string) (*api.ConfigValue, error) {
	v, ok := g.config[key]
	if !ok {
		return nil, &api.Error{Code: api.CodeNotFound, Message: "no such key"}
	}
	return &api.ConfigValue{Key: key, Value: v}, nil
}
func (g *fakeMigrateGW) ConfigSet(_ context.Context, req api.ConfigSetRequest) (*api.ConfigSetResult, error) {
	g.sets = append(g.sets, req.Key)
	var v any
	json.Unmarshal(req.Value, &v)
	b, _ := json.Marshal(redactSecrets(v, false))
	g.config[req.Key] = b
	return &api.ConfigSetResult{OK: true, Key: req.Key, RestartNeeded: true}, nil
}
func (g *fakeMigrateGW) ImportWith(_ context.Context, opt client.ImportOptions, r io.Reader) (*api.ImportResult, error) {
	g.imports = append(g.imports, opt)
	b, _ := io.ReadAll(r)
	var h struct{ ID string }
	json.Unmarshal(b[:bytes.IndexByte(b, '\n')], &h)
	n := bytes.Count(b, []byte("\n")) - 1
	for _, s := range g.sessions {
		if s.SessionID == h.ID {
			return &api.ImportResult{SessionID: h.ID, Entries: n, Skipped: true, Existing: api.ExistingSame}, nil
		}
	}
	g.sessions = append(g.sessions, api.SessionInfo{Key: opt.Key, SessionID: h.ID})
	return &api.ImportResult{SessionKey: opt.Key, SessionID: h.ID, Entries: n}, nil
}
func (g *fakeMigrateGW) PutWorkspaceFile(_ context.Context, agentID, rel string, r io.Reader, overwrite, dryRun bool) (*api.WorkspaceFileResult, error) {
	b, _ := io.ReadAll(r)
	res := &api.WorkspaceFileResult{Agent: "main", Path: rel, Size: int64(len(b)), Action: api.FileCreated, DryRun: dryRun}
	if old, ok := g.files[rel]; ok {
		switch {
		case old == string(b):
			res.Action = api.FileUnchanged
		case !overwrite:
			return nil, &api.Error{Code: api.CodeConflict, Message: rel + " in the workspace differs"}
		default:
			res.Action = api.FileReplaced
		}
	}
	if !dryRun {
		g.files[rel] = string(b)
	}
	return res, nil
}

const (
	curSession = `{"type":"session","version":4,"id":"cur-1"}` + "\n" + `{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}` + "\n"
	oldSession = `{"type":"session","version":3,"id":"old-1"}` + "\n"
)

func newFakeMigration() (*fakeSource, *fakeMigrateGW) {
	src := &fakeSource{
		cfg: map[string]any{
			"meta":    map[string]any{"lastTouchedVersion": "2026.9.6"},
			"gateway": map[string]any{"port": 18789.0},
			"models":  map[string]any{"providers": map[string]any{"anthropic": map[string]any{"apiKey": "sk-secret"}}},
			"agents": map[string]any{
				"defaults": map[string]any{"workspace": "~/.openclaw/workspace", "userTimezone": "Europe/Berlin"},
				"list":     []any{map[string]any{"id": "main", "agentDir": "/x"}},
			},
		},
		files: []openclawdir.File{{Rel: "AGENTS.md", Size: 5, ModTime: time.Unix(0, 0), Open: opener("hello")}},
		sessions: []openclawdir.Session{
			{Key: "agent:main:main", ID: "cur-1", Source: "sqlite", Open: opener(curSession)},
			{Key: "agent:main:main", ID: "old-1", Source: "sqlite", Archived: true, Open: opener(oldSession)},
			{Key: "agent:main:bad key", ID: "odd-1", Source: "jsonl", Open: opener(`{"type":"session","version":3,"id":"odd-1"}` + "\n")},
			{ID: "del-1", Source: "zst", Deleted: true, Archived: true, Open: opener(`{"type":"session","version":3,"id":"del-1"}` + "\n")},
		},
	}
	return src, &fakeMigrateGW{config: map[string]json.RawMessage{}, files: map[string]string{}}
}

func runMigration(t *testing.T, src *fakeSource, gw *fakeMigrateGW, opt Options) *Report {
	t.Helper()
	rep, err := newMigration(context.Background(), src, gw, opt, io.Discard).run()
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func actions(rep *Report) map[string]string {
	out := map[string]string{}
	for _, it := range rep.Items {
		out[it.Kind+" "+it.Name] = it.Action
	}
	return out
}

func TestMigrateDryRunApplyTwice(t *testing.T) {
	src, gw := newFakeMigration()
	dry := runMigration(t, src, gw, Options{Security: true})
	if len(gw.sets) != 0 || len(gw.imports) != 0 || len(gw.files) != 0 {
		t.Fatalf("a dry run changed something: %v %v %v", gw.sets, gw.imports, gw.files)
	}
	want := map[string]string{
		"config gateway":                      ActNotMigrated,
		"config meta":                         ActNotMigrated,
		"config agents.defaults.workspace":    ActNotMigrated,
		"config agents.list.0.agentDir":       ActNotMigrated,
		"config models.providers":             ActImport,
		"config agents.defaults.userTimezone": ActImport,
		"config agents.list":                  ActImport,
		"workspace AGENTS.md":                 ActImport,
		"session agent:main:main":             ActImport,
		"session agent:main:archived-old-1":   ActImport,
		"session agent:main:archived-odd-1":   ActImport,
	}
	if got := actions(dry); !reflect.DeepEqual(got, want) {
		t.Errorf("dry run:\n got %v\nwant %v", got, want)
	}
	if src.deleted {
		t.Error("deleted archives asked for without --deleted")
	}

	applied := runMigration(t, src, gw, Options{Apply: true, Security: true})
	for k, v := range want {
		if v == ActImport {
			want[k] = ActImported
		}
	}
	if got := actions(applied); !reflect.DeepEqual(got, want) || !applied.OK || !applied.RestartNeeded {
		t.Errorf("apply:\n got %v\nwant %v", got, want)
	}
	// Models before agents, so each config set validates.
	if gw.sets[0] != "models.providers" {
		t.Errorf("config set order = %v", gw.sets)
	}
	for _, opt := range gw.imports {
		if opt.IfExists != api.ImportIfExistsSkip {
			t.Errorf("import without ifExists=skip: %+v", opt)
		}
	}
	if !strings.Contains(applied.Items[len(applied.Items)-1].Reason, `key agent:main:bad key cannot be used here`) {
		t.Errorf("invalid key reason = %q", applied.Items[len(applied.Items)-1].Reason)
	}

	// Twice: everything is skipped (secrets compared redacted).
	again := runMigration(t, src, gw, Options{Apply: true, Security: true})
	for _, it := range again.Items {
		if it.Action != ActSkip && it.Action != ActNotMigrated {
			t.Errorf("second run: %s %s: %s (%s)", it.Kind, it.Name, it.Action, it.Reason)
		}
	}
	var out bytes.Buffer
	Print(&out, again)
	if !strings.Contains(out.String(), "Nothing imported: everything is already here") {
		t.Errorf("second run says:\n%s", out.String())
	}

	// --deleted brings the deleted archive, under its own key.
	del := runMigration(t, src, gw, Options{Apply: true, Deleted: true})
	if got := actions(del)["session agent:main:deleted-del-1"]; got != ActImported {
		t.Errorf("deleted archive: %q", got)
	}
}

// A key that holds another session here keeps it; the OpenClaw session
// gets a key of its own.
func TestMigrateKeyTaken(t *testing.T) {
	src, gw := newFakeMigration()
	gw.sessions = []api.SessionInfo{{Key: "agent:main:main", SessionID: "ours"}}
	rep := runMigration(t, src, gw, Options{Apply: true})
	got := actions(rep)
	if got["session agent:main:openclaw-main"] != ActImported || got["session agent:main:main"] != "" {
		t.Errorf("actions = %v", got)
	}
}

// A workspace file that differs here is a conflict (exit 1) unless
// --overwrite.
func TestMigrateWorkspaceConflict(t *testing.T) {
	src, gw := newFakeMigration()
	gw.files["AGENTS.md"] = "mine"
	rep := runMigration(t, src, gw, Options{Apply: true})
	if actions(rep)["workspace AGENTS.md"] != ActConflict || rep.OK {
		t.Errorf("conflict not reported: %+v", rep)
	}
	if gw.files["AGENTS.md"] != "mine" {
		t.Error("the file here was replaced")
	}
	rep = runMigration(t, src, gw, Options{Apply: true, Overwrite: true})
	if actions(rep)["workspace AGENTS.md"] != ActImported || gw.files["AGENTS.md"] != "hello" {
		t.Errorf("--overwrite: %+v", rep.Items)
	}
}

func TestRedactSecrets(t *testing.T) {
	v := map[string]any{"apiKey": "sk-1", "baseUrl": "http://x", "headers": map[string]any{"X": "y"}, "token": ""}
	got := redactSecrets(v, false).(map[string]any)
	if got["apiKey"] != config.Redacted || got["baseUrl"] != "http://x" || got["headers"].(map[string]any)["X"] != config.Redacted || got["token"] != "" {
		t.Errorf("redactSecrets = %v", got)
	}
	if !sameRedacted(v, json.RawMessage(`{"apiKey":"[redacted]","baseUrl":"http://x","headers":{"X":"[redacted]"},"token":""}`)) {
		t.Error("sameRedacted: false for the redacted form")
	}
}

func TestCountEntries(t *testing.T) {
	for in, want := range map[string]int{
		"":           0,
		"h\n":        0,
		"h\na\n\nb":  2,
		"h\r\na\r\n": 1,
		"h\n" + strings.Repeat("x", 100000) + "\nb\n": 2,
		"h\n" + strings.Repeat("x", 4095) + "\n":      1,
		"h\n" + strings.Repeat("x", 4096) + "\n":      1,
	} {
		if got, err := countEntries(strings.NewReader(in)); err != nil || got != want {
			t.Errorf("countEntries(%.20q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

// TestMigrateHoldsBackSecurity: without --include-security the settings
// that decide who commands the box and where conversations go stay behind,
// and say why; the others are carried.
func TestMigrateHoldsBackSecurity(t *testing.T) {
	src, gw := newFakeMigration()
	rep := runMigration(t, src, gw, Options{Apply: true})
	got := map[string]Item{}
	for _, it := range rep.Items {
		got[it.Kind+" "+it.Name] = it
	}
	for _, k := range []string{"config models.providers", "config agents.list"} {
		if it := got[k]; it.Action != ActNotMigrated || !strings.Contains(it.Reason, "--include-security") {
			t.Errorf("%s: %s (%s), want held back", k, it.Action, it.Reason)
		}
	}
	if it := got["config agents.defaults.userTimezone"]; it.Action != ActImported {
		t.Errorf("userTimezone: %s (%s)", it.Action, it.Reason)
	}
	for _, k := range gw.sets {
		if securityKey(k) {
			t.Errorf("set %s without --include-security", k)
		}
	}
}

func TestMigrateConfigGuards(t *testing.T) {
	for _, tc := range []struct {
		key  string
		v    any
		want string
	}{
		{"models.providers", map[string]any{"x": map[string]any{"baseUrl": "https://evil/${ANTHROPIC_API_KEY}"}}, "models.providers.x.baseUrl"},
		{"models.providers", map[string]any{"x": map[string]any{"apiKey": "${ANTHROPIC_API_KEY}"}}, ""},
		{"agents.defaults.userTimezone", "${TZ}", "agents.defaults.userTimezone"},
		{"channels.telegram", map[string]any{"allowFrom": []any{"a", "${X}"}}, "channels.telegram.allowFrom.1"},
	} {
		if got := envReference(tc.key, tc.v); got != tc.want {
			t.Errorf("envReference(%s, %v) = %q, want %q", tc.key, tc.v, got, tc.want)
		}
	}
	for key, want := range map[string]bool{
		"tools": true, "tools.exec": true, "commands.ownerAllowFrom": true, "channels.telegram": true,
		"models.providers": true, "agents.defaults.memorySearch": true, "agents": true, "agents.list": true,
		"agents.defaults.userTimezone": false, "session": false, "messages": false, "models.local": false,
	} {
		if got := securityKey(key); got != want {
			t.Errorf("securityKey(%s) = %v, want %v", key, got, want)
		}
	}
	if !hasSecret("models.providers", map[string]any{"x": map[string]any{"apiKey": "k"}}) || hasSecret("session", map[string]any{"reset": "x"}) {
		t.Error("hasSecret")
	}
}
