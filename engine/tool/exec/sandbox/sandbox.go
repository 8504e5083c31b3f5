// Package sandbox confines every exec child beneath the exec approvals
// (docs/design.md §3.7, §10): policy and the owner's approvals decide *whether* a
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
//     everything there except making device nodes (a command running as
//     root could mknod the disk and read it raw);
//   - read and write: /dev/null;
//   - read and execute: /usr, /bin, /sbin, /lib, /lib64 (those that exist)
//     and /proc/self; read: /dev/urandom, /dev/zero;
//   - read: only the parts of /etc that programs need (etcReadable: the
//     loader cache, NSS and resolver files, passwd and group, localtime,
//     locale, terminfo, TLS certificates and library config, a few tools'
//     system-wide defaults), each only if it exists, a file as a file.
//     Never /etc as a whole: as root a command could otherwise read
//     /etc/shadow, gshadow, sudoers, SSH host keys, TLS private keys, a
//     config under /etc/openclaw or a password file the owner keeps there.
//     Symlinks are followed once, when the helper starts (Landlock grants
//     the inode a path ends at): a file replaced meanwhile (resolv.conf
//     rewritten by a network manager) is not readable until the next
//     command.
//
// Local IPC (the other way out of a sandbox: asking a process outside it
// to act). After Landlock, the helper installs a seccomp filter
// (seccomp_linux.go) that makes socket(AF_UNIX) fail with EACCES (and
// socketpair(AF_UNIX) for datagrams, which could be re-pointed at any
// socket), refuses io_uring (its IORING_OP_SOCKET is not seen by seccomp)
// and kills the process on a syscall of another arch or x32. So a command,
// and everything it starts, even after a double fork and long after it was
// reparented, can connect to no Unix socket: not the gateway's control
// socket (it can never answer its own approvals), not D-Bus, systemd or
// any other daemon that could start a process for it outside the sandbox.
// glibc copes: NSS falls back from nscd to the files, syslog(3) drops its
// message. Landlock's IPC scoping (ABI 6+) additionally stops it from
// signalling processes outside its domain; Landlock's ptrace rule already
// keeps it from tracing them or taking their file descriptors.
//
// Choices:
//   - The strictest ABI the kernel offers, chosen explicitly (never go-landlock's
//     best-effort mode, which silently enforces nothing when Landlock is
//     missing or when "refer" meets an ABI 1 kernel): the helper fails closed
//     when it cannot restrict itself, it never runs the command unconfined.
//   - Network access is not restricted: commands (curl, git, package
//     managers) may legitimately use the network; policy decides that.
//   - IPC scoping (ABI 6+) is on: a command cannot signal the gateway or
//     connect to abstract Unix sockets outside its domain. The seccomp
//     filter refuses every Unix socket on any ABI (before ABI 9 Landlock
//     does not mediate connecting to a pathname socket at all), so the
//     control socket's peer check is a second wall, not the only one.
//   - The seccomp filter is built for amd64 and arm64. Elsewhere the
//     sandbox is Landlock only and Status says so.
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
	"slices"
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

// Landlock is the exec.Sandbox of docs/design.md §3.7 (it implements
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
	if filterArch() == 0 {
		return true, fmt.Sprintf("landlock ABI %d (%v: commands can open Unix sockets)", l.abi, errNoFilter)
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
// list (/usr, the /etc entries, …) still lets a command read, e.g. a
// config in /usr/local/etc. The wiring warns about them.
func (l *Landlock) Exposed() []string {
	var out []string
	// The roots once: listing /etc's readable entries and resolving their
	// links is ~10 ms, and there are three protected paths.
	roots := readRoots()
	for i, r := range roots {
		roots[i] = clean(r)
	}
	for _, p := range l.protected {
		for _, r := range roots {
			if within(p, r) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// systemDirs are the read-and-execute roots; missing ones are skipped.
// /etc is not one: only the entries of etcReadable are.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/proc/self"}

// readRoots are all the paths a command may read.
func readRoots() []string {
	files, dirs := etcRules("/")
	return append(append(slices.Clone(systemDirs), dirs...), files...)
}

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
