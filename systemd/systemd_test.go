package systemd

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnitVerifies runs `systemd-analyze verify` on the unit as install
// writes it. verify needs ExecStart's binary to exist and be executable, so
// it points at this test's own executable; it exits 0 even for unknown keys
// or unparsable system call names, so any output fails the test too.
func TestUnitVerifies(t *testing.T) {
	analyze := needTool(t, "systemd-analyze")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	u, err := Unit(exe)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, UnitName)
	if err := os.WriteFile(path, u, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify %s: %v\n%s", path, err, out)
	}

	// The control: verify does catch a bad line (a unit it would reject).
	bad := bytes.Replace(u, []byte("ExecStart="+exe), []byte("ExecStart="+filepath.Join(dir, "missing")), 1)
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(analyze, "verify", path).CombinedOutput(); err == nil {
		t.Fatalf("systemd-analyze verify accepted a missing binary:\n%s", out)
	}
}

// TestUnitExposure keeps `systemd-analyze security` (offline, the unit
// file alone) at "OK" or better: exposure ≤ 2.0 of 10. Its --threshold is
// in tenths.
func TestUnitExposure(t *testing.T) {
	analyze := needTool(t, "systemd-analyze")
	path := filepath.Join(t.TempDir(), UnitName)
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "security", "--offline=yes", "--threshold=20", "--no-pager", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: exposure above 2.0 (%v):\n%s", err, out)
	}
	t.Log(lastLine(string(out)))
}

// TestUnitLines pins what no systemd tool checks: the notify protocol, the
// liveness-gated watchdog, and a filter that keeps Landlock (no systemd
// group names the landlock_* calls; without them the exec sandbox is off).
func TestUnitLines(t *testing.T) {
	for _, want := range []string{
		"Type=notify", "NotifyAccess=main", "WatchdogSec=", "User=" + User, "StateDirectory=openclaw", "RuntimeDirectory=openclaw",
		"--socket ${RUNTIME_DIRECTORY}/gateway.sock", "--state-dir ${STATE_DIRECTORY}",
		"ProtectSystem=strict", "ProtectHome=yes", "NoNewPrivileges=yes", "PrivateTmp=yes",
		"RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK",
		"SystemCallFilter=@system-service landlock_create_ruleset landlock_add_rule landlock_restrict_self",
		"SystemCallErrorNumber=EPERM",
	} {
		if !strings.Contains(unit, "\n"+want) && !strings.Contains(unit, " "+want) {
			t.Errorf("the unit lacks %q", want)
		}
	}
	if strings.Contains(unit, "\nMemoryDenyWriteExecute=yes") || strings.Contains(unit, "\nPrivateUsers=yes") {
		t.Error("MemoryDenyWriteExecute/PrivateUsers break exec commands / peer credentials (systemd/README.md)")
	}
}

// TestSysusers creates the service user in an empty root with the real
// systemd-sysusers.
func TestSysusers(t *testing.T) {
	sysusersBin := needTool(t, "systemd-sysusers")
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), SysusersName)
	if err := os.WriteFile(conf, Sysusers(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(sysusersBin, "--root="+root, conf).CombinedOutput(); err != nil {
		t.Fatalf("systemd-sysusers: %v\n%s", err, out)
	}
	passwd, err := os.ReadFile(filepath.Join(root, "etc", "passwd"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Split(strings.TrimSpace(string(passwd)), ":")
	if len(f) != 7 || f[0] != User || f[5] != StateDir || !strings.HasSuffix(f[6], "nologin") {
		t.Fatalf("passwd entry %q: want user %s, home %s, no login shell", passwd, User, StateDir)
	}
}

func TestUnitBinary(t *testing.T) {
	u, err := Unit("/usr/local/bin/openclaw-gateway")
	if err != nil || !strings.Contains(string(u), "\nExecStart=/usr/local/bin/openclaw-gateway run ") || strings.Contains(string(u), "ExecStart="+DefaultBinary) {
		t.Fatalf("Unit: %v\n%s", err, u)
	}
	for _, bad := range []string{"openclaw-gateway", "/opt/my apps/openclaw-gateway", "/opt/$HOME/gw", "/opt/100%/gw", "/opt/a\nExecStartPre=/bin/rm"} {
		if _, err := Unit(bad); err == nil {
			t.Errorf("Unit(%q) accepted", bad)
		}
	}
}

// TestPlistWellFormed: the plist is XML (no plutil here) with every value
// escaped, whatever the paths hold.
func TestPlistWellFormed(t *testing.T) {
	p, err := Plist(Launchd{Binary: "/Users/a&b/bin/openclaw-gateway", StateDir: "/Users/a&b/.openclaw <x>"})
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(p))
	dec.Strict = true
	var texts []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v\n%s", err, p)
		}
		if cd, ok := tok.(xml.CharData); ok && strings.TrimSpace(string(cd)) != "" {
			texts = append(texts, string(cd))
		}
	}
	want := []string{"Label", LaunchdLabel, "ProgramArguments", "/Users/a&b/bin/openclaw-gateway", "run", "--state-dir", "/Users/a&b/.openclaw <x>"}
	if len(texts) < len(want) || strings.Join(texts[:len(want)], "|") != strings.Join(want, "|") {
		t.Fatalf("values %q, want them to begin with %q", texts, want)
	}
	if _, err := Plist(Launchd{Binary: "bin/openclaw-gateway", StateDir: "/x"}); err == nil {
		t.Error("a relative binary was accepted")
	}
}

func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (Debian: apt-get install systemd): %v", name, err)
	}
	return p
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
