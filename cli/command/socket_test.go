package command

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/config"
)

func TestFindSocket(t *testing.T) {
	userSock := "/home/ann/.openclaw-edge/gateway.sock"
	openclawSock := "/home/ann/.openclaw/gateway.sock" // a real OpenClaw's: never ours
	for _, tc := range []struct {
		name     string
		stateDir string // --state-dir
		env      map[string]string
		sockets  []string // the sockets that exist
		want     string
	}{
		{"env names the socket", "/z", map[string]string{"OPENCLAW_SOCKET": "/x/gw.sock", "OPENCLAW_STATE_DIR": "/y"}, []string{systemSocket}, "/x/gw.sock"},
		{"--state-dir names the state dir", "/z", map[string]string{"OPENCLAW_STATE_DIR": "/y"}, []string{userSock, systemSocket}, "/z/gateway.sock"},
		{"env names the state dir", "", map[string]string{"OPENCLAW_STATE_DIR": "/y"}, []string{userSock, systemSocket}, "/y/gateway.sock"},
		{"the user's gateway first", "", nil, []string{userSock, systemSocket}, userSock},
		{"then the systemd service's", "", nil, []string{systemSocket}, systemSocket},
		{"none: the user default", "", nil, nil, userSock},
		{"OpenClaw's socket is not ours", "", nil, []string{openclawSock}, userSock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := socketFinder{
				getenv:   func(k string) string { return tc.env[k] },
				isSocket: func(p string) bool { return strings.Contains(strings.Join(tc.sockets, "\x00")+"\x00", p+"\x00") },
				home:     func() (string, error) { return "/home/ann", nil },
			}
			if got := f.find(tc.stateDir); got != tc.want {
				t.Errorf("find() = %q, want %q", got, tc.want)
			}
		})
	}
}

// listenShort listens on a Unix socket in a short temp dir (paths are
// limited to about 100 bytes).
func listenShort(t *testing.T) (string, net.Listener) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ocs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "gw.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return sock, ln
}

// TestSocketOwner uses real sockets chowned to other uids (the tests run as
// root where this matters; elsewhere chown fails and the test skips).
func TestSocketOwner(t *testing.T) {
	const impostor, service = 4243, 4244
	sock, _ := listenShort(t)
	me := os.Getuid()
	for _, tc := range []struct {
		name  string
		owner int
		err   string
	}{
		{"mine", me, ""},
		{"root's", 0, ""},
		{"the openclaw service's", service, ""},
		{"an impostor's", impostor, "socket " + sock + " is owned by uid 4243, not you or the openclaw service; refusing to talk to it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.Chown(sock, tc.owner, -1); err != nil {
				t.Skipf("cannot chown the socket to uid %d (not root?): %v", tc.owner, err)
			}
			c := ownerCheck{uid: me, serviceUID: func() (int, bool) { return service, true }, owner: socketOwner}
			err := c.check(sock)
			if tc.err == "" && err != nil {
				t.Fatalf("check: %v, want it accepted", err)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("check: %v, want %q", err, tc.err)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		c := ownerCheck{uid: me, serviceUID: func() (int, bool) { return 0, false }, owner: socketOwner}
		if err := c.check(filepath.Join(t.TempDir(), "none.sock")); err != nil {
			t.Fatalf("a missing socket is the gateway being down, not an impostor: %v", err)
		}
	})
}

// TestImpostorRefused runs the CLI against a socket owned by another uid:
// it must not send anything, and exits 1 with the reason.
func TestImpostorRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("chown to another uid needs root")
	}
	sock, ln := listenShort(t)
	if err := os.Chown(sock, 4243, -1); err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	for _, args := range [][]string{{"status"}, {"doctor"}, {"message", "send", "secret"}} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"--socket", sock}, args...), strings.NewReader(""), &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), "owned by uid 4243") {
			t.Errorf("%v: exit %d, stderr %q; want 1 and the impostor refused", args, code, stderr.String())
		}
	}
	// version never talks to the gateway, so an impostor does not matter.
	var out bytes.Buffer
	if code := run(context.Background(), []string{"--socket", sock, "version"}, strings.NewReader(""), &out, &out); code != 0 {
		t.Errorf("version: exit %d: %s", code, out.String())
	}
	select {
	case <-accepted:
		t.Error("the CLI connected to the impostor's socket")
	default:
	}
}

func TestStatusChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   *api.Status
		want string
	}{
		{"healthy", &api.Status{Version: "1.0", Model: "openai/gpt-4o-mini", Sandbox: "landlock ABI 7", SandboxActive: true},
			"ok exec sandbox: landlock ABI 7\nok default model: openai/gpt-4o-mini\n"},
		{"no sandbox, no model", &api.Status{Version: "1.0", Sandbox: "off: this kernel has no Landlock — exec runs under policy only"},
			"warn exec sandbox: off: this kernel has no Landlock — exec runs under policy only\nwarn default model: no default model\n"},
		{"local runner found", &api.Status{Version: "1.0", Model: "local/qwen3-1.7b", Sandbox: "landlock ABI 7", SandboxActive: true, LocalRunner: "/usr/bin/openclaw-runner"},
			"ok exec sandbox: landlock ABI 7\nok default model: local/qwen3-1.7b\nok local runner: /usr/bin/openclaw-runner\n"},
		{"no local runner", &api.Status{Version: "1.0", Model: "local/qwen3-1.7b", Sandbox: "landlock ABI 7", SandboxActive: true, LocalRunnerError: "openclaw-runner not found"},
			"ok exec sandbox: landlock ABI 7\nok default model: local/qwen3-1.7b\nwarn local runner: openclaw-runner not found\n"},
		{"older gateway", &api.Status{Version: "0.9", Model: "m/x"},
			"warn exec sandbox: the gateway does not report a sandbox (an older gateway?): exec runs under policy only\nok default model: m/x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			for _, c := range statusChecks(tc.st) {
				b.WriteString(c.Status + " " + c.Name + ": " + c.Detail + "\n")
				if c.Status != api.DoctorOK && c.Fix == "" {
					t.Errorf("%s: no fix", c.Name)
				}
			}
			if b.String() != tc.want {
				t.Errorf("checks:\n%s\nwant:\n%s", b.String(), tc.want)
			}
		})
	}
}

