package migrate

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/cli/openclawdir"
)

// items indexes a report's rows by kind and name (a workspace file's
// with its agent, as the table shows it).
func items(rep *Report) map[string]Item {
	out := map[string]Item{}
	for _, it := range rep.Items {
		name := it.Name
		if it.Kind == "workspace" {
			name = it.Agent + ":" + name
		}
		out[it.Kind+" "+name] = it
	}
	return out
}

// onboarded is the config a fresh OpenClaw 2026.9.6 writes (`openclaw
// onboard`, `openclaw agents add research`, set-identity on both; as in
// testdata/onboarded), with entries as given.
func onboarded(entries map[string]any, defaults map[string]any) map[string]any {
	d := map[string]any{
		"workspace": "~/.openclaw/workspace",
		"model":     map[string]any{"primary": "fake/echo"},
		"models":    map[string]any{"fake/echo": map[string]any{}},
	}
	for k, v := range defaults {
		d[k] = v
	}
	return map[string]any{
		"meta":   map[string]any{"lastTouchedVersion": "2026.9.6"},
		"wizard": map[string]any{"lastRunCommand": "onboard"},
		"models": map[string]any{"mode": "merge", "providers": map[string]any{"fake": map[string]any{
			"api": "openai-completions", "baseUrl": "http://127.0.0.1:18089/v1", "apiKey": "fake-key",
			"models": []any{map[string]any{"id": "echo"}},
		}}},
		"agents": map[string]any{"defaults": d, "ownership": "explicit", "entries": entries},
	}
}

func mainEntry() map[string]any {
	return map[string]any{
		"name": "main", "workspace": "~/.openclaw/workspace", "agentDir": "~/.openclaw/agents/main/agent",
		"identity": map[string]any{"name": "Clawd", "emoji": "🦞"},
	}
}

func researchEntry() map[string]any {
	return map[string]any{
		"name": "research", "workspace": "~/.openclaw/workspace-research", "agentDir": "~/.openclaw/agents/research/agent",
		"identity": map[string]any{"name": "Scout", "emoji": "🔎"}, "model": "fake/echo",
		"humanDelay": map[string]any{"mode": "natural"},
	}
}

// TestMigrateAgentsEntries: OpenClaw 2026.9's agents.entries becomes
// agents.list (the default agent first), its folders and identity are
// listed as not migrated, and nothing fails.
func TestMigrateAgentsEntries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		entries  map[string]any
		defaults map[string]any
		list     any // agents.list beside the entries
		want     []any
	}{
		{"onboardOnly", map[string]any{"main": mainEntry()}, nil, nil,
			[]any{map[string]any{"id": "main", "name": "main"}}},
		{"twoAgentsMainDefault", map[string]any{"research": researchEntry(), "main": mainEntry()},
			map[string]any{"systemAgent": map[string]any{"agentId": "main"}}, nil,
			[]any{
				map[string]any{"id": "main", "name": "main", "default": true},
				map[string]any{"id": "research", "name": "research", "model": "fake/echo"},
			}},
		{"systemAgentFirst", map[string]any{"research": researchEntry(), "main": mainEntry()},
			map[string]any{"systemAgent": map[string]any{"agentId": "research"}}, nil,
			[]any{
				map[string]any{"id": "research", "name": "research", "model": "fake/echo", "default": true},
				map[string]any{"id": "main", "name": "main"},
			}},
		{"noMainFirstByID", map[string]any{"zed": map[string]any{"name": "Z"}, "bob": map[string]any{"name": "B"}}, nil, nil,
			[]any{map[string]any{"id": "bob", "name": "B", "default": true}, map[string]any{"id": "zed", "name": "Z"}}},
		{"legacyDefaultMarker", map[string]any{"main": mainEntry(), "ops": map[string]any{"default": true}}, nil, nil,
			[]any{map[string]any{"id": "ops", "default": true}, map[string]any{"id": "main", "name": "main"}}},
		{"entriesWinOverList", map[string]any{"main": mainEntry()}, nil, []any{map[string]any{"id": "old"}},
			[]any{map[string]any{"id": "main", "name": "main"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, gw := newFakeMigration()
			src.cfg = onboarded(tc.entries, tc.defaults)
			if tc.list != nil {
				src.cfg["agents"].(map[string]any)["list"] = tc.list
			}
			rep := runMigration(t, src, gw, Options{Security: true})
			got := items(rep)
			if !rep.OK {
				t.Errorf("not OK: %+v", rep.Items)
			}
			list := got["config agents.list"]
			if list.Action != ActImport || !reflect.DeepEqual(list.Value, tc.want) {
				t.Errorf("agents.list: %s (%s) %v\nwant %v", list.Action, list.Reason, list.Value, tc.want)
			}
			for name, it := range got {
				if strings.HasPrefix(name, "config agents.entries") && it.Action != ActNotMigrated {
					t.Errorf("%s: %s, want not migrated", name, it.Action)
				}
			}
			left := []string{"agents.ownership", "agents.defaults.workspace"}
			if _, ok := tc.entries["main"]; ok {
				left = append(left, "agents.entries.main.workspace", "agents.entries.main.agentDir", "agents.entries.main.identity")
			}
			for _, k := range left {
				if it := got["config "+k]; it.Action != ActNotMigrated || it.Reason == "" {
					t.Errorf("%s: %q (%s), want not migrated with a reason", k, it.Action, it.Reason)
				}
			}
			if it := got["config agents.entries.main.identity"]; it.Action != "" && !strings.Contains(it.Reason, "IDENTITY.md") {
				t.Errorf("identity: %s", it.Reason)
			}
			if _, ok := tc.entries["research"]; ok {
				if it := got["config agents.entries.research.humanDelay"]; it.Reason != "not supported by OpenClaw Edge" {
					t.Errorf("humanDelay: %q (%s)", it.Action, it.Reason)
				}
			}
			if tc.list != nil && !strings.Contains(fmtItems(rep), "OpenClaw reads agents.entries") {
				t.Error("agents.list beside entries: not said")
			}
			if _, ok := got["config agents.entries"]; ok {
				t.Error("agents.entries sent as a key of its own")
			}
		})
	}
}

