package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// onboardedJSON is the openclaw.json a fresh OpenClaw 2026.9.6 writes:
// `openclaw onboard --non-interactive` with a custom provider, then
// `openclaw agents add research` and `agents set-identity` on both
// (cli/migrate/testdata/onboard.sh; HOME written as HOMEDIR). Its agents
// are in agents.entries, an OpenClaw key: `config validate` accepts the
// file, with a warning per key it ignores.
const onboardedJSON = `{
  "agents": {
    "defaults": {
      "workspace": "HOMEDIR/.openclaw/workspace",
      "model": { "primary": "fake/echo" },
      "models": { "fake/echo": {} },
      "systemAgent": { "agentId": "main" },
      "heartbeat": { "agentId": "main" }
    },
    "ownership": "explicit",
    "entries": {
      "main": {
        "name": "main",
        "workspace": "HOMEDIR/.openclaw/workspace",
        "agentDir": "HOMEDIR/.openclaw/agents/main/agent",
        "identity": { "name": "Clawd", "emoji": "🦞" }
      },
      "research": {
        "name": "research",
        "workspace": "HOMEDIR/.openclaw/workspace-research",
        "agentDir": "HOMEDIR/.openclaw/agents/research/agent",
        "identity": { "name": "Scout", "emoji": "🔎" },
        "model": "fake/echo"
      }
    }
  },
  "plugins": { "entries": { "codex": { "config": { "sessionCatalog": { "enabled": false } } } } },
  "meta": { "migrations": { "modelPolicyAllowlist": true }, "lastTouchedVersion": "2026.9.6" },
  "gateway": {
    "mode": "local",
    "auth": { "mode": "token", "token": "onboard-token-not-a-secret" },
    "port": 18789,
    "bind": "loopback",
    "tailscale": { "mode": "off" }
  },
  "tools": { "profile": "full" },
  "models": {
    "mode": "merge",
    "providers": {
      "fake": {
        "baseUrl": "http://127.0.0.1:18089/v1",
        "api": "openai-completions",
        "apiKey": "fake-key",
        "models": [
          { "id": "echo", "name": "echo (Custom Provider)", "contextWindow": 128000, "maxTokens": 4096,
            "input": ["text"], "cost": { "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0 }, "reasoning": false }
        ]
      }
    }
  },
  "wizard": { "lastRunAt": "2026-11-29T15:13:54.981Z", "lastRunVersion": "2026.9.6", "lastRunCommand": "onboard", "lastRunMode": "local" }
}`

func TestOpenClawOnboardedConfigLoads(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".openclaw", "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "openclaw.json")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(onboardedJSON, "HOMEDIR", dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	c, warnings, err := Check(path)
	if err != nil {
		t.Fatalf("the config of a fresh OpenClaw install is rejected:\n%v", err)
	}
	var got []string
	for _, w := range warnings {
		if w.Reason != unsupportedOpenClawKey || w.Line == 0 {
			t.Errorf("warning %+v: want a line and the unsupported-key reason", w)
		}
		got = append(got, w.Path)
	}
	want := []string{
		"agents.defaults.models", "agents.defaults.systemAgent", "agents.defaults.heartbeat.agentId",
		"agents.ownership", "agents.entries",
		"plugins", "meta", "wizard", "gateway.mode", "gateway.auth", "gateway.tailscale", "models.mode",
		"models.providers.fake.models[0].cost",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("warnings at\n  %v\nwant\n  %v", got, want)
	}
	// The entries are OpenClaw's: the agents here stay the default one
	// until `openclaw migrate openclaw` writes them as agents.list.
	if len(c.Agents.List) != 1 || c.DefaultAgentID() != "main" || c.Agents.Defaults.Model.Primary != "fake/echo" {
		t.Errorf("agents = %+v, default %q", c.Agents.List, c.DefaultAgentID())
	}
}
