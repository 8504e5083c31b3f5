package sandbox

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Exit codes of the helper, the shell's conventions: the command itself
// keeps its own code, since the helper becomes it.
const (
	exitUsage    = 2   // bad helper arguments (a bug in the caller)
	exitConfine  = 126 // could not confine or execute: the command did not run
	exitNotFound = 127 // the command was not found
)

// Main is the helper side of [Landlock.Wrap]:
//
//	<helper> --workspace W --tmp T -- argv…
//
// It restricts this process with Landlock and the seccomp filter of the
// package doc (no Unix sockets, no io_uring), then replaces it with argv
// (argv[0] looked up in the PATH of the environment it was given, TMPDIR
// set to T). It returns only on failure, with the exit code to use; it
// never runs the command unconfined.
func Main(args []string, stderr io.Writer) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "openclaw sandbox: "+format+"\n", a...)
		return code
	}
	sep := slices.Index(args, "--")
	if sep < 0 || sep == len(args)-1 {
		return fail(exitUsage, "usage: sandbox --workspace DIR --tmp DIR -- COMMAND [ARG…]")
	}
	fs := flag.NewFlagSet("sandbox", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workspace := fs.String("workspace", "", "the command's workspace (read, write, execute)")
	tmp := fs.String("tmp", "", "the command's private tmp dir (read, write; TMPDIR)")
	if err := fs.Parse(args[:sep]); err != nil {
		return exitUsage
	}
	if fs.NArg() != 0 {
		return fail(exitUsage, "unexpected arguments before --: %q", fs.Args())
	}
	if !filepath.IsAbs(*workspace) || !filepath.IsAbs(*tmp) {
		return fail(exitUsage, "--workspace and --tmp must be absolute paths (got %q, %q)", *workspace, *tmp)
	}
	argv := args[sep+1:]

	if fi, err := os.Stat(*workspace); err != nil || !fi.IsDir() {
		return fail(exitConfine, "workspace %s is not a directory: the command did not run", *workspace)
	}
	if err := os.MkdirAll(*tmp, 0o700); err != nil {
		return fail(exitConfine, "create the private tmp dir: %v; the command did not run", err)
	}
	path, err := lookPath(argv[0])
	if err != nil {
		return fail(exitNotFound, "%s: command not found (PATH=%s)", argv[0], os.Getenv("PATH"))
	}
	if err := restrict(*workspace, *tmp); err != nil {
		return fail(exitConfine, "cannot confine the command, so it did not run: %v", err)
	}
	// The seccomp filter is per thread: install it on the thread that
	// will execve, and keep this goroutine there.
	runtime.LockOSThread()
	if err := installFilter(); err != nil && !errors.Is(err, errNoFilter) {
		return fail(exitConfine, "cannot confine the command, so it did not run: %v", err)
	}
	env := setEnv(os.Environ(), "TMPDIR", *tmp)
	err = syscall.Exec(path, argv, env)
	return fail(exitConfine, "run %s: %v", argv[0], err)
}

// lookPath finds name like a shell would, but never in the current dir by
// an implicit "." or empty PATH entry.
func lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			return "", err
		}
		return name, nil
	}
	p, err := osexec.LookPath(name)
	if errors.Is(err, osexec.ErrDot) {
		return "", err
	}
	return p, err
}

// restrict applies the allow list of the package doc to this process and
// everything it will start.
func restrict(workspace, tmp string) error {
	abi, why := detect()
	if abi == 0 {
		// The gateway only wraps commands when Landlock is there; a helper
		// that finds none fails closed.
		return errors.New(why)
	}
	presets := []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6,
		landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}
	preset := presets[min(abi, len(presets))-1]
	// Files and IPC scopes; network is left alone on purpose (package doc).
	cfg := landlock.Config{HandledAccessFS: preset.HandledAccessFS, Scoped: preset.Scoped}

	// Everything in the workspace and tmp but device nodes: a command
	// running as root could otherwise mknod the disk and read it raw.
	rw := preset.HandledAccessFS &^ (ll.AccessFSMakeChar | ll.AccessFSMakeBlock)
	var system []string
	for _, d := range systemDirs {
		if _, err := os.Stat(d); err == nil {
			system = append(system, d)
		}
	}
	rules := []landlock.Rule{
		landlock.PathAccess(rw, workspace, tmp),
		landlock.RWFiles("/dev/null"),
		landlock.RODirs(system...),
		landlock.ROFiles("/dev/urandom", "/dev/zero").IgnoreIfMissing(),
	}
	files, dirs := etcRules("/")
	if len(files) > 0 {
		rules = append(rules, landlock.PathAccess(ll.AccessFSReadFile, files...))
	}
	if len(dirs) > 0 {
		rules = append(rules, landlock.PathAccess(ll.AccessFSReadFile|ll.AccessFSReadDir, dirs...))
	}
	return cfg.Restrict(rules...)
}

// setEnv returns env with key set to value (once).
func setEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}
