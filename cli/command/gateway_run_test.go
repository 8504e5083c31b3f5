package command

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/cli/service"
	"github.com/openclaw-edge/edge/engine/api"
)

const systemctlShow = "systemctl show openclaw-gateway.service --no-pager --property=LoadState,UnitFileState,ActiveState,SubState,MainPID,ActiveEnterTimestamp,NRestarts,Result,FragmentPath"

// TestGatewayStatusProbesSocket: a gateway that answers at its socket is
// reported running, managed by systemd only when it is systemd's main pid;
// without systemd that is a note, not an error.
func TestGatewayStatusProbesSocket(t *testing.T) {
	g, err := startFakeGateway() // its status says pid 4242
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	managed, unmanaged := true, false
	tests := []struct {
		name     string
		show     string // systemctl show's output; "" no systemd
		socket   string
		code     int
		want     service.Status
		text     []string
		errorOut string
	}{
		{"by hand, unit not installed", "LoadState=not-found\nActiveState=inactive\nSubState=dead\nMainPID=0\n", g.socket, 0,
			service.Status{Manager: "systemd", Unit: "openclaw-gateway.service", Active: "running", PID: 4242, Socket: g.socket, Managed: &unmanaged},
			[]string{"installed no: sudo openclaw gateway install", "active running (not managed by systemd)", "pid 4242", "socket " + g.socket + " (answers)"}, ""},
		{"the service's", "LoadState=loaded\nUnitFileState=enabled\nActiveState=active\nSubState=running\nMainPID=4242\nFragmentPath=" + unitPath + "\n", g.socket, 0,
			service.Status{Manager: "systemd", Unit: "openclaw-gateway.service", File: unitPath, Installed: true, Enabled: "enabled", Active: "active", Sub: "running", PID: 4242, Socket: g.socket, Managed: &managed},
			[]string{"active active (running)", "pid 4242"}, ""},
		{"by hand, another one failed", "LoadState=loaded\nUnitFileState=enabled\nActiveState=failed\nMainPID=0\nNRestarts=5\nResult=exit-code\n", g.socket, 0,
			service.Status{Manager: "systemd", Unit: "openclaw-gateway.service", Installed: true, Enabled: "enabled", Active: "running", PID: 4242, Socket: g.socket, Managed: &unmanaged},
			[]string{"active running (not managed by systemd)"}, ""},
		{"no systemd", "", g.socket, 0,
			service.Status{Manager: "systemd", Unit: "openclaw-gateway.service", Active: "running", PID: 4242, Socket: g.socket, Managed: &unmanaged,
				ManagerError: "systemd is not running on this machine (no /run/systemd/system): run `openclaw-gateway run` under your own init system or supervisor instead"},
			[]string{"active running (not managed by systemd)", "note systemd could not be asked: systemd is not running"}, ""},
		{"nothing runs, no systemd", "", filepath.Join(g.dir, "down.sock"), 1, service.Status{}, nil, "systemd is not running on this machine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, r := fakeMachine(t, "linux", 1000)
			if tt.show == "" {
				must(t, os.RemoveAll(o.Path("/run/systemd")))
			}
			r.outputs[systemctlShow] = tt.show
			code, out, errOut := runCLI("--socket", tt.socket, "gateway", "status", "--json")
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, out, errOut)
			}
			if tt.code != 0 {
				if !strings.Contains(errOut, tt.errorOut) || !strings.Contains(out, `"ok": false`) {
					t.Errorf("stdout %s\nstderr %s", out, errOut)
				}
				return
			}
			var st service.Status
			must(t, json.Unmarshal([]byte(out), &st))
			if st.Managed == nil || *st.Managed != *tt.want.Managed {
				t.Fatalf("managed %v, want %v", st.Managed, *tt.want.Managed)
			}
			st.Managed = tt.want.Managed
			if st != tt.want {
				t.Errorf("status %+v\nwant %+v", st, tt.want)
			}
			code, out, errOut = runCLI("--socket", tt.socket, "gateway", "status")
			if code != 0 {
				t.Fatalf("text: exit %d: %s", code, errOut)
			}
			for _, w := range tt.text {
				if !strings.Contains(strings.Join(strings.Fields(out), " "), w) { // the columns' spacing aside
					t.Errorf("text lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestGatewayRun: `openclaw gateway run` is openclaw-gateway run, found
// beside openclaw, with the same arguments (global flags included) and
// environment, and its exit status.
func TestGatewayRun(t *testing.T) {
	o, _ := fakeMachine(t, "linux", 1000)
	gw := o.Path("/usr/local/bin/openclaw-gateway")
	must(t, os.WriteFile(gw, []byte("#!/bin/sh\necho \"$*\"\necho \"env=$OPENCLAW_TEST_RUN\"\nexit 3\n"), 0o755))
	t.Setenv("OPENCLAW_TEST_RUN", "passed")

	code, out, errOut := runCLI("--state-dir", "/srv/oc", "gateway", "run", "--config", "my config.json")
	if code != 3 || out != "run --state-dir /srv/oc --config my config.json\nenv=passed\n" || errOut != "" {
		t.Errorf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	code, out, _ = runCLI("gateway", "run", "--help")
	if code != 3 || !strings.HasPrefix(out, "run --help\n") {
		t.Errorf("--help is the gateway's: exit %d, %q", code, out)
	}

	must(t, os.Remove(gw))
	code, _, errOut = runCLI("gateway", "run")
	if code != 1 || !strings.Contains(errOut, "cannot find openclaw-gateway beside openclaw or in $PATH") || strings.Contains(errOut, "--binary") {
		t.Errorf("missing: exit %d, stderr %q", code, errOut)
	}
}

// stateFixture writes a user's state dir under o's root: config, a
// database, a session and a model with the index that names it.
func stateFixture(t *testing.T, o *service.OS, dir string) {
	t.Helper()
	for name, data := range map[string]string{
		"openclaw.json":       `{ agents: { defaults: { workspace: "~/notes" } } }`,
		"state.db":            "db",
		"sessions/main.jsonl": "{}\n",
		"models/m.gguf":       "GGUF",
		"models/models.json":  `{"version": 1, "models": {"m": {"name": "m", "path": "` + dir + `/models/m.gguf", "size": 12345678901}}}`,
	} {
		p := filepath.Join(o.Path(dir), name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o700))
		must(t, os.WriteFile(p, []byte(data), 0o600))
	}
}

// TestGatewayInstallMigrateState: install says that the user's own state
// stays behind; --migrate-state moves it into the service's state dir
// before the service starts, and refuses over a running gateway or a
// state dir that holds something.
func TestGatewayInstallMigrateState(t *testing.T) {
	t.Setenv("OPENCLAW_STATE_DIR", "")
	const from, to = "/Users/alice/.openclaw-edge", "/var/lib/openclaw"
	var running *api.Status
	old := probeGateway
	probeGateway = func(_ context.Context, socket string) (*api.Status, error) {
		if running == nil || socket != filepath.Join(from, "gateway.sock") {
			return nil, errors.New("down")
		}
		return running, nil
	}
	t.Cleanup(func() { probeGateway = old })

	o, r := fakeMachine(t, "linux", 0)
	stateFixture(t, o, from)

	code, out, errOut := runCLI("gateway", "install", "--dry-run")
	if code != 0 || !strings.Contains(out, "note: "+from+" (sessions, config, models: 5 files, ") ||
		!strings.Contains(out, "stays behind: the service uses "+to) || !strings.Contains(out, "`sudo openclaw gateway install --migrate-state`") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}

	code, out, errOut = runCLI("gateway", "install", "--dry-run", "--migrate-state")
	if code != 0 || !strings.Contains(out, "move   "+from+" → "+to+" (5 files, ") || !strings.Contains(out, "models/, openclaw.json, sessions/, state.db)") ||
		!strings.Contains(out, "run    chown -R openclaw:openclaw "+to) || !strings.Contains(out, "note: openclaw.json names paths under") {
		t.Fatalf("dry run --migrate-state: exit %d\n%s%s", code, out, errOut)
	}
	if !o.Exists(from+"/state.db") || o.Exists(to) || len(r.ran) > 0 {
		t.Fatal("a dry run moved something")
	}

	running = &api.Status{PID: 777}
	code, _, errOut = runCLI("gateway", "install", "--migrate-state")
	if code != 1 || !strings.Contains(errOut, "a gateway is running from "+from+" (pid 777, answering at "+from+"/gateway.sock): stop it first") {
		t.Fatalf("running: exit %d: %s", code, errOut)
	}
	running = nil
	must(t, os.MkdirAll(o.Path(to+"/sessions"), 0o700))
	code, _, errOut = runCLI("gateway", "install", "--migrate-state")
	if code != 1 || !strings.Contains(errOut, to+" already holds a state (sessions/)") {
		t.Fatalf("target not empty: exit %d: %s", code, errOut)
	}
	if !o.Exists(from+"/state.db") || o.Exists(unitPath) || len(r.ran) > 0 {
		t.Fatal("a refused install changed something")
	}

	must(t, os.Remove(o.Path(to+"/sessions"))) // empty: taken
	code, out, errOut = runCLI("gateway", "install", "--migrate-state")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if o.Exists(from) || readRoot(t, o, to+"/state.db") != "db" || readRoot(t, o, to+"/sessions/main.jsonl") != "{}\n" {
		t.Error("the state was not moved")
	}
	var idx struct {
		Models map[string]struct {
			Path string
			Size int64
		}
	}
	must(t, json.Unmarshal([]byte(readRoot(t, o, to+"/models/models.json")), &idx))
	if m := idx.Models["m"]; m.Path != to+"/models/m.gguf" || m.Size != 12345678901 {
		t.Errorf("model index entry %+v", m)
	}
	if fi, err := os.Stat(o.Path(to)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode: %v %v", fi.Mode(), err)
	}
	want := []string{"systemd-sysusers /etc/sysusers.d/openclaw.conf", "systemctl daemon-reload", "chown -R openclaw:openclaw " + to,
		"systemctl enable openclaw-gateway.service", "systemctl restart openclaw-gateway.service"}
	if !slices.Equal(r.lines(), want) {
		t.Errorf("ran %q\nwant %q", r.lines(), want)
	}

	// Nothing left behind: nothing said.
	code, out, _ = runCLI("gateway", "install", "--dry-run")
	if code != 0 || strings.Contains(out, "stays behind") {
		t.Errorf("after the move: exit %d\n%s", code, out)
	}
}

// TestGatewayLaunchdMigrateState: on macOS the state moves from
// ~/.openclaw-edge to --state-dir; the loaded agent, which may run from
// it, is booted out first and its gateway is not "another one running".
func TestGatewayLaunchdMigrateState(t *testing.T) {
	t.Setenv("OPENCLAW_STATE_DIR", "")
	const from, to = "/Users/alice/.openclaw-edge", "/Users/alice/edge"
	old := probeGateway
	probeGateway = func(context.Context, string) (*api.Status, error) { return &api.Status{PID: 777}, nil }
	t.Cleanup(func() { probeGateway = old })
	o, r := fakeMachine(t, "darwin", 501)
	target := "gui/501/ai.openclaw-edge.gateway"
	plist := "/Users/alice/Library/LaunchAgents/ai.openclaw-edge.gateway.plist"
	r.outputs["launchctl print "+target] = "state = running\npid = 777\n"
	stateFixture(t, o, from)

	code, out, errOut := runCLI("--state-dir", to, "gateway", "install", "--migrate-state")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if o.Exists(from) || readRoot(t, o, to+"/state.db") != "db" || !o.Exists(to+"/logs") {
		t.Error("the state was not moved")
	}
	want := []string{"launchctl print " + target, "launchctl print " + target, "launchctl bootout " + target, "launchctl bootstrap gui/501 " + plist}
	if !slices.Equal(r.lines(), want) {
		t.Errorf("ran %q\nwant %q", r.lines(), want)
	}
	if i, j := strings.Index(out, "run    launchctl bootout"), strings.Index(out, "move   "+from); i < 0 || j < i {
		t.Errorf("the agent is not booted out before the move:\n%s", out)
	}
}
