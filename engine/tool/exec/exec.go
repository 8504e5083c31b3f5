// Package exec holds the runtime tools of group:runtime (DESIGN.md §3.7):
// exec runs a shell command in the agent's workspace, in the foreground or
// the background, after the approval check; process manages the background
// ones.
//
// Approval order, as OpenClaw's: a SAFE command runs; a sandboxed session
// with security "sandbox" runs; ask "off" runs; ask "elevated" asks only for
// elevated calls; otherwise the owner is asked through env.Approver and only
// "allow-once" runs the command, once. No approver, a denial, a timeout or
// an error all mean the command is not run.
//
// Choices where the spec was silent:
//   - SAFE is deliberately narrow: a single simple command made only of
//     letters, digits, spaces and - _ . / , : = @ % + (no quoting, globbing,
//     expansion, redirection or chaining), whose argv[0] is a bare name in
//     SafeBins (a path like ./ls is not), with no argument that is absolute
//     or contains ".." (so safe bins stay in the workspace), no find-style
//     -exec/-delete, no sort --compress-program, and no env overrides (PATH
//     or LD_PRELOAD would change what a "safe" name runs). A symlink inside
//     the workspace that points out can still be read by a safe bin; lock
//     the workspace down if that matters.
//   - Unknown Ask or Security values fall back to the strictest ("always",
//     "full"); Config.Validate reports them for config checking.
//   - Commands run as `Shell -c command` in their own process group with
//     stdin from /dev/null; a timeout or a cancelled turn kills the whole
//     group with SIGKILL. A command killed by signal N reports exit code
//     128+N, as shells do.
//   - Output is stdout and stderr interleaved in one pipe, capped at
//     MaxOutput bytes by keeping the head and the tail.
//   - Background processes belong to the session that started them: other
//     sessions cannot see, read, write or kill them. The table keeps the 64
//     most recent; finished ones are dropped first. Processes.Close kills
//     them all at gateway shutdown; the process tool is an io.Closer that
//     does the same for callers that only hold the []tool.Tool.
package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/tool"
)

// Ask modes.
const (
	AskOff      = "off"
	AskElevated = "elevated"
	AskAlways   = "always"
)

// Security modes.
const (
	SecurityFull    = "full"
	SecuritySandbox = "sandbox"
)

// DefaultSafeBins are auto-approved command names.
var DefaultSafeBins = []string{
	"ls", "cat", "head", "tail", "wc", "echo", "pwd", "date", "whoami", "uname",
	"grep", "sort", "uniq", "cut", "tr", "true", "false",
}

// Config configures exec and process.
type Config struct {
	Ask      string // "off" | "elevated" | "always" (default)
	Security string // "full" (default) | "sandbox"
	// SafeBins are command names run without approval; nil means
	// DefaultSafeBins, an empty non-nil slice means none.
	SafeBins []string
	// Timeout bounds a foreground command (default 120s); the model may
	// ask for another with the timeout argument, up to an hour.
	Timeout time.Duration
	// ApprovalTimeout bounds the wait for the owner (default 120s).
	ApprovalTimeout time.Duration
	// MaxOutput caps the bytes of output kept per foreground command
	// (default 256 KiB).
	MaxOutput int
	// Shell runs commands as `Shell -c command` (default /bin/sh).
	Shell string
	// Sandbox confines every exec child; nil runs them under policy only.
	Sandbox Sandbox
	// Allowlist holds the commands the owner approved for good; nil means
	// none, and "always" answers run once.
	Allowlist Allowlist
	// Processes is the background process table. Nil gives the tools a
	// table of their own; close it through the process tool, which is an
	// io.Closer.
	Processes *Processes
}

const (
	defaultTimeout         = 120 * time.Second
	defaultApprovalTimeout = 120 * time.Second
	defaultMaxOutput       = 256 << 10
	maxTimeout             = time.Hour
	waitDelay              = 2 * time.Second
)