// TestDoctor runs `openclaw doctor` against the fake gateway: the
// gateway's report under the CLI's own gateway check, the status-based
// checks of an older gateway, and a gateway that is down.
func TestDoctor(t *testing.T) {
	g, err := startFakeGateway()
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	doctor := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"--socket", g.socket, "doctor"}, args...), strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}

	// An older gateway: no /v1/doctor.
	code, out, errOut := doctor()
	if code != 0 || !strings.Contains(out, "OK      gateway ") || !strings.Contains(out, "openclaw-gateway 0.1.0-test answers at "+g.socket) ||
		!strings.Contains(out, "WARN    exec sandbox") || !strings.Contains(out, "        fix: update the gateway") {
		t.Errorf("older gateway: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	report := &api.DoctorReport{OK: true, Checks: []api.DoctorCheck{
		{Name: "state dir", Status: api.DoctorOK, Detail: "/var/lib/openclaw (mode 0700)"},
		{Name: "clock", Status: api.DoctorWarn, Detail: "clock not synchronized", Fix: "the box has no RTC: connect it to the network once"},
	}}
	g.setDoctor(report)
	code, out, errOut = doctor()
	want := "STATUS  NAME       DETAIL\n" +
		"OK      gateway    openclaw-gateway 0.1.0-test answers at " + g.socket + "\n" +
		"OK      state dir  /var/lib/openclaw (mode 0700)\n" +
		"WARN    clock      clock not synchronized\n" +
		"        fix: the box has no RTC: connect it to the network once\n"
	if code != 0 || out != want {
		t.Errorf("warnings: exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", code, out, want, errOut)
	}

	report = &api.DoctorReport{Checks: append(report.Checks, api.DoctorCheck{Name: "channel whatsapp", Status: api.DoctorFail, Detail: "not-linked", Fix: "openclaw channels login whatsapp"})}
	g.setDoctor(report)
	code, out, errOut = doctor("--json")
	var rep api.DoctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if code != 1 || rep.OK || len(rep.Checks) != 4 || rep.Checks[0].Name != "gateway" || rep.Checks[3].Fix != "openclaw channels login whatsapp" ||
		!strings.Contains(errOut, "1 check(s) failed") {
		t.Errorf("a failure: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	// Down: the report of what was checked here (doctor_test.go), its
	// gateway check failing.
	doctorEnv(t)
	var stdout, stderr bytes.Buffer
	code = run(context.Background(), []string{"--socket", filepath.Join(g.dir, "down.sock"), "doctor", "--json"}, strings.NewReader(""), &stdout, &stderr)
	rep = api.DoctorReport{}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || code != 1 || rep.OK || rep.Checks[0].Name != "gateway" || rep.Checks[0].Status != api.DoctorFail {
		t.Errorf("gateway down --json: exit %d (%v)\n%s", code, err, stdout.String())
	}
	stdout.Reset()
	code = run(context.Background(), []string{"--socket", filepath.Join(g.dir, "down.sock"), "doctor"}, strings.NewReader(""), &stdout, &stderr)
	if code != 1 || !strings.Contains(stdout.String(), "FAIL    gateway ") || !strings.Contains(stdout.String(), " not running: nothing answers at ") {
		t.Errorf("gateway down: exit %d\n%s", code, stdout.String())
	}
}

// The client's fallback socket is in the gateway's default state dir.
func TestDefaultSocketInStateDir(t *testing.T) {
	t.Setenv("OPENCLAW_SOCKET", "")
	t.Setenv("OPENCLAW_STATE_DIR", "")
	if got := filepath.Base(filepath.Dir(client.DefaultSocket())); got != config.DefaultStateDirName {
		t.Errorf("client.DefaultSocket() is in %q; want the default state dir %q", got, config.DefaultStateDirName)
	}
}

// TestStatusEscapesRunnerText: what a runner build printed (its stderr's
// last line, which a model file's metadata can fill) reaches the terminal
// with its control characters escaped.
func TestStatusEscapesRunnerText(t *testing.T) {
	var out strings.Builder
	a := &app{stdout: &out, stderr: io.Discard, now: time.Now}
	evil := "died\x1b]0;pwned\a\x1b[2J"
	a.printStatus(&api.Status{Version: "1.0", LocalRunner: "/usr/bin/openclaw-runner", LocalRunnerVariant: "x86-64\x1b[31m",
		CPUFeatures: []string{"avx2"}, BestVariant: "x86-64-v3",
		RunnerBuilds: []api.RunnerBuild{{Path: "/usr/bin/openclaw-runner-x86-64-v3", State: "unusable", Why: evil}},
		Runners:      []api.Runner{{Model: "/m.gguf\x1b[1A", Variant: "v\x07"}}})
	if strings.ContainsAny(out.String(), "\x1b\a\x07") {
		t.Fatalf("control characters reach the terminal:\n%q", out.String())
	}
	for _, want := range []string{"runner build", "unusable", "this CPU can run x86-64-v3", "cpu"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}
