package config

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// openclawJSON is a config as OpenClaw itself writes it (`openclaw onboard`
// plus hand edits): plain JSON, keys of OpenClaw's schema that OpenClaw Edge
// does not implement mixed with ones it does.
const openclawJSON = `{
  "meta": { "lastTouchedVersion": "2026.9.1", "lastTouchedAt": "2026-09-20T10:00:00.000Z" },
  "wizard": { "lastRunAt": "2026-09-20T09:58:00.000Z", "lastRunVersion": "2026.9.1", "lastRunCommand": "onboard", "lastRunMode": "local" },
  "update": { "channel": "stable", "checkOnStart": true },
  "env": { "shellEnv": { "enabled": false } },
  "logging": { "level": "info", "consoleStyle": "pretty" },
  "models": {
    "mode": "merge",
    "providers": {
      "anthropic": {
        "api": "anthropic-messages",
        "baseUrl": "https://api.anthropic.com",
        "apiKey": "sk-ant-test",
        "authHeader": true,
        "models": [
          { "id": "claude-sonnet-4-5", "name": "Claude Sonnet 4.5", "reasoning": true, "input": ["text", "image"],
            "cost": { "input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75 },
            "contextWindow": 200000, "maxTokens": 8192 }
        ]
      }
    }
  },
  "agents": {
    "defaults": {
      "model": { "primary": "anthropic/claude-sonnet-4-5" },
      "models": { "anthropic/claude-sonnet-4-5": { "alias": "sonnet" } },
      "workspace": "WORKSPACE",
      "heartbeat": { "every": "30m" },
      "maxConcurrent": 4,
      "subagents": { "maxConcurrent": 8 },
      "compaction": { "mode": "safeguard", "reserveTokensFloor": 20000 }
    },
    "list": [ { "id": "main", "default": true, "identity": { "name": "Claw", "emoji": "🦞" } } ]
  },
  "tools": { "profile": "coding", "web": { "search": { "enabled": false } } },
  "messages": { "ackReactionScope": "group-mentions" },
  "commands": { "native": "auto", "nativeSkills": "auto" },
  "hooks": { "internal": { "enabled": true, "entries": { "session-memory": { "enabled": true } } } },
  "skills": { "install": { "nodeManager": "npm" } },
  "plugins": { "entries": { "whatsapp": { "enabled": true } } },
  "session": { "dmScope": "main", "scope": "per-sender" },
  "channels": { "whatsapp": { "dmPolicy": "pairing", "allowFrom": ["+15555550123"] } },
  "gateway": {
    "port": 18789,
    "mode": "local",
    "bind": "loopback",
    "controlUi": { "enabled": true },
    "auth": { "mode": "token", "token": "0123456789abcdef" },
    "tailscale": { "mode": "off", "resetOnExit": false }
  }
}`

func TestOpenClawConfigLoads(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "openclaw.json")
	data := strings.Replace(openclawJSON, "WORKSPACE", filepath.Join(dir, "workspace"), 1)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	c, warnings, err := Check(path)
	if err != nil {
		t.Fatalf("a real OpenClaw config is rejected:\n%v", err)
	}
	var got []string
	for _, w := range warnings {
		// OpenClaw's dmScope "main" with whatsapp's pairing: strangers a
		// pairing approves would share the owner's main session.
		shared := w.Path == "session.dmScope" && strings.Contains(w.Reason, "channels.whatsapp (dmPolicy \"pairing\")")
		if w.File != path || w.Line == 0 || w.Reason != unsupportedOpenClawKey && !shared {
			t.Errorf("warning %+v: want file, line and the unsupported-key reason", w)
		}
		got = append(got, w.Path)
	}
	// One warning per ignored key, never one per key inside it.
	want := []string{
		"meta", "wizard", "update", "env", "logging", "models.mode",
		"models.providers.anthropic.authHeader", "models.providers.anthropic.models[0].cost",
		"agents.defaults.models", "agents.defaults.maxConcurrent",
		"agents.defaults.compaction.mode", "agents.list[0].identity",
		"tools.web", "messages.ackReactionScope", "commands.native", "commands.nativeSkills", "hooks", "skills", "plugins", "session.scope",
		"session.dmScope", "gateway.mode", "gateway.controlUi", "gateway.auth", "gateway.tailscale",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("warnings at\n  %v\nwant\n  %v", got, want)
	}
	if !slices.Equal(c.Warnings(), warnings) {
		t.Error("Config.Warnings differs from Check's warnings")
	}
	// What we do implement still took effect.
	if c.Agents.Defaults.Model.Primary != "anthropic/claude-sonnet-4-5" || c.Agents.Defaults.Subagents.MaxConcurrent != 8 || (c.Agents.Defaults.Compaction.ReserveTokensFloor == nil || *c.Agents.Defaults.Compaction.ReserveTokensFloor != 20000) {
		t.Errorf("known keys lost: %+v", c.Agents.Defaults)
	}
	if _, err := os.Stat(filepath.Join(dir, "workspace")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Check created the workspace (stat: %v); it must create nothing", err)
	}
}

