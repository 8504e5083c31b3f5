package command

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/engine/doctor"
)

// doctorEnv isolates a doctor run: no socket, state dir or runner from
// the environment, and no paired gateway.
func doctorEnv(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("OPENCLAW_CONFIG_DIR", filepath.Join(home, "cli"))
	for _, v := range []string{"OPENCLAW_SOCKET", "OPENCLAW_STATE_DIR", "OPENCLAW_CONFIG", "OPENCLAW_CONFIG_PATH", "OPENCLAW_GATEWAY"} {
		t.Setenv(v, "")
	}
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestDoctorGatewayDown: with the gateway down the doctor checks here what
// needs no gateway, says which failed, and how to start the gateway; --json
// is the gateway's report shape with the gateway check failing.
func TestDoctorGatewayDown(t *testing.T) {
	doctorEnv(t)
	runner := filepath.Join(t.TempDir(), "openclaw-runner")
	must(t, os.WriteFile(runner, []byte("#!/bin/sh\n"), 0o755))
	t.Setenv("OPENCLAW_RUNNER", runner)

	held, err := net.Listen("tcp", "127.0.0.1:0") // another program on the port
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	heldPort := held.Addr().(*net.TCPAddr).Port

	tests := []struct {
		name   string
		config string // openclaw.json in the state dir; "" none
		want   map[string]string
	}{
		{"defaults, all fine", `{ gateway: { port: ` + strconv.Itoa(freePort(t)) + ` } }`,
			map[string]string{"gateway": api.DoctorFail, "config": api.DoctorOK, doctor.NameStateDir: api.DoctorOK, doctor.NameLAN: api.DoctorOK, doctor.NameRunner: api.DoctorOK}},
		{"port held by another program", `{ gateway: { port: ` + strconv.Itoa(heldPort) + ` } }`,
			map[string]string{"gateway": api.DoctorFail, "config": api.DoctorOK, doctor.NameLAN: api.DoctorWarn}},
		{"bad config", "{\n  gateway: { port: 99999 },\n}\n",
			map[string]string{"gateway": api.DoctorFail, "config": api.DoctorFail}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			must(t, os.Mkdir(state, 0o700))
			if tt.config != "" {
				must(t, os.WriteFile(filepath.Join(state, "openclaw.json"), []byte(tt.config), 0o600))
			}
			code, out, errOut := runCLI("--state-dir", state, "doctor", "--json")
			if code != 1 {
				t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
			}
			var rep api.DoctorReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.OK {
				t.Fatalf("stdout is not a failing doctor report (%v):\n%s", err, out)
			}
			got := map[string]api.DoctorCheck{}
			for _, c := range rep.Checks {
				got[c.Name] = c
			}
			for name, status := range tt.want {
				if got[name].Status != status {
					t.Errorf("%s: %s (%s), want %s", name, got[name].Status, got[name].Detail, status)
				}
			}
			if g := got["gateway"]; !strings.Contains(g.Detail, filepath.Join(state, "gateway.sock")) || !strings.Contains(g.Fix, "openclaw gateway run") {
				t.Errorf("gateway check %+v: want the socket and how to start it", g)
			}
			if _, ok := got[doctor.NameDisk]; !ok {
				t.Error("no disk space check")
			}
			if c := got["config"]; c.Status == api.DoctorFail && !strings.Contains(c.Detail, filepath.Join(state, "openclaw.json")+":2: gateway.port") {
				t.Errorf("config problem without file:line: %q", c.Detail)
			}
			if !strings.Contains(errOut, "the gateway is not running") || !strings.Contains(errOut, "failed: gateway") {
				t.Errorf("stderr %q", errOut)
			}

			// The text: the same checks, and the fix under each failure.
			code, out, _ = runCLI("--state-dir", state, "doctor")
			if code != 1 || !strings.Contains(out, "FAIL    gateway") || !strings.Contains(out, "fix: run it in the foreground: `openclaw gateway run`") {
				t.Errorf("text: exit %d\n%s", code, out)
			}
			if strings.Count(out, "nothing answers at") != 1 {
				t.Errorf("the socket is said more than once:\n%s", out)
			}
		})
	}
}

