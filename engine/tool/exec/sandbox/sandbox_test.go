package sandbox

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// helperEnv makes the test binary act as the sandbox helper, the way the
// gateway binary's hidden `sandbox` subcommand does.
const helperEnv = "OPENCLAW_SANDBOX_TEST_HELPER"

// probeEnv makes a copy of the test binary, run inside the sandbox, try
// the local IPC calls the seccomp filter governs and print one line each.
const probeEnv = "OPENCLAW_SANDBOX_TEST_PROBE"

func TestMain(m *testing.M) {
	// The probe first: the helper execs it with the helper's environment.
	if mode := os.Getenv(probeEnv); mode != "" && (len(os.Args) < 2 || os.Args[1] != "--workspace") {
		os.Exit(probe(mode))
	}
	if os.Getenv(helperEnv) == "1" {
		os.Exit(Main(os.Args[1:], os.Stderr))
	}
	os.Exit(m.Run())
}

// layout is a workspace with a fake state dir beside it, a private tmp and
// an unrelated dir, as on a box: <root>/{workspace,state,tmp}.
type layout struct{ root, ws, state, tmp, other string }

func newLayout(t *testing.T) layout {
	t.Helper()
	root := t.TempDir()
	l := layout{root: root, ws: filepath.Join(root, "workspace"), state: filepath.Join(root, "state"),
		tmp: filepath.Join(root, "tmp"), other: t.TempDir()}
	for _, d := range []string{l.ws, l.state} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(l.state, "state.db"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	return l
}

func activeSandbox(t *testing.T, l layout) *Landlock {
	t.Helper()
	sb := New(Config{Helper: []string{os.Args[0]}, Protected: []string{l.state}})
	if ok, detail := sb.Status(); !ok {
		t.Skipf("the kernel lacks Landlock, nothing to confine with: %s", detail)
	}
	return sb
}

// sh runs script under the sandbox and returns its combined output and
// exit code.
func sh(t *testing.T, sb *Landlock, l layout, script string) (string, int) {
	t.Helper()
	argv, err := sb.Wrap([]string{"sh", "-c", script}, l.ws, l.tmp)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = l.ws
	cmd.Env = append(os.Environ(), helperEnv+"=1", "WS="+l.ws, "STATE="+l.state, "OTHER="+l.other, "TMPD="+l.tmp)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// TestLandlockConfines runs real commands under the real kernel sandbox.
func TestLandlockConfines(t *testing.T) {
	l := newLayout(t)
	sb := activeSandbox(t, l)
	home, _ := os.UserHomeDir()
	if home == "" || within(clean(home), clean(l.ws)) {
		home = "/root"
	}
	homeFile := filepath.Join(home, "openclaw-sandbox-test-must-not-exist")
	t.Cleanup(func() { os.Remove(homeFile) })
	for _, tc := range []struct {
		name, script string
		ok           bool
	}{
		{"write in the workspace", `mkdir -p "$WS/d" && echo hi > "$WS/d/f" && mv "$WS/d/f" "$WS/g" && cat "$WS/g"`, true},
		{"run /bin/sh -c", `/bin/sh -c 'exit 0'`, true},
		{"private tmp is TMPDIR and writable", `test "$TMPDIR" = "$TMPD" && echo x > "$TMPDIR/f" && cat "$TMPDIR/f"`, true},
		{"write /dev/null", `echo x > /dev/null`, true},
		{"read /dev/urandom", `head -c 8 /dev/urandom > "$WS/rnd"`, true},
		{"read /etc/hostname", `test ! -e /etc/hostname || cat /etc/hostname`, true},
		{"read /proc/self", `read -r line < /proc/self/status && echo "$line"`, true},
		{"write outside the workspace", `echo hi > "$OTHER/f"`, false},
		{"write /tmp", `echo hi > /tmp/openclaw-sandbox-test-$$`, false},
		{"write $HOME", `echo hi > ` + homeFile, false},
		{"read the state dir", `cat "$STATE/state.db"`, false},
		{"list the state dir", `ls "$STATE"`, false},
		{"read the parent of the workspace", `ls "$WS/.."`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := sh(t, sb, l, tc.script)
			if tc.ok && code != 0 {
				t.Fatalf("exit %d, want success; output:\n%s", code, out)
			}
			if !tc.ok && code == 0 {
				t.Fatalf("succeeded, want denied; output:\n%s", out)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(l.other, "f")); err == nil {
		t.Error("a file was written outside the workspace")
	}
	if _, err := os.Stat(homeFile); err == nil {
		t.Error("a file was written in $HOME")
	}
}

func TestLandlockKeepsExitCodeAndArgs(t *testing.T) {
	l := newLayout(t)
	sb := activeSandbox(t, l)
	out, code := sh(t, sb, l, `printf '%s|' "$0" "$1"; exit 3`)
	if code != 3 {
		t.Fatalf("exit %d, want 3 (output %q)", code, out)
	}
	argv, err := sb.Wrap([]string{"printf", "%s|", "a b", "--", "-x"}, l.ws, l.tmp)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	got, err := cmd.Output()
	if err != nil || string(got) != "a b|--|-x|" {
		t.Fatalf("got %q, %v; want the arguments passed through untouched", got, err)
	}
}

func TestHelperFailsClosed(t *testing.T) {
	ws := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no separator", []string{"--workspace", ws, "--tmp", ws, "true"}, exitUsage, "usage"},
		{"no command", []string{"--workspace", ws, "--tmp", ws, "--"}, exitUsage, "usage"},
		{"relative workspace", []string{"--workspace", "ws", "--tmp", ws, "--", "true"}, exitUsage, "absolute"},
		{"missing workspace", []string{"--workspace", filepath.Join(ws, "nope"), "--tmp", ws, "--", "true"}, exitConfine, "not a directory"},
		{"stray argument", []string{"--workspace", ws, "stray", "--", "true"}, exitUsage, "unexpected"},
		{"unknown command", []string{"--workspace", ws, "--tmp", ws, "--", "openclaw-no-such-command"}, exitNotFound, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := Main(tc.args, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.msg) {
				t.Fatalf("Main = %d, %q; want %d and a message with %q", code, stderr.String(), tc.code, tc.msg)
			}
		})
	}
}

func TestWrap(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "state")
	on := newWithABI(Config{Helper: []string{"/usr/bin/openclaw-gateway", "sandbox"}, Protected: []string{state}}, 7, "")
	off := newWithABI(Config{Helper: []string{"/usr/bin/openclaw-gateway", "sandbox"}}, 0, "this kernel has no Landlock")
	ws := filepath.Join(root, "ws")
	for _, tc := range []struct {
		name          string
		sb            *Landlock
		argv          []string
		workspace, tm string
		want          []string
		err           string
	}{
		{"confined", on, []string{"ls", "-l"}, ws, "/tmp/t1", []string{"/usr/bin/openclaw-gateway", "sandbox", "--workspace", ws, "--tmp", "/tmp/t1", "--", "ls", "-l"}, ""},
		{"off passes argv through", off, []string{"ls", "-l"}, "rel", "", []string{"ls", "-l"}, ""},
		{"no command", on, nil, ws, "/tmp/t1", nil, "no command"},
		{"relative workspace", on, []string{"ls"}, "ws", "/tmp/t1", nil, "absolute"},
		{"workspace contains the state dir", on, []string{"ls"}, root, "/tmp/t1", nil, "protected path"},
		{"workspace inside the state dir (the default)", on, []string{"ls"}, filepath.Join(state, "workspace"), "/tmp/t1",
			[]string{"/usr/bin/openclaw-gateway", "sandbox", "--workspace", filepath.Join(state, "workspace"), "--tmp", "/tmp/t1", "--", "ls"}, ""},
		{"tmp is the state dir", on, []string{"ls"}, ws, state, nil, "protected path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.sb.Wrap(tc.argv, tc.workspace, tc.tm)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || strings.Join(got, "\x00") != strings.Join(tc.want, "\x00") {
				t.Fatalf("Wrap = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	for _, tc := range []struct {
		sb     *Landlock
		active bool
		detail string
	}{
		{newWithABI(Config{Helper: []string{"gw", "sandbox"}}, 7, ""), true, "landlock ABI 7"},
		{newWithABI(Config{Helper: []string{"gw", "sandbox"}}, 0, "this kernel has no Landlock"), false, "off: this kernel has no Landlock — exec runs under policy only"},
		{newWithABI(Config{}, 7, ""), false, "off: no helper command configured — exec runs under policy only"},
	} {
		if active, detail := tc.sb.Status(); active != tc.active || detail != tc.detail {
			t.Errorf("Status = %v, %q; want %v, %q", active, detail, tc.active, tc.detail)
		}
	}
}

func TestExposed(t *testing.T) {
	protected := []string{"/etc/openclaw/openclaw.json", "/etc/openclaw-imap-password", "/var/lib/openclaw", "/usr/local/etc/openclaw.json", "/etc/passwd"}
	want := []string{"/usr/local/etc/openclaw.json", "/etc/passwd"}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		want = want[:1]
	}
	sb := newWithABI(Config{Helper: []string{"gw"}, Protected: protected}, 7, "")
	if got := sb.Exposed(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("Exposed = %q, want %q (a config or password file elsewhere under /etc is not readable)", got, want)
	}
}

func TestEtcRules(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"etc/ssl/certs", "etc/ssl/private", "etc/ld.so.conf.d", "etc/python3.12", "etc/ssh", "usr/share/zoneinfo", "run"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"etc/passwd", "etc/shadow", "etc/gshadow", "etc/sudoers", "etc/ssh/ssh_host_ed25519_key", "etc/ssh/ssh_config",
		"etc/ssl/private/key.pem", "etc/openclaw-secret", "usr/share/zoneinfo/UTC", "run/stub-resolv.conf"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"etc/localtime":   filepath.Join(root, "usr/share/zoneinfo/UTC"), // a file through a link: a file rule
		"etc/resolv.conf": filepath.Join(root, "run/stub-resolv.conf"),
		"etc/terminfo":    filepath.Join(root, "etc"), // a dir entry that is /etc itself: never
		"etc/hosts":       filepath.Join(root, "nowhere"),
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	files, dirs := etcRules(root)
	rel := func(ps []string) string {
		var out []string
		for _, p := range ps {
			out = append(out, strings.TrimPrefix(p, root))
		}
		return strings.Join(out, " ")
	}
	if got, want := rel(files), "/etc/resolv.conf /etc/passwd /etc/localtime /etc/ssh/ssh_config"; got != want {
		t.Errorf("files = %s, want %s", got, want)
	}
	if got, want := rel(dirs), "/etc/ld.so.conf.d /etc/ssl/certs /etc/python3.12"; got != want {
		t.Errorf("dirs = %s, want %s", got, want)
	}
}

// TestLandlockDefaultLayout: the default workspace lies inside the state dir
// (~/.openclaw/workspace); its siblings stay out of reach.
func TestLandlockDefaultLayout(t *testing.T) {
	l := newLayout(t)
	l.ws = filepath.Join(l.state, "workspace")
	if err := os.Mkdir(l.ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.state, "openclaw.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	sb := activeSandbox(t, l)
	if out, code := sh(t, sb, l, `echo hi > f && cat f`); code != 0 {
		t.Fatalf("write in the workspace: exit %d: %s", code, out)
	}
	for _, script := range []string{`cat ../state.db`, `cat "$STATE/openclaw.json"`, `echo x > ../state.db`, `ls ..`} {
		if out, code := sh(t, sb, l, script); code == 0 {
			t.Errorf("%s: succeeded, want denied (output %q)", script, out)
		}
	}
}

// TestLandlockEtc: as root too, only what programs need under /etc is
// readable; the usual tools still work.
func TestLandlockEtc(t *testing.T) {
	l := newLayout(t)
	sb := activeSandbox(t, l)
	secret := "/etc/openclaw-test-secret"
	if err := os.WriteFile(secret, []byte("hunter2"), 0o644); err != nil {
		t.Logf("cannot plant %s (%v): that case is left out", secret, err)
		secret = ""
	} else {
		t.Cleanup(func() { os.Remove(secret) })
	}
	type tc struct {
		name, script string
		ok           bool
	}
	cases := []tc{
		{"ls", `ls /usr/bin >/dev/null && ls "$WS"`, true},
		{"grep", `echo needle > "$WS/hay" && grep -q needle "$WS/hay"`, true},
		{"sh -c", `sh -c 'exit 0'`, true},
		{"date uses localtime", `date > /dev/null`, true},
		{"id reads passwd and group", `id -un && id -gn`, true},
		{"read /etc/passwd", `grep -q '^root:' /etc/passwd`, true},
		{"read /etc/shadow", `cat /etc/shadow`, false},
		{"read /etc/gshadow", `test -e /etc/gshadow && cat /etc/gshadow`, false},
		{"list /etc", `ls /etc`, false},
		{"read the TLS key dir", `ls /etc/ssl/private`, false},
	}
	if secret != "" {
		cases = append(cases, tc{"read a password file under /etc", `cat ` + secret, false})
	}
	if fi, err := os.Stat("/etc/ssl/certs"); err == nil && fi.IsDir() {
		cases = append(cases, tc{"read the TLS certificates", `ls /etc/ssl/certs > /dev/null && for f in /etc/ssl/certs/*; do test -f "$f" && { head -c 1 "$f" > /dev/null; exit $?; }; done; exit 0`, true})
	}
	if _, err := os.Stat("/etc/resolv.conf"); err == nil {
		cases = append(cases, tc{"read resolv.conf", `cat /etc/resolv.conf > /dev/null`, true})
	}
	if _, err := exec.LookPath("openssl"); err == nil {
		cases = append(cases, tc{"openssl loads its config and the trust store", `openssl version -d > /dev/null`, true})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, code := sh(t, sb, l, c.script)
			if c.ok && code != 0 {
				t.Fatalf("exit %d, want success; output:\n%s", code, out)
			}
			if !c.ok && code == 0 {
				t.Fatalf("succeeded, want denied; output:\n%s", out)
			}
			if strings.Contains(out, "hunter2") {
				t.Fatal("the secret was read")
			}
		})
	}
}