func TestUnknownKeysStayErrors(t *testing.T) {
	for _, tc := range []struct {
		name, config, want string
	}{
		{"typoOfOurs", `{ gateway: { sockett: '/run/x.sock' } }`, `gateway.sockett: unknown key (did you mean "socket"?)`},
		{"inNeitherSchema", `{ gateway: { frobnicate: 1 } }`, `gateway.frobnicate: unknown key (known keys: bind, logLevel, port, socket)`},
		{"topLevel", `{ agentz: {} }`, `agentz: unknown key (did you mean "agents"?)`},
		{"openclawKeyElsewhere", `{ session: { heartbeat: {} } }`, `session.heartbeat: unknown key`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.config), "x.json5")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestQueueModeConcurrentRefused(t *testing.T) {
	_, err := Parse([]byte(`{ session: { queueMode: 'concurrent' } }`), "q.json5")
	if err == nil || !strings.Contains(err.Error(), `session.queueMode: "concurrent" is not supported yet; use "sequential"`) {
		t.Errorf("err = %v", err)
	}
}

func TestLoadRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cases := []struct{ name, path, want string }{
		{"fifo", fifo, "is a named pipe (FIFO)"},
		{"dir", dir, "is a directory"},
		{"socket", sock, "is a socket"},
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		cases = append(cases, struct{ name, path, want string }{"devZero", "/dev/zero", "is a device"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := Load(tc.path); done <- err }()
			select {
			case err := <-done:
				var ce *Error
				if !errors.As(err, &ce) || ce.File != tc.path || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Load(%s) = %v, want an *Error naming the file: %q", tc.path, err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("Load(%s) blocked", tc.path)
			}
		})
	}
}

func TestWorkspaceChecks(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	root := os.Geteuid() == 0 // root writes anywhere: no read-only cases
	for _, tc := range []struct {
		name, config string
		wantErr      string // "" = accepted
		wantWarn     string
		skipRoot     bool
	}{
		{name: "creatable", config: `{ agents: { defaults: { workspace: 'DIR/a/b/c' } } }`},
		{name: "exists", config: `{ agents: { defaults: { workspace: 'DIR' } } }`},
		{name: "parentIsFile", config: `{ agents: { defaults: { workspace: 'DIR/file/ws' } } }`,
			wantErr: "agents.defaults.workspace: DIR/file/ws does not exist and cannot be created: DIR/file is not a directory"},
		{name: "isFile", config: `{ agents: { list: [{ id: 'main', workspace: 'DIR/file' }] } }`,
			wantErr: "agents.list[0].workspace: DIR/file exists and is not a directory"},
		{name: "derived", config: `{ agents: { defaults: { workspace: 'DIR/file/ws' }, list: [{ id: 'main', workspace: 'DIR' }, { id: 'b' }] } }`,
			wantErr: "agents.defaults.workspace: DIR/file/ws-b does not exist and cannot be created: DIR/file is not a directory (agent b's workspace derived from it)"},
		{name: "readOnly", config: `{ agents: { defaults: { workspace: 'DIR/ro' } } }`,
			wantWarn: "agents.defaults.workspace: DIR/ro is read-only", skipRoot: true},
		{name: "underReadOnly", config: `{ agents: { defaults: { workspace: 'DIR/ro/ws' } } }`,
			wantErr: "DIR/ro/ws does not exist and cannot be created: DIR/ro is not writable", skipRoot: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skipRoot && root {
				t.Skip("running as root: every directory is writable")
			}
			path := filepath.Join(t.TempDir(), "c.json5")
			if err := os.WriteFile(path, []byte(strings.ReplaceAll(tc.config, "DIR", dir)), 0o600); err != nil {
				t.Fatal(err)
			}
			_, warnings, err := Check(path)
			wantErr := strings.ReplaceAll(tc.wantErr, "DIR", dir)
			switch {
			case wantErr == "" && err != nil:
				t.Errorf("rejected: %v", err)
			case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
				t.Errorf("err = %v, want %q", err, wantErr)
			}
			var ws []string
			for _, w := range warnings {
				ws = append(ws, w.Error())
			}
			if want := strings.ReplaceAll(tc.wantWarn, "DIR", dir); !strings.Contains(strings.Join(ws, "\n"), want) || want == "" && len(ws) > 0 {
				t.Errorf("warnings = %q, want %q", ws, want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Check created a workspace (stat: %v)", err)
	}
}
