// Package tool is the contract between the agent loop and the built-in tools
// (docs/design.md §3.7): the Tool interface and the environment a call runs in,
// a registry, OpenClaw's tool groups and profiles (fed to engine/policy), the
// per-turn Set the agent loop uses, and tool-result truncation (§5).
//
// Choices where the spec was silent:
//   - Set snapshots the registry when it is built, so Specs and Run always
//     agree within a turn even if tools are registered concurrently.
//   - Tool names are looked up exactly, then case-insensitively (small
//     models write "Read"); policy is checked on the canonical name.
//   - Empty or null arguments count as {} (models send them for tools
//     without parameters); anything else that is not a JSON object is
//     refused before the tool runs.
//   - Budgets are counted in characters (runes), as OpenClaw counts
//     JavaScript string length; cuts always fall on UTF-8 boundaries.
//   - Env.ResultChars tells a tool the character budget its result will be
//     truncated to, so tools that page (read, grep, process log) can stop
//     early and say how to continue instead of losing that hint to the cut.
//   - A result with no content gets a "(no output)" text block: some
//     providers reject empty tool results.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
)

// Env is what a tool call may know about where it runs.
type Env struct {
	// Workspace is the agent's workspace directory, absolute. File tools are
	// confined to it; exec runs in it.
	Workspace  string
	AgentID    string
	SessionKey engine.SessionKey
	// Approver answers exec approval requests. Nil means approvals are
	// impossible: whatever needs one is denied.
	Approver Approver
	// Sandboxed reports whether the session runs in a sandbox.
	Sandboxed bool
	// ResultChars is the character budget the result will be truncated to
	// (set by Set.Run); 0 means unknown and tools use their own defaults.
	ResultChars int
	// Created, when set, records the files the turn's file tools create
	// (the gateway lets a non-owner's reply attach only those).
	Created *Created
	// Allowed is the turn's effective tool policy (the agent's, after the
	// gateway's own restrictions: a non-owner's turn allows nothing); nil
	// means unknown, and a tool that starts turns of its own
	// (sessions_spawn) then treats it as allowing nothing. Such a tool
	// narrows it for the turns it starts, never widens it.
	Allowed func(name string) bool
	// Depth is how many hops from a person's message (or a job) the turn
	// runs: 0 for a turn such a message started, n for a sub-agent n
	// spawns below one, 1 for a turn sessions_send started (which cannot
	// send on: that bounds ping-pong between sessions).
	Depth int
}

// OutsideError reports a path that resolves outside the workspace.
type OutsideError struct {
	Path      string
	Workspace string
}

func (e *OutsideError) Error() string {
	return fmt.Sprintf("path %q is outside the workspace %s", e.Path, e.Workspace)
}

// Rel turns a path given by the model into a clean, slash-separated path
// relative to the workspace ("." for the workspace itself). Relative paths
// are taken relative to the workspace; absolute ones must lie inside it.
// The check is lexical: symlinks are the business of os.Root, which every
// file access goes through.
func (e Env) Rel(p string) (string, error) {
	if e.Workspace == "" {
		return "", fmt.Errorf("no workspace is configured")
	}
	orig := p
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q contains a NUL byte", orig)
	}
	if p == "" {
		p = "."
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		// "~" is the home directory to the model; inside the workspace only
		// if the workspace happens to be home.
		return "", &OutsideError{Path: orig, Workspace: e.Workspace}
	}
	if filepath.IsAbs(p) {
		rel, ok := relInside(e.Workspace, p)
		if !ok {
			// The workspace may itself be reached through a symlink
			// (/tmp → /private/tmp on macOS): compare real paths too.
			if real, err := filepath.EvalSymlinks(e.Workspace); err == nil {
				rel, ok = relInside(real, p)
			}
		}
		if !ok {
			return "", &OutsideError{Path: orig, Workspace: e.Workspace}
		}
		p = rel
	}
	p = filepath.Clean(p)
	if p == ".." || strings.HasPrefix(p, ".."+string(filepath.Separator)) || filepath.IsAbs(p) {
		return "", &OutsideError{Path: orig, Workspace: e.Workspace}
	}
	return filepath.ToSlash(p), nil
}

