// Package exec holds the runtime tools of group:runtime (docs/design.md §3.7):
// exec runs a command in the agent's workspace, in the foreground or the
// background, after the approval check; process manages the background
// ones.
//
// Modes, as OpenClaw's: tools.exec.security is deny | allowlist (default) |
// full and tools.exec.ask is off | on-miss (default) | always.
//   - deny: exec refuses everything.
//   - allowlist: a SAFE command (package safebin) or one in the owner's
//     allowlist runs; anything else asks the owner (on-miss, always) or is
//     refused (off).
//   - full: anything runs (ask off or on-miss).
//   - ask always asks for every command, safe and allowlisted ones too.
//
// The owner answers allow-once, allow-always (run, and add it to
// Config.Allowlist), elevated (run once OUTSIDE the sandbox) or deny. No
// approver, a denial, a timeout or an error all mean the command is not
// run. The model cannot ask for elevation: the old `elevated` argument is
// gone from the schema and ignored if a model still sends it.
//
// How a command runs:
//   - A safe command runs as its parsed argv by execve, with no shell in
//     between; anything else (approved, allowlisted, or run under
//     security=full) runs exactly the text the owner saw, as `Shell -c
//     TEXT`.
//   - Every child, foreground or background, is wrapped by
//     Config.Sandbox.Wrap (when set) unless the owner answered elevated,
//     and gets a private temp dir (0700, removed when the child ends).
//   - The environment is BUILT, never inherited: PATH (fixed: SafePath),
//     HOME=the workspace, TMPDIR=the private temp dir, LANG, TZ and TERM
//     copied from the gateway's own environment when set, plus what the
//     call adds. The call may not set PATH, HOME, TMPDIR, LD_*, DYLD_*,
//     PYTHONPATH, NODE_OPTIONS, BASH_ENV, ENV, IFS or any name containing
//     KEY, TOKEN, SECRET or PASSWORD (case-insensitive), and names must be
//     [A-Za-z_][A-Za-z0-9_]*; such a call is refused, nothing run.
//
// Choices where the spec was silent:
//   - A call that adds environment variables is never SAFE and never
//     matches the allowlist (an allowlisted `git status` plus
//     GIT_SSH_COMMAND would run anything): it asks. An allow-always answer
//     to such a call stores the command without its environment.
//   - Allowlist entries match exactly: the resolved binary (argv[0] looked
//     up in SafePath, symlinks resolved) and the whole literal argv for a
//     simple command, else the exact text. A failing allowlist lookup
//     counts as "not allowlisted"; a failing Add still runs the approved
//     command and says so in the result.
//   - Unknown Ask or Security values fall back to the strictest ("always",
//     "deny"); Config.Validate reports them, and explains the retired
//     values (ask "elevated", security "sandbox").
//   - A configured safe bin with no safebin profile is never safe
//     (Config.Validate does not fail on it; safebin.HasProfile lets config
//     checks warn).
//   - A sandbox that cannot wrap a command refuses it: nothing runs
//     unconfined unless the owner said elevated.
//   - Commands run in their own process group with stdin from /dev/null; a
//     timeout or a cancelled turn kills the whole group with SIGKILL. A
//     command killed by signal N reports exit code 128+N, as shells do.
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
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/tool"
	"github.com/openclaw-edge/edge/engine/tool/exec/safebin"
)

// Ask modes.
const (
	AskOff    = "off"
	AskOnMiss = "on-miss"
	AskAlways = "always"
)

// Security modes.
const (
	SecurityDeny      = "deny"
	SecurityAllowlist = "allowlist"
	SecurityFull      = "full"
)

// SafePath is the PATH of every exec child, and where argv[0] is looked up
// for safe commands and allowlist entries.
const SafePath = "/usr/local/bin:/usr/bin:/bin"

// DefaultSafeBins are auto-approved command names; each has a profile in
// package safebin.
var DefaultSafeBins = []string{
	"ls", "cat", "head", "tail", "wc", "echo", "pwd", "date", "whoami", "uname",
	"grep", "sort", "uniq", "cut", "tr", "true", "false",
}

