// Package sandbox confines every exec child beneath the exec approvals
// (DESIGN.md §3.7, §10): policy and the owner's approvals decide *whether* a
// command runs; the kernel decides *what it can touch* once it runs, so a
// command that was approved, or that slipped through a policy mistake,
// still cannot read the gateway's state or write outside its workspace.
//
// How: Linux Landlock through a re-exec helper. [Landlock.Wrap] turns argv
// into `<helper…> --workspace W --tmp T -- argv…`, where the helper is the
// gateway binary's hidden `sandbox` subcommand. The helper ([Main]) is a
// fresh process that loads no config and opens no state: it restricts
// itself with Landlock, then execve(2)s argv, so the command and everything
// it starts inherit the restriction and cannot drop it. A re-exec helper,
// rather than restricting in a fork of the gateway, because Go cannot run
// code between fork and exec, and the gateway itself must stay unconfined.
//
// The rules (an allow list; everything else is denied by the kernel):
//   - read, write, execute: the workspace and the private tmp dir (TMPDIR is
//     pointed at it); renames and links between them ("refer", ABI 2+);
//   - read and write: /dev/null;
//   - read and execute: /usr, /bin, /sbin, /lib, /lib64 (those that exist),
//     /etc and /proc/self; read: /dev/urandom, /dev/zero.
//
// The state dir, the config, the CLI's key and $HOME outside the workspace
// are simply not in that list. A workspace (or tmp) that contains one of the
// protected paths given in [Config.Protected] (e.g. a workspace of "~" with
// the state dir ~/.openclaw-edge) would hand them over, so [Landlock.Wrap]
// refuses it and [Landlock.Check] lets the gateway warn at start-up. The
// default workspace, <state dir>/workspace, lies inside the state dir: that
// is fine, its siblings (state.db, openclaw.json) stay out of reach.
// /proc/self is the helper's own pid, which the command keeps; processes
// the command starts get no /proc at all. A protected path under /etc or /usr is readable: [Landlock.Check]
// reports that too.
//
// Choices:
//   - The strictest ABI the kernel offers, chosen explicitly (never go-landlock's
//     best-effort mode, which silently enforces nothing when Landlock is
//     missing or when "refer" meets an ABI 1 kernel): the helper fails closed
//     when it cannot restrict itself, it never runs the command unconfined.
//   - Network access is not restricted: commands (curl, git, package
//     managers) may legitimately use the network; policy decides that.
//   - IPC scoping (ABI 6+) is on: a command cannot signal the gateway or
//     connect to abstract Unix sockets outside its domain. From ABI 9 on,
//     connecting to pathname Unix sockets outside the allow list (the
//     gateway's control socket) is denied as well; before ABI 9 the kernel
//     does not mediate that connect, and the control socket's peer check is
//     what remains.
//   - Without Landlock (an old kernel, Landlock not enabled at boot, not
//     Linux) the sandbox degrades to policy only: Wrap returns argv
//     unchanged and Status says "off: <why> — exec runs under policy only".
//     macOS is policy only: sandbox-exec(1) is deprecated and cannot be
//     tested here, so it is not wired.
package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Config is what the sandbox needs from the wiring.
type Config struct {
	// Helper is the argv prefix that runs [Main]: the gateway binary and
	// its hidden subcommand, e.g. [os.Executable(), "sandbox"].
	Helper []string
	// Protected are paths exec children must never reach: the state dir,
	// the config file, key files. They are never in the allow list; Wrap
	// refuses a workspace or tmp dir that contains one of them.
	Protected []string
}

// Landlock is the exec.Sandbox of DESIGN.md §3.7 (it implements
// exec.Sandbox; this package does not import exec to keep the dependency
// one-way).
type Landlock struct {
	helper    []string
	protected []string
	abi       int    // 0: off
	why       string // why off
}

// New returns the sandbox for this machine: active when the kernel offers
// Landlock, policy-only otherwise.
func New(c Config) *Landlock {
	abi, why := detect()
	return newWithABI(c, abi, why)
}