func fmtItems(rep *Report) string {
	var b bytes.Buffer
	Print(&b, rep)
	return b.String()
}

// TestMigrateHeldBackDependents: what names a provider that is not
// carried waits with it, says why, and the run stays OK (exit 0).
func TestMigrateHeldBackDependents(t *testing.T) {
	withProvider := func(p map[string]any) func(cfg map[string]any) {
		return func(cfg map[string]any) { cfg["models"].(map[string]any)["providers"].(map[string]any)["fake"] = p }
	}
	setDefault := func(k string, v any) func(cfg map[string]any) {
		return func(cfg map[string]any) { cfg["agents"].(map[string]any)["defaults"].(map[string]any)[k] = v }
	}
	for _, tc := range []struct {
		name     string
		opt      Options
		change   []func(cfg map[string]any)
		here     bool   // the gateway has provider fake
		key      string // the dependent key
		held     bool
		reason   string
		provider string // models.providers' action
	}{
		{"providerHeldBack", Options{Apply: true}, nil, false, "agents.defaults.model", true,
			`depends on held-back provider "fake", not configured here (named by agents.defaults.model.primary; models.providers is a security setting held back: pass --include-security)`, ActNotMigrated},
		{"providerHeldBackDryRun", Options{}, nil, false, "agents.defaults.model", true, `depends on held-back provider "fake"`, ActNotMigrated},
		{"providerAlreadyHere", Options{Apply: true}, nil, true, "agents.defaults.model", false, "", ActNotMigrated},
		{"providerCarried", Options{Apply: true, Security: true}, nil, false, "agents.defaults.model", false, "", ActImported},
		{"providerEnvReference", Options{Apply: true, Security: true},
			[]func(map[string]any){withProvider(map[string]any{"api": "openai-completions", "baseUrl": "https://x/${SECRET}"})},
			false, "agents.defaults.model", true, `models.providers is not migrated: models.providers.fake.baseUrl holds a ${…}`, ActNotMigrated},
		{"builtInProvider", Options{Apply: true, Security: true},
			[]func(map[string]any){setDefault("model", "anthropic/claude-sonnet-4-5")},
			false, "agents.defaults.model", true, `depends on provider "anthropic", configured neither here nor in models.providers`, ActImported},
		{"localProvider", Options{Apply: true}, []func(map[string]any){setDefault("model", "local/qwen3-0.6b")},
			false, "agents.defaults.model", false, "", ActNotMigrated},
		{"fallback", Options{Apply: true},
			[]func(map[string]any){setDefault("model", map[string]any{"primary": "local/q", "fallbacks": []any{"fake/echo"}})},
			false, "agents.defaults.model", true, "named by agents.defaults.model.fallbacks.0", ActNotMigrated},
		{"subagents", Options{Apply: true}, []func(map[string]any){setDefault("model", nil), setDefault("subagents", map[string]any{"model": "fake/echo"})},
			false, "agents.defaults.subagents", true, "named by agents.defaults.subagents.model", ActNotMigrated},
		{"heartbeat", Options{Apply: true}, []func(map[string]any){setDefault("model", nil), setDefault("heartbeat", map[string]any{"every": "1h", "model": "fake/echo"})},
			false, "agents.defaults.heartbeat", true, "named by agents.defaults.heartbeat.model", ActNotMigrated},
		{"agentModel", Options{Apply: true, Security: true},
			[]func(map[string]any){setDefault("model", nil), withProvider(map[string]any{"baseUrl": "https://x/${SECRET}"})},
			false, "agents.list", true, "named by agents.list.1.model", ActNotMigrated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, gw := newFakeMigration()
			src.cfg = onboarded(map[string]any{"main": mainEntry(), "research": researchEntry()}, nil)
			for _, c := range tc.change {
				c(src.cfg)
			}
			if d := src.cfg["agents"].(map[string]any)["defaults"].(map[string]any); d["model"] == nil {
				delete(d, "model")
			}
			if tc.here {
				gw.config["models.providers.fake"] = json.RawMessage(`{"api":"openai-completions"}`)
			}
			rep := runMigration(t, src, gw, tc.opt)
			got := items(rep)
			it := got["config "+tc.key]
			if it.HeldBack != tc.held || it.HeldBack != (it.Action == ActNotMigrated) || !strings.Contains(it.Reason, tc.reason) {
				t.Errorf("%s: %s held=%v (%s)\nwant held=%v, reason with %q", tc.key, it.Action, it.HeldBack, it.Reason, tc.held, tc.reason)
			}
			if p := got["config models.providers"]; p.Action != tc.provider {
				t.Errorf("models.providers: %s (%s), want %s", p.Action, p.Reason, tc.provider)
			}
			if !rep.OK {
				t.Errorf("a hold-back made the run fail: %s", fmtItems(rep))
			}
			for _, k := range gw.sets {
				if k == tc.key && tc.held {
					t.Errorf("%s was set", k)
				}
			}
			if tc.held && !strings.Contains(fmtItems(rep), "held back on purpose") {
				t.Errorf("the summary does not say what was held back:\n%s", fmtItems(rep))
			}
		})
	}
}

