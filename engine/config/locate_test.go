package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLocate(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, "state")
	both := filepath.Join(home, "both")
	jsonOnly := filepath.Join(home, "json")
	json5Only := filepath.Join(home, "json5")
	for _, f := range []string{
		filepath.Join(both, FileName), filepath.Join(both, FileNameJSON5),
		filepath.Join(jsonOnly, FileName), filepath.Join(json5Only, FileNameJSON5),
		filepath.Join(home, DefaultStateDirName, FileName),
	} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	def := filepath.Join(home, DefaultStateDirName)
	for _, tc := range []struct {
		name      string
		w         Where
		env       map[string]string
		file, how string
		state     string
		stateHow  string
		err       string
	}{
		{name: "default state dir, openclaw.json there", file: filepath.Join(def, FileName), how: FromStateDir, state: def, stateHow: StateFromDefault},
		{name: "--config wins over everything", w: Where{Config: "/etc/x.json", StateDir: jsonOnly},
			env:  map[string]string{"OPENCLAW_CONFIG_PATH": "/a", "OPENCLAW_CONFIG": "/b", "OPENCLAW_STATE_DIR": state},
			file: "/etc/x.json", how: FromFlag, state: jsonOnly, stateHow: StateFromFlag},
		{name: "$OPENCLAW_CONFIG_PATH before the alias", env: map[string]string{"OPENCLAW_CONFIG_PATH": "/a.json", "OPENCLAW_CONFIG": "/b.json"},
			file: "/a.json", how: FromEnvPath, state: def, stateHow: StateFromDefault},
		{name: "$OPENCLAW_CONFIG alias", env: map[string]string{"OPENCLAW_CONFIG": "~/b.json5"},
			file: filepath.Join(home, "b.json5"), how: FromEnvAlias, state: def, stateHow: StateFromDefault},
		{name: "--state-dir before $OPENCLAW_STATE_DIR", w: Where{StateDir: json5Only}, env: map[string]string{"OPENCLAW_STATE_DIR": jsonOnly},
			file: filepath.Join(json5Only, FileNameJSON5), how: FromStateDir, state: json5Only, stateHow: StateFromFlag},
		{name: "$OPENCLAW_STATE_DIR", env: map[string]string{"OPENCLAW_STATE_DIR": jsonOnly},
			file: filepath.Join(jsonOnly, FileName), how: FromStateDir, state: jsonOnly, stateHow: StateFromEnv},
		{name: "state dir with no file: defaults", w: Where{StateDir: state}, how: FromNone, state: state, stateHow: StateFromFlag},
		{name: "state dir that does not exist yet", w: Where{StateDir: filepath.Join(home, "new")}, how: FromNone, state: filepath.Join(home, "new"), stateHow: StateFromFlag},
		{name: "both .json and .json5", w: Where{StateDir: both}, err: "both " + filepath.Join(both, FileName) + " and " + filepath.Join(both, FileNameJSON5) + " exist"},
		{name: "--config settles both", w: Where{StateDir: both, Config: filepath.Join(both, FileNameJSON5)}, file: filepath.Join(both, FileNameJSON5), how: FromFlag, state: both, stateHow: StateFromFlag},
		{name: "relative state dir made absolute", w: Where{StateDir: "rel"}, how: FromNone, state: mustAbs(t, "rel"), stateHow: StateFromFlag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.w
			w.Getenv = func(k string) string { return tc.env[k] }
			w.Home = func() (string, error) { return home, nil }
			l, err := Locate(w)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Locate = %+v, %v; want error containing %q", l, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Location{File: tc.file, FileFrom: tc.how, StateDir: tc.state, StateDirFrom: tc.stateHow}
			if l != want {
				t.Errorf("Locate =\n %+v\nwant\n %+v", l, want)
			}
			if l.How() == "" {
				t.Error("How is empty")
			}
		})
	}

	t.Run("no home and no state dir", func(t *testing.T) {
		_, err := Locate(Where{Getenv: func(string) string { return "" }, Home: func() (string, error) { return "", errors.New("$HOME is not defined") }})
		if err == nil || !strings.Contains(err.Error(), "--state-dir") {
			t.Fatalf("err = %v; want advice to pass --state-dir", err)
		}
	})
}

func mustAbs(t *testing.T, p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// The default workspace lives under the state dir the config was located
// with; an explicit one is kept.
func TestWorkspaceUnderStateDir(t *testing.T) {
	state := t.TempDir()
	c, err := Location{StateDir: state}.Load()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Agent(c.DefaultAgentID())
	if want := filepath.Join(state, "workspace"); a.Workspace != want {
		t.Errorf("default workspace = %q; want %q", a.Workspace, want)
	}
	if v, _, _ := c.Value("agents.defaults.workspace"); v != filepath.Join(state, "workspace") {
		t.Errorf("config get agents.defaults.workspace = %v", v)
	}
	f := filepath.Join(state, FileName)
	if err := os.WriteFile(f, []byte(`{agents: {defaults: {workspace: "/srv/ws"}, list: [{id: "main"}, {id: "b"}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = parse(mustRead(t, f), f, os.LookupEnv, state) // no FS check: /srv need not exist
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := c.Agent("b"); b.Workspace != "/srv/ws-b" {
		t.Errorf("agent b workspace = %q", b.Workspace)
	}
}

func mustRead(t *testing.T, f string) []byte {
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