// Validate reports config values that are not understood.
func (c Config) Validate() error {
	var errs []error
	switch c.Ask {
	case "", AskOff, AskElevated, AskAlways:
	default:
		errs = append(errs, fmt.Errorf("tools.exec.ask: %q is not one of off, elevated, always", c.Ask))
	}
	switch c.Security {
	case "", SecurityFull, SecuritySandbox:
	default:
		errs = append(errs, fmt.Errorf("tools.exec.security: %q is not one of full, sandbox", c.Security))
	}
	for _, b := range c.SafeBins {
		if b == "" || strings.ContainsAny(b, "/ \t") {
			errs = append(errs, fmt.Errorf("tools.exec.safeBins: %q must be a bare command name", b))
		}
	}
	if c.Timeout < 0 || c.ApprovalTimeout < 0 || c.MaxOutput < 0 {
		errs = append(errs, errors.New("tools.exec: timeouts and maxOutput must not be negative"))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	switch c.Ask {
	case AskOff, AskElevated, AskAlways:
	default:
		c.Ask = AskAlways
	}
	if c.Security != SecuritySandbox {
		c.Security = SecurityFull
	}
	if c.SafeBins == nil {
		c.SafeBins = DefaultSafeBins
	}
	if c.Timeout <= 0 {
		c.Timeout = defaultTimeout
	}
	if c.ApprovalTimeout <= 0 {
		c.ApprovalTimeout = defaultApprovalTimeout
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = defaultMaxOutput
	}
	if c.Shell == "" {
		c.Shell = "/bin/sh"
	}
	if c.Processes == nil {
		c.Processes = NewProcesses()
	}
	return c
}

// Tools returns exec and process, sharing cfg.Processes.
func Tools(cfg Config) []tool.Tool {
	cfg = cfg.withDefaults()
	return []tool.Tool{&execTool{cfg: cfg}, &processTool{procs: cfg.Processes}}
}

var (
	_ tool.Tool = (*execTool)(nil)
	_ tool.Tool = (*processTool)(nil)
)

type execTool struct{ cfg Config }

func (t *execTool) Spec() engine.ToolSpec {
	return engine.ToolSpec{
		Name: "exec",
		Description: "Run a shell command in the workspace and return its output and exit code. Commands other than simple " +
			"safe ones (ls, cat, grep…) may need the owner's approval. Set background=true for long-running commands and " +
			"follow them with the process tool.",
		Parameters: tool.MustSchema(`{"type":"object","properties":{` +
			`"command":{"type":"string","description":"Shell command line"},` +
			`"workdir":{"type":"string","description":"Working directory inside the workspace (default: the workspace)"},` +
			`"timeout":{"type":"integer","description":"Seconds before the command is killed (default 120)"},` +
			`"background":{"type":"boolean","description":"Start it and return a session id at once"},` +
			`"elevated":{"type":"boolean","description":"The command needs elevated trust"},` +
			`"env":{"type":"object","additionalProperties":{"type":"string"},"description":"Extra environment variables"}},` +
			`"required":["command"]}`),
	}
}

type execArgs struct {
	Command    string            `json:"command"`
	Workdir    string            `json:"workdir"`
	Timeout    tool.Int          `json:"timeout"`
	Background tool.Bool         `json:"background"`
	Elevated   tool.Bool         `json:"elevated"`
	Env        map[string]string `json:"env"`
}

func (t *execTool) Run(ctx context.Context, env tool.Env, raw json.RawMessage) engine.ToolResult {
	var a execArgs
	if err := tool.DecodeArgs(raw, &a); err != nil {
		return engine.ErrorResult("exec: %v", err)
	}
	command := strings.TrimSpace(a.Command)
	if command == "" {
		return engine.ErrorResult("exec: command is required")
	}
	if a.Timeout < 0 {
		return engine.ErrorResult("exec: timeout must be positive")
	}
	for k, v := range a.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return engine.ErrorResult("exec: environment variable %q is not valid", k)
		}
	}
	cwd, err := workdir(env, a.Workdir)
	if err != nil {
		return engine.ErrorResult("exec: %v; nothing was run", err)
	}
	if reason, ok := t.approve(ctx, env, command, cwd, bool(a.Elevated), len(a.Env) > 0); !ok {
		return engine.ErrorResult("exec denied: `%s` was not approved (%s); nothing was run", command, reason)
	}
	timeout := t.cfg.Timeout
	if a.Timeout > 0 {
		timeout = min(time.Duration(a.Timeout)*time.Second, maxTimeout)
	}
	spec := runSpec{shell: t.cfg.Shell, command: command, cwd: cwd, env: envList(a.Env)}
	if a.Background {
		var bgTimeout time.Duration
		if a.Timeout > 0 {
			bgTimeout = timeout
		}
		return t.cfg.Processes.start(env.SessionKey, spec, bgTimeout)
	}
	return runForeground(ctx, spec, timeout, t.cfg.MaxOutput)
}