func newWithABI(c Config, abi int, why string) *Landlock {
	l := &Landlock{helper: append([]string(nil), c.Helper...), abi: abi, why: why}
	for _, p := range c.Protected {
		if p != "" {
			l.protected = append(l.protected, clean(p))
		}
	}
	if l.abi > 0 && len(l.helper) == 0 {
		l.abi, l.why = 0, "no helper command configured"
	}
	return l
}

// detect returns the kernel's Landlock ABI version, or 0 and why not.
func detect() (int, string) {
	if runtime.GOOS != "linux" {
		if runtime.GOOS == "darwin" {
			return 0, "macOS has no Landlock (sandbox-exec is not wired)"
		}
		return 0, runtime.GOOS + " has no Landlock"
	}
	v, err := ll.LandlockGetABIVersion()
	if errors.Is(err, syscall.EPERM) {
		// Not the kernel: a seccomp filter refuses the call (systemd's
		// SystemCallFilter=@system-service names no landlock_* call).
		return 0, "the landlock_* system calls are refused by a seccomp filter (systemd: add landlock_create_ruleset landlock_add_rule landlock_restrict_self to SystemCallFilter=)"
	}
	if err != nil || v < 1 {
		return 0, "this kernel has no Landlock (Linux 5.13+ with landlock in the lsm= boot list)"
	}
	return v, ""
}

// Status reports whether the kernel sandbox is active, with a short detail
// for `openclaw status` and `doctor`.
func (l *Landlock) Status() (bool, string) {
	if l.abi == 0 {
		return false, "off: " + l.why + " — exec runs under policy only"
	}
	return true, fmt.Sprintf("landlock ABI %d", l.abi)
}

// Wrap returns the argv that runs argv confined to workspace and tmp. When
// the sandbox is off it returns argv unchanged (policy only).
func (l *Landlock) Wrap(argv []string, workspace, tmp string) ([]string, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("sandbox: no command to run")
	}
	if l.abi == 0 {
		return append([]string(nil), argv...), nil
	}
	if !filepath.IsAbs(workspace) || !filepath.IsAbs(tmp) {
		return nil, fmt.Errorf("sandbox: workspace %q and tmp dir %q must be absolute paths", workspace, tmp)
	}
	if err := l.Check(workspace, tmp); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(l.helper)+5+len(argv))
	out = append(out, l.helper...)
	out = append(out, "--workspace", filepath.Clean(workspace), "--tmp", filepath.Clean(tmp), "--")
	return append(out, argv...), nil
}

// Check returns an error when one of the writable dirs (a workspace, the
// tmp dir) is or contains a protected path: the command could then read
// and change the gateway's state. A workspace *inside* the state dir (the
// default, <state dir>/workspace) is fine: its siblings stay out of reach.
func (l *Landlock) Check(writable ...string) error {
	for _, w := range writable {
		if w == "" {
			continue
		}
		cw := clean(w)
		for _, p := range l.protected {
			if within(p, cw) {
				return fmt.Errorf("sandbox: %s contains the protected path %s (the gateway's state, config or home): exec commands could read and change it; use a workspace that does not contain it", w, p)
			}
		}
	}
	return nil
}

// Exposed returns the protected paths that the read-only part of the allow
// list (/etc, /usr, …) still lets a command read, e.g. a config in
// /etc/openclaw. The wiring warns about them.
func (l *Landlock) Exposed() []string {
	var out []string
	for _, p := range l.protected {
		for _, r := range readRoots() {
			if within(p, clean(r)) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// systemDirs are the read-and-execute roots; missing ones are skipped.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/proc/self"}

func readRoots() []string { return systemDirs }

// clean makes p absolute and resolves its symlinks as far as it exists, so
// /tmp/x and /private/tmp/x (or a symlinked home) compare equal.
func clean(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	// Resolve the longest existing parent.
	dir, rest := filepath.Dir(p), filepath.Base(p)
	for dir != filepath.Dir(dir) {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		dir, rest = filepath.Dir(dir), filepath.Join(filepath.Base(dir), rest)
	}
	return p
}

// within reports whether p is root or below it.
func within(p, root string) bool {
	if p == root {
		return true
	}
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