func TestDoctorPortCheck(t *testing.T) {
	inUse := func(string, string) (net.Listener, error) {
		return nil, &net.OpError{Op: "listen", Net: "tcp", Err: os.NewSyscallError("bind", syscall.EADDRINUSE)}
	}
	notHere := func(string, string) (net.Listener, error) { return nil, errors.New("cannot assign requested address") }
	free := func(n, a string) (net.Listener, error) { return net.Listen(n, "127.0.0.1:0") }
	tests := []struct {
		bind   string
		listen func(string, string) (net.Listener, error)
		status string
		detail string
	}{
		{"loopback", free, api.DoctorOK, "port 18789 (gateway.port) on 127.0.0.1 (gateway.bind loopback) is free"},
		{"loopback", inUse, api.DoctorWarn, "is in use by another program"},
		{"lan", inUse, api.DoctorFail, "on every address (gateway.bind lan) is in use"},
		{"192.0.2.7", notHere, api.DoctorFail, "cannot be listened on: cannot assign requested address"},
	}
	for _, tt := range tests {
		c := portCheck(tt.bind, 18789, tt.listen)
		if c.Status != tt.status || !strings.Contains(c.Detail, tt.detail) || c.Name != doctor.NameLAN {
			t.Errorf("%s: %+v; want %s and %q", tt.bind, c, tt.status, tt.detail)
		}
		if c.Status != api.DoctorOK && !strings.Contains(c.Fix, "gateway.port") {
			t.Errorf("%s: fix %q", tt.bind, c.Fix)
		}
	}
}

func TestDoctorRunnerCheck(t *testing.T) {
	missing := &engine.ProgramError{Name: runnerName, EnvVar: runnerEnv, Exe: "/usr/bin/openclaw", Err: errors.New("not found")}
	badEnv := &engine.ProgramError{Name: runnerName, EnvVar: runnerEnv, EnvValue: "/nope", Err: errors.New("no such file")}
	tests := []struct {
		name   string
		err    error
		local  bool
		status string
		detail string
	}{
		{"found", nil, true, api.DoctorOK, "/usr/bin/openclaw-runner"},
		{"missing, remote model", missing, false, api.DoctorWarn, "openclaw-runner is neither beside /usr/bin/openclaw nor in $PATH"},
		{"missing, local model", missing, true, api.DoctorFail, "the default model is a local one"},
		{"$OPENCLAW_RUNNER wrong", badEnv, false, api.DoctorWarn, "$OPENCLAW_RUNNER names /nope: no such file"},
	}
	for _, tt := range tests {
		c := runnerHereCheck(func() (string, error) { return "/usr/bin/openclaw-runner", tt.err }, tt.local)
		if c.Status != tt.status || !strings.Contains(c.Detail, tt.detail) {
			t.Errorf("%s: %+v; want %s and %q", tt.name, c, tt.status, tt.detail)
		}
	}
}

func TestDoctorStateDirCheck(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	must(t, os.Mkdir(open, 0o777))
	must(t, os.Chmod(open, 0o777)) // past the umask
	private := filepath.Join(dir, "private")
	must(t, os.Mkdir(private, 0o700))
	tests := []struct {
		dir, status, detail string
	}{
		{private, api.DoctorOK, "mode 0700"},
		{open, api.DoctorFail, "other users can write to it"},
		{filepath.Join(dir, "new"), api.DoctorWarn, "does not exist yet"},
	}
	for _, tt := range tests {
		c := stateDirCheck(tt.dir, os.Getuid())
		if c.Status != tt.status || !strings.Contains(c.Detail, tt.detail) {
			t.Errorf("%s: %+v; want %s and %q", tt.dir, c, tt.status, tt.detail)
		}
	}
	if entries, _ := os.ReadDir(private); len(entries) != 0 {
		t.Errorf("the writability test left %v", entries)
	}
}

func TestDoctorConfigCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	must(t, os.WriteFile(good, []byte(`{ gateway: { port: 18790 } }`), 0o600))
	tests := []struct {
		name   string
		loc    config.Location
		err    error
		status string
		detail string
		port   int
	}{
		{"none", config.Location{StateDir: dir, StateDirFrom: config.StateFromFlag, FileFrom: config.FromNone}, nil, api.DoctorOK, "the built-in defaults apply", 18789},
		{"good", config.Location{File: good, StateDir: dir, StateDirFrom: config.StateFromFlag, FileFrom: config.FromFlag}, nil, api.DoctorOK, good, 18790},
		{"not located", config.Location{}, errors.New("both openclaw.json and openclaw.json5"), api.DoctorFail, "both openclaw.json", 18789},
	}
	for _, tt := range tests {
		c, cfg := configCheck(tt.loc, tt.err)
		if c.Status != tt.status || !strings.Contains(c.Detail, tt.detail) || cfg.Gateway.Port != tt.port {
			t.Errorf("%s: %+v, port %d; want %s, %q, port %d", tt.name, c, cfg.Gateway.Port, tt.status, tt.detail, tt.port)
		}
	}
}