// Config configures exec and process.
type Config struct {
	Ask      string // "off" | "on-miss" (default) | "always"
	Security string // "deny" | "allowlist" (default) | "full"
	// SafeBins are command names run without approval when the command
	// satisfies the bin's safebin profile; nil means DefaultSafeBins, an
	// empty non-nil slice means none.
	SafeBins []string
	// Timeout bounds a foreground command (default 120s); the model may
	// ask for another with the timeout argument, up to an hour.
	Timeout time.Duration
	// ApprovalTimeout bounds the wait for the owner (default 120s).
	ApprovalTimeout time.Duration
	// MaxOutput caps the bytes of output kept per foreground command
	// (default 256 KiB).
	MaxOutput int
	// Shell runs non-safe commands as `Shell -c command` (default /bin/sh).
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
	case "", AskOff, AskOnMiss, AskAlways:
	case "elevated":
		errs = append(errs, errors.New(`tools.exec.ask: "elevated" is no longer a mode; use off, on-miss or always `+
			`(the owner, never the model, now runs a command outside the sandbox by answering /approve <id> elevated)`))
	default:
		errs = append(errs, fmt.Errorf("tools.exec.ask: %q is not one of off, on-miss, always", c.Ask))
	}
	switch c.Security {
	case "", SecurityDeny, SecurityAllowlist, SecurityFull:
	case "sandbox":
		errs = append(errs, errors.New(`tools.exec.security: "sandbox" is no longer a mode; use deny, allowlist or full `+
			`(every exec child now runs in the sandbox, whatever the mode)`))
	default:
		errs = append(errs, fmt.Errorf("tools.exec.security: %q is not one of deny, allowlist, full", c.Security))
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
	case "":
		c.Ask = AskOnMiss
	case AskOff, AskOnMiss, AskAlways:
	default:
		c.Ask = AskAlways
	}
	switch c.Security {
	case "":
		c.Security = SecurityAllowlist
	case SecurityDeny, SecurityAllowlist, SecurityFull:
	default:
		c.Security = SecurityDeny
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
		Description: "Run a shell command in the workspace and return its output and exit code. Simple read-only " +
			"commands (ls, cat, grep… on files in the workspace) run at once; others may need the owner's approval. " +
			"Set background=true for long-running commands and follow them with the process tool.",
		Parameters: tool.MustSchema(`{"type":"object","properties":{` +
			`"command":{"type":"string","description":"Shell command line"},` +
			`"workdir":{"type":"string","description":"Working directory inside the workspace (default: the workspace)"},` +
			`"timeout":{"type":"integer","description":"Seconds before the command is killed (default 120)"},` +
			`"background":{"type":"boolean","description":"Start it and return a session id at once"},` +
			`"env":{"type":"object","additionalProperties":{"type":"string"},"description":"Extra environment variables"}},` +
			`"required":["command"]}`),
	}
}

// execArgs are the tool's arguments. A model that still sends the retired
// "elevated" argument is not refused: the field is simply not decoded.
type execArgs struct {
	Command    string            `json:"command"`
	Workdir    string            `json:"workdir"`
	Timeout    tool.Int          `json:"timeout"`
	Background tool.Bool         `json:"background"`
	Env        map[string]string `json:"env"`
}

// plan is how one command will run.
type plan struct {
	shell    bool // `Shell -c command` rather than argv by execve
	elevated bool // outside the sandbox (the owner's answer)
	note     string
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
	if err := checkEnv(a.Env); err != nil {
		return engine.ErrorResult("exec: %v; nothing was run", err)
	}
	cwd, err := workdir(env, a.Workdir)
	if err != nil {
		return engine.ErrorResult("exec: %v; nothing was run", err)
	}
	check := safebin.Check(command, t.cfg.SafeBins, env.Workspace, cwd)
	if len(a.Env) > 0 && check.Safe {
		check.Safe, check.Reason = false, "the call sets environment variables"
	}
	req := tool.ApprovalRequest{Command: command, Argv: check.Argv, Cwd: cwd, Env: envList(a.Env), Background: bool(a.Background)}
	if check.Argv != nil {
		req.Resolved = LookPath(check.Argv[0], cwd)
	}
	p, reason, ok := t.approve(ctx, env, req, check)
	if !ok {
		return engine.ErrorResult("exec denied: `%s` was not approved (%s); nothing was run", command, reason)
	}
	argv := []string{t.cfg.Shell, "-c", command}
	path := t.cfg.Shell
	if !p.shell {
		argv, path = check.Argv, req.Resolved
		if path == "" {
			return engine.ErrorResult("exec: %s was not found in %s; nothing was run", check.Argv[0], SafePath)
		}
	}
	timeout := t.cfg.Timeout
	if a.Timeout > 0 {
		timeout = min(time.Duration(a.Timeout)*time.Second, maxTimeout)
	}
	spec := runSpec{
		command: command, path: path, argv: argv, cwd: cwd, workspace: env.Workspace,
		extraEnv: req.Env, sandbox: t.cfg.Sandbox, elevated: p.elevated,
	}
	var res engine.ToolResult
	if a.Background {
		var bgTimeout time.Duration
		if a.Timeout > 0 {
			bgTimeout = timeout
		}
		res = t.cfg.Processes.start(env.SessionKey, spec, bgTimeout)
	} else {
		res = runForeground(ctx, spec, timeout, t.cfg.MaxOutput)
	}
	if p.note != "" && len(res.Content) > 0 {
		res.Content = append(res.Content, engine.TextBlock(p.note))
	}
	return res
}