// TestMigrateAgentNotRunning: the files and sessions of an agent the
// gateway does not run wait for it, saying what to do, instead of being
// refused one by one.
func TestMigrateAgentNotRunning(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opt     Options
		entries map[string]any
		reason  string
	}{
		{"heldBack", Options{Apply: true}, map[string]any{"main": mainEntry(), "research": researchEntry()},
			"agent research is not configured here: it comes with agents.list, a security setting held back (pass --include-security, restart the gateway, then run migrate again)"},
		{"dryRun", Options{Security: true}, map[string]any{"main": mainEntry(), "research": researchEntry()},
			"agent research comes with agents.list, which --apply sets: restart the gateway after it, then run migrate again"},
		{"setByThisRun", Options{Apply: true, Security: true}, map[string]any{"main": mainEntry(), "research": researchEntry()},
			"agent research is in agents.list but not running yet: restart the gateway, then run migrate again"},
		{"folderOnly", Options{Apply: true, Security: true}, map[string]any{"main": mainEntry()},
			"agent research is not configured here (OpenClaw has its folder, not a config entry)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, gw := newFakeMigration()
			src.cfg = onboarded(tc.entries, nil)
			src.agents = []string{"main", "research"}
			gw.agents = []string{"main"}
			rep := runMigration(t, src, gw, tc.opt)
			if !rep.OK {
				t.Errorf("not OK:\n%s", fmtItems(rep))
			}
			n := 0
			for _, it := range rep.Items {
				switch {
				case it.Agent == "research":
					n++
					if it.Action != ActNotMigrated || !it.HeldBack || !strings.HasPrefix(it.Reason, tc.reason) {
						t.Errorf("%s %s: %s held=%v (%s)\nwant held back: %s", it.Kind, it.Name, it.Action, it.HeldBack, it.Reason, tc.reason)
					}
				case it.Agent == "main" && it.HeldBack:
					t.Errorf("%s %s of main held back: %s", it.Kind, it.Name, it.Reason)
				}
			}
			// The fake lists the same files and sessions for each agent.
			if want := len(src.files) + 3; n != want {
				t.Errorf("%d rows of research, want %d", n, want)
			}
			for _, imp := range gw.imports {
				if strings.HasPrefix(imp.Key, "agent:research:") {
					t.Errorf("imported %s", imp.Key)
				}
			}
		})
	}
}

