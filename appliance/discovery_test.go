package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/cli/command"
	"github.com/openclaw-edge/edge/engine/config"
)

// TestConfigDiscoverySameFile: for each way of choosing the config (flag,
// each variable, the state dir by flag, variable or default, .json or
// .json5, none, both), the gateway (Main.resolvePaths, what `run` does)
// and the CLI (`openclaw config validate --json`, which finds the file
// here when no gateway runs) pick the same file — or both refuse.
func TestConfigDiscoverySameFile(t *testing.T) {
	const valid = "{ agents: { defaults: { maxTurns: 7 } } }\n"
	for _, tc := range []struct {
		name     string
		files    []string          // relative to the temp dir; $HOME is home/
		flags    map[string]string // --config, --state-dir (relative values are made absolute)
		env      map[string]string
		want     string // relative; "" = no file (the built-in defaults)
		wantErr  string
		wantHows string
	}{
		{name: "none: built-in defaults", want: "", wantHows: "no openclaw.json or openclaw.json5 in the state dir"},
		{name: "default state dir, .json", files: []string{"home/.openclaw-edge/openclaw.json"}, want: "home/.openclaw-edge/openclaw.json", wantHows: "(the default)"},
		{name: "default state dir, .json5", files: []string{"home/.openclaw-edge/openclaw.json5"}, want: "home/.openclaw-edge/openclaw.json5"},
		{name: "OpenClaw's ~/.openclaw is not ours", files: []string{"home/.openclaw/openclaw.json"}, want: ""},
		{name: "--config", files: []string{"a.json5", "home/.openclaw-edge/openclaw.json"}, flags: map[string]string{"config": "a.json5"},
			env: map[string]string{"OPENCLAW_CONFIG_PATH": "b.json5"}, want: "a.json5", wantHows: "named by --config"},
		{name: "$OPENCLAW_CONFIG_PATH", files: []string{"b.json5", "c.json5", "home/.openclaw-edge/openclaw.json"},
			env: map[string]string{"OPENCLAW_CONFIG_PATH": "b.json5", "OPENCLAW_CONFIG": "c.json5"}, want: "b.json5", wantHows: "named by $OPENCLAW_CONFIG_PATH"},
		{name: "$OPENCLAW_CONFIG alias", files: []string{"c.json5"}, env: map[string]string{"OPENCLAW_CONFIG": "c.json5"}, want: "c.json5", wantHows: "named by $OPENCLAW_CONFIG"},
		{name: "--state-dir", files: []string{"s1/openclaw.json", "s2/openclaw.json"}, flags: map[string]string{"state-dir": "s1"},
			env: map[string]string{"OPENCLAW_STATE_DIR": "s2"}, want: "s1/openclaw.json", wantHows: "from --state-dir"},
		{name: "$OPENCLAW_STATE_DIR, .json5", files: []string{"s2/openclaw.json5", "home/.openclaw-edge/openclaw.json"},
			env: map[string]string{"OPENCLAW_STATE_DIR": "s2"}, want: "s2/openclaw.json5", wantHows: "from $OPENCLAW_STATE_DIR"},
		{name: "state dir without a file", flags: map[string]string{"state-dir": "empty"}, want: ""},
		{name: "both .json and .json5", files: []string{"s3/openclaw.json", "s3/openclaw.json5"}, flags: map[string]string{"state-dir": "s3"},
			wantErr: "both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A short path: the CLI dials <state dir>/gateway.sock, and a
			// Unix socket path is limited to about 100 bytes.
			dir, err := os.MkdirTemp("", "dsc")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			abs := func(p string) string {
				if p == "" {
					return ""
				}
				return filepath.Join(dir, p)
			}
			for _, f := range tc.files {
				if err := os.MkdirAll(filepath.Dir(abs(f)), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(abs(f), []byte(valid), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("HOME", abs("home"))
			t.Setenv("XDG_CONFIG_HOME", abs("home/.config"))
			for _, v := range []string{"OPENCLAW_SOCKET", "OPENCLAW_STATE_DIR", "OPENCLAW_CONFIG", "OPENCLAW_CONFIG_PATH", "OPENCLAW_GATEWAY", "OPENCLAW_CONFIG_DIR"} {
				t.Setenv(v, "")
			}
			for k, v := range tc.env {
				t.Setenv(k, abs(v))
			}

			// The gateway.
			m := &Main{ConfigPath: abs(tc.flags["config"]), StateDir: abs(tc.flags["state-dir"])}
			gwErr := m.resolvePaths()

			// The CLI.
			args := []string{"config", "validate", "--json"}
			for k, v := range tc.flags {
				args = append(args, "--"+k, abs(v))
			}
			var stdout, stderr bytes.Buffer
			root := command.New(strings.NewReader(""), &stdout, &stderr)
			root.SetArgs(args)
			cliErr := root.Execute()

			if tc.wantErr != "" {
				if gwErr == nil || !strings.Contains(gwErr.Error(), tc.wantErr) {
					t.Errorf("gateway: %v; want an error with %q", gwErr, tc.wantErr)
				}
				if cliErr == nil || !strings.Contains(cliErr.Error(), tc.wantErr) {
					t.Errorf("cli: %v; want an error with %q", cliErr, tc.wantErr)
				}
				return
			}
			if gwErr != nil {
				t.Fatalf("gateway: %v", gwErr)
			}
			if cliErr != nil {
				t.Fatalf("cli: %v\n%s%s", cliErr, stdout.String(), stderr.String())
			}
			var report struct {
				OK      bool   `json:"ok"`
				File    string `json:"file"`
				Missing bool   `json:"missing"`
				How     string `json:"how"`
				By      string `json:"by"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
				t.Fatalf("cli stdout: %v\n%s", err, stdout.String())
			}
			want := abs(tc.want)
			if m.ConfigPath != want || report.File != want {
				t.Errorf("gateway picks %q, cli picks %q; want %q", m.ConfigPath, report.File, want)
			}
			if report.By != "cli" || !report.OK || report.Missing != (want == "") {
				t.Errorf("cli report %+v", report)
			}
			if !strings.Contains(report.How, tc.wantHows) || !strings.HasPrefix(report.How, m.Location.How()) {
				t.Errorf("cli says %q, gateway %q; want %q in it", report.How, m.Location.How(), tc.wantHows)
			}
			// The gateway loads it, and its default workspace is in its state dir.
			cfg, err := config.LoadIn(m.ConfigPath, m.StateDir)
			if err != nil {
				t.Fatal(err)
			}
			if a, _ := cfg.Agent(cfg.DefaultAgentID()); a.Workspace != filepath.Join(m.StateDir, "workspace") {
				t.Errorf("default workspace %s; want it in the state dir %s", a.Workspace, m.StateDir)
			}
		})
	}
}
