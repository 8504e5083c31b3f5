package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/config"
)

func TestLegacyState(t *testing.T) {
	touch := func(t *testing.T, p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		files []string // under home
		from  string   // how the state dir was chosen
		appl  bool     // the appliance: home is the state dir
		want  string
	}{
		{name: "fresh install", from: config.StateFromDefault},
		{name: "earlier Edge state in ~/.openclaw", files: []string{".openclaw/state.db"}, from: config.StateFromDefault, want: "move it (mv "},
		{name: "a real OpenClaw's ~/.openclaw is not ours", files: []string{".openclaw/openclaw.json", ".openclaw/agents/main/agent/openclaw-agent.sqlite"}, from: config.StateFromDefault},
		{name: "already moved", files: []string{".openclaw/state.db", ".openclaw-edge/state.db"}, from: config.StateFromDefault},
		{name: "state dir named: no guess", files: []string{".openclaw/state.db"}, from: config.StateFromFlag},
		{name: "appliance: old default workspace", files: []string{".openclaw/workspace/MEMORY.md"}, from: config.StateFromFlag, appl: true, want: "default workspace in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			for _, f := range tc.files {
				touch(t, filepath.Join(home, f))
			}
			state := filepath.Join(home, config.DefaultStateDirName)
			if tc.appl {
				state = home
			}
			loc := config.Location{StateDir: state, StateDirFrom: tc.from}
			cfg, err := loc.Load()
			if err != nil {
				t.Fatal(err)
			}
			got := legacyState(loc, cfg, home)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("legacyState = %q; want %q", got, tc.want)
			}
		})
	}
}