// TestDefaultOpenClawDir: without DIR, OpenClaw's own home override and its
// legacy folder are followed, and a missing dir says how to name it —
// OpenClaw's OPENCLAW_STATE_DIR included, which is not read here.
func TestDefaultOpenClawDir(t *testing.T) {
	root := t.TempDir()
	mk := func(p ...string) string {
		d := filepath.Join(append([]string{root}, p...)...)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	withOC := mk("home", ".openclaw")
	legacy := mk("old", ".clawdbot")
	ochome := mk("oc", ".openclaw")
	mk("empty")
	edge := mk("edge")
	if err := os.WriteFile(filepath.Join(edge, "openclaw.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		home     string
		env      map[string]string
		want     string
		wantErrs []string
	}{
		{"home", "home", nil, withOC, nil},
		{"openclawHome", "empty", map[string]string{"OPENCLAW_HOME": filepath.Join(root, "oc")}, ochome, nil},
		{"openclawHomeTilde", "", map[string]string{"OPENCLAW_HOME": "~/oc"}, ochome, nil},
		{"legacy", "old", nil, legacy, nil},
		// Ours and OpenClaw's share the name: never read, only named.
		{"stateDirNotRead", "home", map[string]string{"OPENCLAW_STATE_DIR": edge}, withOC, nil},
		{"missing", "empty", nil, "", []string{
			"no OpenClaw state dir at " + filepath.Join(root, "empty", ".openclaw") + ": pass its path as DIR",
			"OpenClaw's own OPENCLAW_STATE_DIR",
			"does not read the variable, because the same name sets this gateway's state dir",
		}},
		{"missingStateDirSet", "empty", map[string]string{"OPENCLAW_STATE_DIR": edge}, "", []string{
			"OpenClaw's own OPENCLAW_STATE_DIR",
			"here it is " + edge + ", which holds an openclaw.json: if that is OpenClaw's, not this gateway's, run `openclaw migrate openclaw " + edge + "`",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := func() (string, error) { return filepath.Join(root, tc.home), nil }
			got, err := defaultOpenClawDir(func(k string) string { return tc.env[k] }, home)
			if tc.wantErrs == nil {
				if err != nil || got != tc.want {
					t.Errorf("= %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("= %q, want an error", got)
			}
			for _, w := range tc.wantErrs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
}

// TestMigrateOnboardedOpenClaw runs the migration of the state dir a fresh
// OpenClaw 2026.9.6 wrote (testdata/onboard.sh: onboarding, a second
// agent, a turn each) against the fake gateway, which runs main only:
// nothing fails (exit 0), agents.entries becomes agents.list, the model of
// the held-back provider waits with it, research waits for its agent, and
// main's workspace and session come over.
func TestMigrateOnboardedOpenClaw(t *testing.T) {
	home, err := filepath.Abs("testdata/onboarded")
	if err != nil {
		t.Fatal(err)
	}
	// OpenClaw wrote its paths under the run's home, kept as ~.
	t.Setenv("HOME", home)
	dir, err := openclawdir.Open(filepath.Join(home, ".openclaw"))
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	_, gw := newFakeMigration()
	gw.agents = []string{"main"}
	rep, err := Run(t.Context(), dir, gw, Options{}, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK {
		t.Fatalf("a fresh OpenClaw install does not migrate:\n%s", fmtItems(rep))
	}
	got := items(rep)
	for key, want := range map[string]string{
		"config agents.list":                      ActNotMigrated,
		"config agents.defaults.model":            ActNotMigrated,
		"config models.providers":                 ActNotMigrated,
		"config agents.ownership":                 ActNotMigrated,
		"config agents.entries.main.identity":     ActNotMigrated,
		"config agents.entries.research.agentDir": ActNotMigrated,
		"workspace main:AGENTS.md":                ActImport,
		"session agent:main:main":                 ActImport,
		"session agent:research:main":             ActNotMigrated,
	} {
		if it := got[key]; it.Action != want {
			t.Errorf("%s: %q (%s), want %s", key, it.Action, it.Reason, want)
		}
	}
	// Research's rows (its workspace's too, once cli/openclawdir reads
	// agents.entries' workspaces) wait for its agent.
	for _, it := range rep.Items {
		if it.Agent == "research" && (!it.HeldBack || !strings.Contains(it.Reason, "agent research is not configured here")) {
			t.Errorf("%s %s of research: %s (%s)", it.Kind, it.Name, it.Action, it.Reason)
		}
	}
	if it := got["config agents.defaults.model"]; !it.HeldBack || !strings.Contains(it.Reason, `depends on held-back provider "fake"`) {
		t.Errorf("model: %s", it.Reason)
	}
	if v, _ := got["config agents.list"].Value.([]any); len(v) != 2 || v[0].(map[string]any)["id"] != "main" || v[1].(map[string]any)["model"] != "fake/echo" {
		t.Errorf("agents.list = %v", got["config agents.list"].Value)
	}
	if id := got["config agents.entries.main.identity"].Value; !reflect.DeepEqual(id, map[string]any{"name": "Clawd", "emoji": "🦞"}) {
		t.Errorf("identity shown = %v", id)
	}
	sessions, err := dir.Sessions("main", openclawdir.SessionOptions{})
	if err != nil || len(sessions) != 1 || sessions[0].Updated.Before(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("main's sessions: %+v, %v", sessions, err)
	}
}