// approve applies the modes and, when needed, asks the owner. It returns
// how the command runs, or why it may not.
func (t *execTool) approve(ctx context.Context, env tool.Env, req tool.ApprovalRequest, check safebin.Result) (plan, string, bool) {
	direct := plan{shell: !check.Safe}
	if t.cfg.Security == SecurityDeny {
		return plan{}, "exec is disabled (tools.exec.security=deny)", false
	}
	if t.cfg.Ask != AskAlways {
		if t.cfg.Security == SecurityFull || check.Safe {
			return direct, "", true
		}
		ok, err := t.allowlisted(env, req)
		if ok {
			return plan{shell: true}, "", true
		}
		if t.cfg.Ask == AskOff {
			why := "not a safe command (" + check.Reason + ") and not in the allowlist; tools.exec.ask=off"
			if err != nil {
				why += fmt.Sprintf("; the allowlist could not be read: %v", err)
			}
			return plan{}, why, false
		}
		req.Reason = "not a safe command: " + check.Reason
	} else {
		req.Reason = "tools.exec.ask=always"
	}
	if env.Approver == nil {
		return plan{}, "no approver is available for this session", false
	}
	actx, cancel := context.WithTimeout(ctx, t.cfg.ApprovalTimeout)
	defer cancel()
	d, err := env.Approver.Approve(actx, req)
	switch {
	case err == nil && d == tool.DecisionAllowOnce:
		return plan{shell: true}, "", true
	case err == nil && d == tool.DecisionElevated:
		return plan{shell: true, elevated: true}, "", true
	case err == nil && d == tool.DecisionAllowAlways:
		p := plan{shell: true}
		if err := t.remember(env, req); err != nil {
			p.note = fmt.Sprintf("(The command ran, but could not be added to the allowlist: %v)", err)
		}
		return p, "", true
	case err == nil && d == tool.DecisionDeny:
		return plan{}, "denied by the owner", false
	case err == nil:
		return plan{}, fmt.Sprintf("unknown decision %q", d), false
	case ctx.Err() != nil:
		return plan{}, "the turn was stopped while waiting for approval", false
	case actx.Err() != nil:
		return plan{}, fmt.Sprintf("no answer within %s", t.cfg.ApprovalTimeout), false
	}
	// The approver's own words (its timeout, a channel failure).
	return plan{}, err.Error(), false
}

// allowEntry is the allowlist key of a request: the resolved binary and
// argv of a simple command, else the exact text.
func allowEntry(req tool.ApprovalRequest) (tool.AllowEntry, bool) {
	if req.Argv != nil {
		if req.Resolved == "" {
			return tool.AllowEntry{}, false
		}
		return tool.AllowEntry{Path: req.Resolved, Argv: slices.Clone(req.Argv)}, true
	}
	return tool.AllowEntry{Command: req.Command}, true
}

// allowlisted reports whether the owner allowed req for good. A call that
// adds environment variables never matches (see the package doc).
func (t *execTool) allowlisted(env tool.Env, req tool.ApprovalRequest) (bool, error) {
	if t.cfg.Allowlist == nil || len(req.Env) > 0 {
		return false, nil
	}
	e, ok := allowEntry(req)
	if !ok {
		return false, nil
	}
	return t.cfg.Allowlist.Allowed(env.AgentID, e)
}

// remember adds req to the allowlist after an allow-always answer.
func (t *execTool) remember(env tool.Env, req tool.ApprovalRequest) error {
	if t.cfg.Allowlist == nil {
		return errors.New("no allowlist is configured; it was allowed once")
	}
	e, ok := allowEntry(req)
	if !ok {
		return fmt.Errorf("%s was not found in %s; it was allowed once", req.Argv[0], SafePath)
	}
	e.AddedAt = time.Now().UTC()
	if err := t.cfg.Allowlist.Add(env.AgentID, e); err != nil {
		return fmt.Errorf("allowlist: %w", err)
	}
	return nil
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