// approve applies the approval order and says why a command may not run.
func (t *execTool) approve(ctx context.Context, env tool.Env, command, cwd string, elevated, hasEnv bool) (string, bool) {
	switch {
	case !hasEnv && isSafe(command, t.cfg.SafeBins):
		return "", true
	case env.Sandboxed && t.cfg.Security == SecuritySandbox:
		return "", true
	case t.cfg.Ask == AskOff:
		return "", true
	case t.cfg.Ask == AskElevated && !elevated:
		return "", true
	}
	if env.Approver == nil {
		return "no approver is available for this session", false
	}
	reason := "not a safe command; ask=always"
	if elevated {
		reason = "elevated command"
	}
	actx, cancel := context.WithTimeout(ctx, t.cfg.ApprovalTimeout)
	defer cancel()
	d, err := env.Approver.Approve(actx, tool.ApprovalRequest{Command: command, Cwd: cwd, Reason: reason})
	switch {
	case err == nil && d == tool.DecisionAllowOnce:
		return "", true
	case err == nil && d == tool.DecisionDeny:
		return "denied by the owner", false
	case err == nil:
		return fmt.Sprintf("unknown decision %q", d), false
	case ctx.Err() != nil:
		return "the turn was stopped while waiting for approval", false
	case actx.Err() != nil:
		return fmt.Sprintf("no answer within %s", t.cfg.ApprovalTimeout), false
	}
	// The approver's own words (its timeout, a channel failure).
	return err.Error(), false
}

// workdir resolves the working directory inside the workspace.
func workdir(env tool.Env, dir string) (string, error) {
	rel, err := env.Rel(dir)
	if err != nil {
		return "", err
	}
	root, err := os.OpenRoot(env.Workspace)
	if err != nil {
		return "", fmt.Errorf("open workspace: %w", err)
	}
	defer root.Close()
	fi, err := root.Stat(rel)
	switch {
	case err != nil && strings.Contains(err.Error(), "path escapes from parent"):
		return "", &tool.OutsideError{Path: dir, Workspace: env.Workspace}
	case err != nil:
		return "", fmt.Errorf("workdir %q: %w", dir, unwrapPath(err))
	case !fi.IsDir():
		return "", fmt.Errorf("workdir %q is not a directory", dir)
	}
	return filepath.Join(env.Workspace, filepath.FromSlash(rel)), nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func envList(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+m[k])
	}
	return out
}

// safeChars are the only characters a SAFE command may contain.
func safeChar(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune(" \t-_./,:=@%+", r)
}

// isSafe reports whether command is a simple command of a safe bin that
// stays in the workspace (see the package doc).
func isSafe(command string, safeBins []string) bool {
	for _, r := range command {
		if !safeChar(r) {
			return false
		}
	}
	argv := strings.Fields(command)
	if len(argv) == 0 || strings.ContainsAny(argv[0], "/=") || !slices.Contains(safeBins, argv[0]) {
		return false
	}
	for _, arg := range argv[1:] {
		_, value, hasValue := strings.Cut(arg, "=")
		switch {
		case strings.HasPrefix(arg, "/"), hasValue && strings.HasPrefix(value, "/"):
			return false
		case slices.Contains(strings.Split(arg, "/"), "..") || strings.Contains(arg, "=.."):
			return false
		case arg == "-exec" || arg == "-execdir" || arg == "-ok" || arg == "-okdir" || arg == "-delete":
			return false
		case path.Base(argv[0]) == "sort" && strings.HasPrefix(arg, "--comp"):
			return false
		}
	}
	return true
}
