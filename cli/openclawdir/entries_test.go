package openclawdir

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentsEntries: OpenClaw 2026.9 writes its agents as agents.entries
// (cli/migrate/testdata/onboarded): each agent's workspace is its entry's,
// and one without a workspace resolves as OpenClaw resolves it.
func TestAgentsEntries(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         map[string]string // agent id → workspace under the dir ("" none)
	}{
		{"onboarded", `{agents: {defaults: {workspace: "WS/workspace", systemAgent: {agentId: "main"}}, ownership: "explicit",
			entries: {main: {name: "main", workspace: "WS/workspace"}, research: {name: "research", workspace: "WS/workspace-research"}}}}`,
			map[string]string{"main": "workspace", "research": "workspace-research"}},
		{"noWorkspaces", `{agents: {entries: {zed: {}, bob: {}}}}`,
			map[string]string{"bob": "workspace", "zed": "workspace-zed"}},
		{"systemAgentDefault", `{agents: {defaults: {systemAgent: {agentId: "zed"}}, entries: {zed: {}, bob: {}}}}`,
			map[string]string{"bob": "workspace-bob", "zed": "workspace"}},
		{"entriesOverList", `{agents: {list: [{id: "old"}], entries: {main: {}}}}`,
			map[string]string{"main": "workspace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "openclaw.json", []byte(strings.ReplaceAll(tc.config, "WS", filepath.ToSlash(dir))))
			for _, ws := range tc.want {
				writeFile(t, dir, filepath.Join(ws, "AGENTS.md"), []byte("# agents"))
			}
			agents, err := openDir(t, dir).Agents()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, a := range agents {
				rel, _ := filepath.Rel(dir, a.Workspace)
				got[a.ID] = rel
			}
			if len(got) != len(tc.want) {
				t.Errorf("agents %v, want %v", got, tc.want)
			}
			for id, ws := range tc.want {
				if got[id] != ws {
					t.Errorf("%s: workspace %q, want %q", id, got[id], ws)
				}
			}
		})
	}
}
