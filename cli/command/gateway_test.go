package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/cli/service"
	"github.com/openclaw-edge/edge/systemd"
)

// fakeRunner records every command and answers from canned outputs, keyed
// by the command line; a key with an error makes that command fail.
type fakeRunner struct {
	ran     [][]string
	outputs map[string]string
	fail    map[string]bool
}

func (f *fakeRunner) Run(_ context.Context, argv ...string) (string, error) {
	f.ran = append(f.ran, argv)
	line := strings.Join(argv, " ")
	if f.fail[line] {
		return f.outputs[line], errors.New("exit status 1")
	}
	return f.outputs[line], nil
}

func (f *fakeRunner) lines() []string {
	var out []string
	for _, a := range f.ran {
		out = append(out, strings.Join(a, " "))
	}
	return out
}

// fakeMachine is a machine under a temporary root: systemd running (for
// Linux), openclaw and openclaw-gateway in /usr/local/bin.
func fakeMachine(t *testing.T, goos string, uid int) (*service.OS, *fakeRunner) {
	t.Helper()
	root := t.TempDir()
	if goos == "linux" {
		must(t, os.MkdirAll(filepath.Join(root, "run/systemd/system"), 0o755))
	}
	must(t, os.MkdirAll(filepath.Join(root, "usr/local/bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "usr/local/bin/openclaw-gateway"), []byte("#!/bin/sh\n"), 0o755))
	r := &fakeRunner{outputs: map[string]string{}, fail: map[string]bool{}}
	o := &service.OS{
		GOOS: goos, Root: root, UID: uid, Home: "/Users/alice", Runner: r,
		Executable: func() (string, error) { return "/usr/local/bin/openclaw", nil },
		LookPath:   func(string) (string, error) { return "", errors.New("not in $PATH") },
	}
	old := newServiceOS
	newServiceOS = func() *service.OS { return o }
	t.Cleanup(func() { newServiceOS = old })
	// gateway status probes the socket first: none answers here.
	t.Setenv("OPENCLAW_SOCKET", filepath.Join(root, "none.sock"))
	return o, r
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// runCLI runs the CLI in-process and returns exit code, stdout, stderr.
func runCLI(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// golden compares got with testdata/gateway/name (rewritten by -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "gateway", name)
	if *update {
		must(t, os.MkdirAll(filepath.Dir(path), 0o755))
		must(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (-update rewrites it)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

func readRoot(t *testing.T, o *service.OS, p string) string {
	t.Helper()
	b, err := os.ReadFile(o.Path(p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const (
	unitPath  = "/etc/systemd/system/openclaw-gateway.service"
	usersPath = "/etc/sysusers.d/openclaw.conf"
)

func TestGatewayInstallLinux(t *testing.T) {
	o, r := fakeMachine(t, "linux", 0)

	code, out, errOut := runCLI("gateway", "install")
	if code != 0 {
		t.Fatalf("install: exit %d: %s", code, errOut)
	}
	golden(t, "install_linux.txt", out)
	wantUnit, _ := systemd.Unit("/usr/local/bin/openclaw-gateway")
	if got := readRoot(t, o, unitPath); got != string(wantUnit) {
		t.Errorf("unit written:\n%s", got)
	}
	if got := readRoot(t, o, usersPath); got != string(systemd.Sysusers()) {
		t.Errorf("sysusers written:\n%s", got)
	}
	if fi, err := os.Stat(o.Path(unitPath)); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("unit mode %v, %v; want 0644", fi.Mode(), err)
	}
	want := []string{
		"systemd-sysusers /etc/sysusers.d/openclaw.conf",
		"systemctl daemon-reload",
		"systemctl enable openclaw-gateway.service",
		"systemctl restart openclaw-gateway.service",
	}
	if !slices.Equal(r.lines(), want) {
		t.Errorf("ran %q\nwant %q", r.lines(), want)
	}

	// Again, nothing changed: files kept, enable --now (a no-op when running).
	r.ran = nil
	code, out, errOut = runCLI("gateway", "install")
	if code != 0 || !strings.Contains(out, "keep   "+unitPath+" (unchanged)") {
		t.Fatalf("reinstall: exit %d\n%s%s", code, out, errOut)
	}
	want = []string{"systemd-sysusers /etc/sysusers.d/openclaw.conf", "systemctl daemon-reload", "systemctl enable --now openclaw-gateway.service"}
	if !slices.Equal(r.lines(), want) {
		t.Errorf("reinstall ran %q\nwant %q", r.lines(), want)
	}
}

func TestGatewayInstallNeverClobbers(t *testing.T) {
	o, r := fakeMachine(t, "linux", 0)
	must(t, os.MkdirAll(filepath.Dir(o.Path(unitPath)), 0o755))
	mine := "[Service]\nExecStart=/opt/mine\n"
	must(t, os.WriteFile(o.Path(unitPath), []byte(mine), 0o644))

	code, out, errOut := runCLI("gateway", "install")
	if code != 1 || !strings.Contains(errOut, unitPath+" already exists and differs") || !strings.Contains(errOut, "--force") {
		t.Fatalf("install over a different unit: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if readRoot(t, o, unitPath) != mine || len(r.ran) > 0 || o.Exists(usersPath) {
		t.Fatalf("a refused install changed something: ran %q", r.lines())
	}

	// --dry-run --force shows the replacement and still changes nothing.
	code, out, _ = runCLI("gateway", "install", "--dry-run", "--force", "--print")
	if code != 0 || !strings.Contains(out, "write  "+unitPath+" (replaces a different file, --force)") || !strings.Contains(out, "--- "+unitPath+"\n") {
		t.Fatalf("dry run with --force: exit %d\n%s", code, out)
	}
	if readRoot(t, o, unitPath) != mine || len(r.ran) > 0 {
		t.Fatalf("a dry run changed something: ran %q", r.lines())
	}

	code, _, errOut = runCLI("gateway", "install", "--force")
	if code != 0 || strings.Contains(readRoot(t, o, unitPath), "/opt/mine") {
		t.Fatalf("--force: exit %d %s", code, errOut)
	}
}

func TestGatewayInstallRefusals(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(*service.OS)
		args   []string
		stderr string
	}{
		{"not root", func(o *service.OS) { o.UID = 1000 }, nil, "needs root: run `sudo openclaw gateway install`"},
		{"no systemd", func(o *service.OS) { must(t, os.RemoveAll(o.Path("/run/systemd"))) }, nil, "systemd is not running on this machine"},
		{"binary in a home", func(o *service.OS) {
			must(t, os.MkdirAll(o.Path("/home/alice/edge/bin"), 0o755))
			must(t, os.WriteFile(o.Path("/home/alice/edge/bin/openclaw-gateway"), nil, 0o755))
		}, []string{"--binary", "/home/alice/edge/bin/openclaw-gateway"}, "ProtectHome=yes"},
		{"binary not executable", func(o *service.OS) { must(t, os.Chmod(o.Path("/usr/local/bin/openclaw-gateway"), 0o644)) }, nil, "cannot find openclaw-gateway beside openclaw or in $PATH"},
		{"binary path a unit cannot hold", func(o *service.OS) {
			must(t, os.MkdirAll(o.Path("/opt/my apps"), 0o755))
			must(t, os.WriteFile(o.Path("/opt/my apps/openclaw-gateway"), nil, 0o755))
		}, []string{"--binary", "/opt/my apps/openclaw-gateway"}, "would expand or split on"},
		{"windows", func(o *service.OS) { o.GOOS = "windows" }, nil, "not a windows service"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, r := fakeMachine(t, "linux", 0)
			tt.setup(o)
			code, _, errOut := runCLI(append([]string{"gateway", "install"}, tt.args...)...)
			if code != 1 || !strings.Contains(errOut, tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want 1 and %q", code, errOut, tt.stderr)
			}
			if len(r.ran) > 0 || o.Exists(unitPath) {
				t.Fatalf("a refused install changed something: ran %q", r.lines())
			}
		})
	}
}

// TestGatewayInstallDryRunNotRoot: anyone may look at the plan.
func TestGatewayInstallDryRunNotRoot(t *testing.T) {
	o, r := fakeMachine(t, "linux", 1000)
	code, out, errOut := runCLI("gateway", "install", "--dry-run")
	if code != 0 || !strings.HasPrefix(out, "dry run: nothing is changed") || !strings.Contains(out, "write  "+unitPath+" (new)") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if len(r.ran) > 0 || o.Exists(unitPath) {
		t.Fatalf("a dry run changed something: ran %q", r.lines())
	}
}

func TestGatewayUninstallLinux(t *testing.T) {
	o, r := fakeMachine(t, "linux", 0)
	if code, _, errOut := runCLI("gateway", "install"); code != 0 {
		t.Fatal(errOut)
	}
	must(t, os.MkdirAll(o.Path(systemd.StateDir), 0o700))
	r.ran = nil
	code, out, errOut := runCLI("gateway", "uninstall")
	if code != 0 {
		t.Fatalf("uninstall: exit %d: %s", code, errOut)
	}
	golden(t, "uninstall_linux.txt", out)
	want := []string{"systemctl disable --now openclaw-gateway.service", "systemctl daemon-reload"}
	if !slices.Equal(r.lines(), want) {
		t.Errorf("ran %q\nwant %q", r.lines(), want)
	}
	if o.Exists(unitPath) || o.Exists(usersPath) || !o.Exists(systemd.StateDir) {
		t.Error("uninstall must remove the unit and the sysusers entry and keep the state")
	}

	r.ran = nil
	code, out, _ = runCLI("gateway", "uninstall")
	if code != 0 || !strings.Contains(out, "nothing to uninstall") || len(r.ran) > 0 {
		t.Fatalf("uninstall twice: exit %d, ran %q\n%s", code, r.lines(), out)
	}
}

func TestGatewayStatusLinux(t *testing.T) {
	_, r := fakeMachine(t, "linux", 1000) // status needs no root
	show := "systemctl show openclaw-gateway.service --no-pager --property=LoadState,UnitFileState,ActiveState,SubState,MainPID,ActiveEnterTimestamp,NRestarts,Result,FragmentPath"
	r.outputs[show] = "LoadState=loaded\nUnitFileState=enabled\nActiveState=active\nSubState=running\nMainPID=4242\n" +
		"ActiveEnterTimestamp=Tue 2026-11-24 10:00:00 UTC\nNRestarts=1\nResult=watchdog\nFragmentPath=/etc/systemd/system/openclaw-gateway.service\n"

	code, out, errOut := runCLI("gateway", "status", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var st service.Status
	must(t, json.Unmarshal([]byte(out), &st))
	want := service.Status{Manager: "systemd", Unit: "openclaw-gateway.service", File: unitPath, Installed: true, Enabled: "enabled",
		Active: "active", Sub: "running", PID: 4242, Since: "Tue 2026-11-24 10:00:00 UTC", Restarts: 1, Result: "watchdog"}
	if st != want {
		t.Errorf("status %+v\nwant %+v", st, want)
	}
	code, out, _ = runCLI("gateway", "status")
	if code != 0 {
		t.Fatal(code)
	}
	golden(t, "status_linux.txt", out)

	r.fail[show] = true
	r.outputs[show] = "Failed to connect to bus: No such file or directory"
	code, out, errOut = runCLI("gateway", "status", "--json")
	var failure struct {
		OK    bool `json:"ok"`
		Error struct{ Code, Message string }
	}
	if code != 1 || json.Unmarshal([]byte(out), &failure) != nil || failure.OK || failure.Error.Code != "error" ||
		!strings.Contains(failure.Error.Message, "Failed to connect to bus") || !strings.Contains(errOut, "Failed to connect to bus") {
		t.Fatalf("failure: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}

func TestGatewayControlLinux(t *testing.T) {
	for _, verb := range []string{"start", "stop", "restart"} {
		t.Run(verb, func(t *testing.T) {
			_, r := fakeMachine(t, "linux", 0)
			code, out, errOut := runCLI("gateway", verb)
			if code != 0 || out != "run    systemctl "+verb+" openclaw-gateway.service\n" {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			if !slices.Equal(r.lines(), []string{"systemctl " + verb + " openclaw-gateway.service"}) {
				t.Fatalf("ran %q", r.lines())
			}
			r.fail["systemctl "+verb+" openclaw-gateway.service"] = true
			if code, _, errOut := runCLI("gateway", verb); code != 1 || !strings.Contains(errOut, "journalctl -u openclaw-gateway.service") {
				t.Fatalf("failing %s: exit %d %s", verb, code, errOut)
			}
		})
	}
	o, r := fakeMachine(t, "linux", 1000)
	_ = o
	if code, _, errOut := runCLI("gateway", "restart"); code != 1 || !strings.Contains(errOut, "sudo openclaw gateway restart") || len(r.ran) > 0 {
		t.Fatalf("restart as a user: exit %d %s", code, errOut)
	}
}

func TestGatewayLaunchd(t *testing.T) {
	t.Setenv("OPENCLAW_STATE_DIR", "")
	o, r := fakeMachine(t, "darwin", 501)
	target := "gui/501/ai.openclaw-edge.gateway"
	plist := "/Users/alice/Library/LaunchAgents/ai.openclaw-edge.gateway.plist"
	r.fail["launchctl print "+target] = true // not loaded yet

	code, out, errOut := runCLI("gateway", "install")
	if code != 0 {
		t.Fatalf("install: exit %d: %s", code, errOut)
	}
	golden(t, "install_darwin.txt", out)
	golden(t, "ai.openclaw-edge.gateway.plist", readRoot(t, o, plist))
	if fi, err := os.Stat(o.Path("/Users/alice/.openclaw-edge/logs")); err != nil || !fi.IsDir() {
		t.Errorf("logs dir: %v", err)
	}
	want := []string{"launchctl print " + target, "launchctl enable " + target, "launchctl bootstrap gui/501 " + plist}
	if !slices.Equal(r.lines(), want) {
		t.Errorf("ran %q\nwant %q", r.lines(), want)
	}

	// Loaded now: status, restart, stop, uninstall.
	delete(r.fail, "launchctl print "+target)
	r.outputs["launchctl print "+target] = "gui/501/ai.openclaw-edge.gateway = {\n\tactive count = 1\n\tstate = running\n\tpid = 777\n\truns = 2\n\tlast exit code = (never exited)\n}\n"
	code, out, _ = runCLI("gateway", "status", "--json")
	var st service.Status
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status: %d %s", code, out)
	}
	if st.Active != "running" || st.PID != 777 || !st.Installed || st.Manager != "launchd" || st.File != plist {
		t.Errorf("status %+v", st)
	}
	r.ran = nil
	for _, verb := range []string{"restart", "stop", "start"} {
		if code, _, errOut := runCLI("gateway", verb); code != 0 {
			t.Fatalf("%s: %s", verb, errOut)
		}
	}
	want = []string{"launchctl kickstart -k " + target, "launchctl bootout " + target, "launchctl print " + target, "launchctl kickstart " + target}
	if !slices.Equal(r.lines(), want) {
		t.Errorf("ran %q\nwant %q", r.lines(), want)
	}

	// An existing different plist is kept without --force.
	must(t, os.WriteFile(o.Path(plist), []byte("<plist/>"), 0o644))
	if code, _, errOut := runCLI("gateway", "install"); code != 1 || !strings.Contains(errOut, "already exists and differs") {
		t.Fatalf("install over a different plist: %d %s", code, errOut)
	}
	r.ran = nil
	if code, _, errOut := runCLI("gateway", "install", "--force"); code != 0 {
		t.Fatal(errOut)
	}
	want = []string{"launchctl print " + target, "launchctl bootout " + target, "launchctl bootstrap gui/501 " + plist}
	if !slices.Equal(r.lines(), want) {
		t.Errorf("forced reinstall of a loaded agent ran %q\nwant %q", r.lines(), want)
	}

	r.ran = nil
	code, out, errOut = runCLI("gateway", "uninstall")
	if code != 0 || o.Exists(plist) || !strings.Contains(out, "state kept in /Users/alice/.openclaw-edge") {
		t.Fatalf("uninstall: %d\n%s%s", code, out, errOut)
	}
	if !slices.Equal(r.lines(), []string{"launchctl print " + target, "launchctl bootout " + target}) {
		t.Errorf("uninstall ran %q", r.lines())
	}
}

// TestGatewayIsOffline: gateway commands never check or use the API socket.
func TestGatewayIsOffline(t *testing.T) {
	fakeMachine(t, "linux", 0)
	code, _, errOut := runCLI("--socket", filepath.Join(t.TempDir(), "nope.sock"), "gateway", "install", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