func relInside(base, p string) (string, bool) {
	rel, err := filepath.Rel(filepath.Clean(base), filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// Tool is one callable tool. Run must be safe for concurrent use and report
// every failure as an error result (engine.ErrorResult), never by panicking.
type Tool interface {
	Spec() engine.ToolSpec
	Run(ctx context.Context, env Env, args json.RawMessage) engine.ToolResult
}

// Approver asks the owner whether a command may run. Approve blocks until
// the owner answers, ctx ends, or the approver's own timeout passes.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Decision, error)
}

// ApprovalRequest is what the owner is asked to approve: exactly what will
// run, so nothing can hide (control characters are escaped for display by
// whoever shows it).
type ApprovalRequest struct {
	// Command is the text the owner approves. An approved command runs
	// exactly this text through `sh -c`, inside the sandbox unless the
	// owner answers DecisionElevated.
	Command string
	// Argv is the command parsed as one simple command, when it is one
	// (nil for pipelines, redirections…); Resolved is argv[0]'s absolute
	// path after PATH lookup and symlinks ("" when unknown). Together they
	// are the key of an allow-always entry.
	Argv     []string
	Resolved string
	Cwd      string
	// Env is what the call adds to the built environment, KEY=VALUE, sorted.
	Env        []string
	Background bool
	Reason     string
}

// Decision is the owner's answer to an approval request.
type Decision string

// Decisions. The owner, never the model, picks DecisionElevated.
const (
	DecisionAllowOnce   Decision = "allow-once"   // run this command once, in the sandbox
	DecisionAllowAlways Decision = "allow-always" // run it and add it to the agent's allowlist
	DecisionElevated    Decision = "elevated"     // run it once outside the sandbox
	DecisionDeny        Decision = "deny"
)

// Allowed reports whether d lets the command run.
func (d Decision) Allowed() bool {
	return d == DecisionAllowOnce || d == DecisionAllowAlways || d == DecisionElevated
}

// Registry holds the tools a gateway offers. It is safe for concurrent use.
// Adding a tool under a name already present replaces it.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]Tool
}

// NewRegistry returns a registry holding tools.
func NewRegistry(tools ...Tool) *Registry {
	r := &Registry{tools: map[string]Tool{}}
	for _, t := range tools {
		r.Add(t)
	}
	return r
}

// Add registers t under its spec's name.
func (r *Registry) Add(t Tool) {
	name := t.Spec().Name
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tools == nil {
		r.tools = map[string]Tool{}
	}
	r.tools[name] = t
}

// Get returns the tool called name (exact spelling).
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// Tools returns the registered tools sorted by name.
func (r *Registry) Tools() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := r.namesLocked()
	out := make([]Tool, len(names))
	for i, n := range names {
		out[i] = r.tools[n]
	}
	return out
}

// Names returns the registered tool names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.namesLocked()
}

func (r *Registry) namesLocked() []string {
	names := make([]string, 0, len(r.tools))
	for n := range r.tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Known reports whether entry names a registered tool, a built-in tool, a
// group or a profile: the known func for policy.Validate.
func (r *Registry) Known(entry string) bool {
	if KnownEntry(entry) {
		return true
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for n := range r.tools {
		if strings.EqualFold(n, entry) {
			return true
		}
	}
	return false
}

// AllowEntry is one command in an agent's persisted exec allowlist, added by
// `/approve <id> always` or `openclaw approvals allowlist add`. It matches
// only exactly: the resolved binary path and the whole argv (no patterns:
// `git status` does not allow `git status --porcelain`); a command that is
// not one simple command matches by its exact text.
type AllowEntry struct {
	Path    string    `json:"path,omitempty"`    // absolute, symlinks resolved
	Argv    []string  `json:"argv,omitempty"`    // the whole argv, argv[0] as written
	Command string    `json:"command,omitempty"` // exact text, only when Argv is empty
	AddedAt time.Time `json:"addedAt"`
}

// SessionInfo is one session as the session tools (engine/tool/sessions)
// list it. It and the types below live here, in the contract both sides
// import, so the turn core can serve those tools without importing them.
type SessionInfo struct {
	Key         engine.SessionKey
	UpdatedAt   time.Time
	DisplayName string
	Channel     string
	Messages    int
	Model       string // the model that answered last; "" before any did
	// Own says only the owner's side writes to the session (main, CLI,
	// cron, heartbeat, sub-agent ones: gateway.OwnSession). Otherwise its
	// display name and messages were written by other people: untrusted.
	Own bool
}

// SessionHistory is the recent history of one session as sessions_history
// reads it.
type SessionHistory struct {
	Messages []engine.Message // the active branch's last messages, oldest first
	// Own is SessionInfo.Own; DisplayName names whoever talks there.
	Own         bool
	DisplayName string
}

// SendRequest is a turn sessions_send asks the turn core for: a message
// to another existing session of the agent, answered there.
type SendRequest struct {
	AgentID string
	Key     engine.SessionKey
	Text    string
	// Depth is the turn's own depth (the sender's plus one).
	Depth int
}

// SendResult is how a turn sessions_send started ended.
type SendResult struct {
	Reply string // "" when it stayed silent
	// Own is SessionInfo.Own of the session it ran in: a reply from
	// another's session was written over their text.
	Own bool
	Err error
}

// SpawnRequest is a sub-agent's turn as sessions_spawn asks the turn core
// for it: one message, in a session of its own, under a policy the tool
// has already narrowed.
type SpawnRequest struct {
	AgentID string
	// Key is the sub-agent's session ("agent:<id>:subagent:<random>").
	Key engine.SessionKey
	// Parent is the session whose turn spawned it.
	Parent engine.SessionKey
	// Message is what the sub-agent is given: its task, framed.
	Message string
	Label   string // shown as the session's display name
	// Model is "provider/model"; "" is the agent's.
	Model string
	// Allowed is the sub-agent's tool policy; nil allows nothing.
	Allowed func(name string) bool
	// Depth is the sub-agent's own depth (its parent's plus one).
	Depth int
}

// SpawnResult is how a sub-agent's turn ended.
type SpawnResult struct {
	Reply string // its final reply; "" when it stayed silent
	Model string // the model that answered
}
