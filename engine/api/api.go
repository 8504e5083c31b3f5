// Package api holds the wire types and paths of the gateway's control API:
// the HTTP API the gateway serves on its Unix socket (and later on the paired
// LAN listener) and that the openclaw CLI speaks through engine/api/client.
//
// Paths are versioned (/v1/…). Requests and replies are JSON; a message turn
// replies with a Server-Sent Events stream of Event values so the CLI can show
// text as it is generated. Errors are an Error body with a stable Code the CLI
// can act on and a Message safe to show a user.
package api

import (
	"encoding/json"
	"time"

	"github.com/openclaw-edge/edge/engine"
)

// Version is the API version in paths and in mDNS hints.
const Version = "v1"

// Paths of the control API. Session keys travel in the "key" query parameter
// because they contain ':' and may contain '/'.
const (
	PathStatus         = "/v1/status"           // GET → Status
	PathMessages       = "/v1/messages"         // POST SendRequest → text/event-stream of Event
	PathSessions       = "/v1/sessions"         // GET ?agent= → []SessionInfo
	PathSessionHistory = "/v1/sessions/history" // GET ?key= → History
	PathSessionReset   = "/v1/sessions/reset"   // POST ?key= → SessionInfo
	PathSessionDelete  = "/v1/sessions/delete"  // POST ?key= → SessionInfo (as it was); waits for a running turn; 409 while an exec approval is pending
	PathSessionExport  = "/v1/sessions/export"  // GET ?key=|?id=[&format=v3|v4] → OpenClaw JSONL (application/x-ndjson)
	PathSessionImport  = "/v1/sessions/import"  // POST [?key=][&ifExists=rename|skip|fail][&updatedAt=RFC3339] body JSONL (streamed) → ImportResult
	// Exec approvals (docs/design.md §3.7): the pending ones, and the owner's
	// answer to one from any terminal; PathApprovals+"/"+id.
	PathApprovals = "/v1/approvals" // GET → []Approval; POST /v1/approvals/{id} ApprovalDecision → ApprovalResult
	// The per-agent allowlist of commands approved for good.
	PathApprovalAllowlist = "/v1/approvals/allowlist" // GET ?agent= → []AllowEntry; POST AllowEntry → AllowEntry; DELETE AllowEntry → AllowRemoved
)

// SendRequest asks the gateway to run one inbound message through the
// pipeline as the CLI channel. Text may be a slash command (/new, /status,
// /approve <id> …); /approve, /deny and /stop act at once even while the
// session's turn is running.
type SendRequest struct {
	Text       string `json:"text"`
	SessionKey string `json:"sessionKey,omitempty"` // default agent:<agent>:main
	AgentID    string `json:"agentId,omitempty"`    // default: the default agent
	// MessageID, when set, makes the send idempotent: a repeat with the same
	// id is dropped (dedup key "cli:<id>").
	MessageID string `json:"messageId,omitempty"`
	// IdempotencyKey identifies one user message across retries (the CLI
	// makes a random one per message). A repeat with a known key never
	// starts a second turn: it attaches to the turn the key started —
	// streaming what remains while it runs, else answering with its
	// recorded reply, its error, or the interrupted-turn note (code
	// "interrupted"). Slash commands ignore it.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// EventType names an event of a message stream.
type EventType string

// Event types of a message stream, in the order they may appear.
const (
	EventQueued     EventType = "queued"      // the turn waits behind another in the session's lane
	EventAccepted   EventType = "accepted"    // Accepted: the message is committed; it will be answered or marked interrupted
	EventDelta      EventType = "delta"       // Text: a piece of the visible reply
	EventThinking   EventType = "thinking"    // Text: a piece of reasoning (only when /reasoning stream)
	EventToolCall   EventType = "tool_call"   // Tool: the model called a tool
	EventToolResult EventType = "tool_result" // Tool: its result (IsError, Preview)
	EventApproval   EventType = "approval"    // Approval: an exec waits for /approve or /deny
	EventFailover   EventType = "failover"    // Text: why another model answers
	EventError      EventType = "error"       // Error: the turn failed
	EventDone       EventType = "done"        // Result: the turn ended (always last when the turn ran)
)

// Event is one Server-Sent Event of a message stream. The SSE "event:" field
// carries Type too, and "data:" this struct as JSON.
type Event struct {
	Type EventType `json:"type"`
	// Turn and Seq number the events of one idempotent turn's stream (Turn
	// is random per run of a turn, Seq counts from 1), so a client that
	// re-attaches after a dropped connection skips what it already showed.
	// Zero on other events.
	Turn     string    `json:"turn,omitempty"`
	Seq      int       `json:"seq,omitempty"`
	Accepted *Accepted `json:"accepted,omitempty"`
	Text     string    `json:"text,omitempty"`
	Tool     *Tool     `json:"tool,omitempty"`
	Approval *Approval `json:"approval,omitempty"`
	Error    *Error    `json:"error,omitempty"`
	Result   *Result   `json:"result,omitempty"`
}

// Accepted acknowledges a committed inbound message.
type Accepted struct {
	SessionKey     string `json:"sessionKey"`
	SessionID      string `json:"sessionId"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// Tool describes a tool call or its result in a message stream.
type Tool struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	IsError   bool            `json:"isError,omitempty"`
	Preview   string          `json:"preview,omitempty"` // first few hundred characters of the result
}

// Approval is a pending exec approval, as the approval event carries it and
// GET /v1/approvals lists it. Answer it with "/approve <ID> [always|elevated]"
// or "/deny <ID>" on the same session, or from any terminal with POST
// /v1/approvals/<ID> (`openclaw approvals approve|deny`).
//
// The strings are raw, exactly what would run; whoever shows them to a
// person must pass them through EscapeControl first.
type Approval struct {
	ID         string    `json:"id"`
	SessionKey string    `json:"sessionKey"`
	AgentID    string    `json:"agentId,omitempty"`
	Command    string    `json:"command"`
	Argv       []string  `json:"argv,omitempty"`     // nil unless one simple command
	Resolved   string    `json:"resolved,omitempty"` // argv[0]'s absolute path
	Cwd        string    `json:"cwd,omitempty"`
	Env        []string  `json:"env,omitempty"` // KEY=VALUE the call adds
	Background bool      `json:"background,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	CreatedAt  time.Time `json:"createdAt,omitzero"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// Result is the outcome of one turn, as `openclaw message send --json`
// prints it.
type Result struct {
	Reply      string        `json:"reply"`
	SessionKey string        `json:"sessionKey"`
	SessionID  string        `json:"sessionId"`
	Model      string        `json:"model,omitempty"` // "provider/model" that answered
	Usage      *engine.Usage `json:"usage,omitempty"`
	// Suppressed is true when the reply was NO_REPLY/__SILENT__ and nothing
	// was delivered.
	Suppressed bool `json:"suppressed,omitempty"`
	// Command is set when the text was a slash command handled by the
	// gateway (e.g. "status"); Reply then holds its answer.
	Command string `json:"command,omitempty"`
	// Media lists MEDIA: attachments the reply asked to send.
	Media []string `json:"media,omitempty"`
	// Replayed is true when the reply was recorded earlier and is sent
	// again for a retried idempotency key (no new turn ran).
	Replayed bool `json:"replayed,omitempty"`
}

// Error is the body of every non-2xx reply and of EventError.
type Error struct {
	Code    string `json:"code"`    // stable, e.g. "bad_request", "not_found", "model_failed"
	Message string `json:"message"` // safe to show to a user
}

func (e *Error) Error() string { return e.Message }

// Error codes.
const (
	CodeBadRequest  = "bad_request"
	CodeNotFound    = "not_found"
	CodeModelFailed = "model_failed"
	CodeAborted     = "aborted"
	CodeInternal    = "internal"
	CodeForbidden   = "forbidden"
	// CodeInterrupted: the gateway stopped before the turn finished; the
	// transcript holds a note saying so. Send the message again (with a
	// new idempotency key) to get an answer.
	CodeInterrupted = "interrupted"
)

// Status is the gateway's health and identity (GET /v1/status).
type Status struct {
	Version       string    `json:"version"`
	APIVersion    string    `json:"apiVersion"`
	PID           int       `json:"pid"`
	StartedAt     time.Time `json:"startedAt"`
	UptimeSeconds float64   `json:"uptimeSeconds"`
	RSSBytes      int64     `json:"rssBytes"`
	StateDir      string    `json:"stateDir"`
	Socket        string    `json:"socket"`
	DefaultAgent  string    `json:"defaultAgent"`
	Model         string    `json:"model"` // default agent's primary "provider/model"
	Sessions      int       `json:"sessions"`
	ActiveTurns   int       `json:"activeTurns"`
	LastModel     string    `json:"lastModel,omitempty"` // the model that answered last
	LastError     string    `json:"lastError,omitempty"`
	LastErrorAt   time.Time `json:"lastErrorAt,omitzero"`
	// LastFailover says which model took over from which, and why.
	LastFailover   string    `json:"lastFailover,omitempty"`
	LastFailoverAt time.Time `json:"lastFailoverAt,omitzero"`
	// Runners are the local models loaded now (one process each).
	Runners []Runner `json:"runners,omitempty"`
	// LocalRunner is the openclaw-runner binary the gateway starts for
	// local models (it never links llama.cpp itself); LocalRunnerError
	// says why there is none (what is missing and how to fix it).
	LocalRunner      string `json:"localRunner,omitempty"`
	LocalRunnerError string `json:"localRunnerError,omitempty"`
	// LocalRunnerVariant is the CPU variant of the LocalRunner build
	// (x86-64-v4, armv8.2-a-dotprod-fp16, …; "" when it does not say) and
	// LocalRunnerCPU what llama.cpp in it was compiled to use.
	LocalRunnerVariant string `json:"localRunnerVariant,omitempty"`
	LocalRunnerCPU     string `json:"localRunnerCpu,omitempty"`
	// CPUFeatures are the instruction sets the gateway sees on this CPU,
	// and BestVariant the best runner variant they allow.
	CPUFeatures []string `json:"cpuFeatures,omitempty"`
	BestVariant string   `json:"bestVariant,omitempty"`
	// RunnerBuilds are the openclaw-runner builds found, in the order
	// they are tried, with those this CPU cannot run.
	RunnerBuilds []RunnerBuild `json:"runnerBuilds,omitempty"`
	// InterruptedOpen counts turns a crash interrupted that could not be
	// closed yet (e.g. the disk was full at start-up); InterruptedError
	// says why. They are closed at the next start or the next message in
	// their session.
	InterruptedOpen  int    `json:"interruptedOpen,omitempty"`
	InterruptedError string `json:"interruptedError,omitempty"`
	// StateWarning says what is wrong with the state database when the
	// gateway runs degraded (e.g. read-only: nothing can be recorded).
	StateWarning string `json:"stateWarning,omitempty"`
	// Sandbox says how exec children are confined (docs/design.md §3.7):
	// "landlock ABI 7", or "off: <why> — exec runs under policy only".
	// SandboxActive is false when the kernel sandbox is off.
	Sandbox       string `json:"sandbox,omitempty"`
	SandboxActive bool   `json:"sandboxActive"`
	// Channels are the configured channel accounts and their links.
	Channels []ChannelStatus `json:"channels,omitempty"`
	// LAN is the TLS API for paired devices (gateway.bind/port).
	LAN *LANStatus `json:"lan,omitempty"`
	// MissingModels are the configured models (primaries and fallbacks)
	// that cannot be used as configured: not installed, not defined.
	MissingModels []ModelProblem `json:"missingModels,omitempty"`
	// AgentModels are the agents' primary models by agent id ("" when an
	// agent has none): what a session without a /model override uses.
	AgentModels map[string]string `json:"agentModels,omitempty"`
	// RestartPending are the config keys changed through the API
	// (`openclaw config set|unset`) since the gateway started: it reads
	// its config at start, so they apply at its next. RestartHow says how
	// to restart it (ConfigSetResult.RestartHow).
	RestartPending []string `json:"restartPending,omitempty"`
	RestartHow     string   `json:"restartHow,omitempty"`
}

// ModelProblem is a configured model that cannot be used, and why (with
// what to do: `openclaw models pull NAME`, define the provider…).
type ModelProblem struct {
	Model   string `json:"model"` // "provider/model" as configured
	Agent   string `json:"agent"` // the first agent that uses it
	Problem string `json:"problem"`
}

// LANStatus describes the TLS listener for paired devices.
type LANStatus struct {
	GatewayID string   `json:"gatewayId"` // the gateway's device id
	Name      string   `json:"name"`      // the box's name (mDNS instance)
	Bind      string   `json:"bind"`      // gateway.bind
	Addrs     []string `json:"addrs,omitempty"`
	Error     string   `json:"error,omitempty"` // why it is not listening
	MDNS      bool     `json:"mdns"`            // announced over mDNS
	Devices   int      `json:"devices"`         // paired devices
}

// RunnerBuild is one openclaw-runner build (a CPU variant).
type RunnerBuild struct {
	Path    string `json:"path"`
	Variant string `json:"variant,omitempty"`
	// State: "next" (what the next start uses), "fallback", "unusable"
	// (it died of SIGILL or said this CPU lacks its instructions: not
	// started again until the file changes or the gateway restarts), "skipped" (this CPU
	// lacks what it needs).
	State string `json:"state"`
	Why   string `json:"why,omitempty"`
}

// Runner is a loaded local model.
type Runner struct {
	Model string `json:"model"` // GGUF path
	// Binary is the runner build serving it, Variant its CPU variant.
	Binary     string    `json:"binary,omitempty"`
	Variant    string    `json:"variant,omitempty"`
	PID        int       `json:"pid"`
	Since      time.Time `json:"since"`
	Slots      int       `json:"slots"`      // sessions whose KV cache is kept
	ContextLen int       `json:"contextLen"` // tokens per session
	RSSBytes   int64     `json:"rssBytes"`   // the runner process's own RSS (0 where unknown)
	// PromptTokPerSec and GenTokPerSec are the prompt and generation
	// speed this box measured for the model (0: not measured yet).
	PromptTokPerSec float64 `json:"promptTokPerSec,omitempty"`
	GenTokPerSec    float64 `json:"genTokPerSec,omitempty"`
	// CachedSessions and CachedTokens are the sessions whose prompt the
	// runner's KV cache holds and their tokens (as of the last reply);
	// RestoredSessions were read back from disk at load.
	CachedSessions   int `json:"cachedSessions,omitempty"`
	CachedTokens     int `json:"cachedTokens,omitempty"`
	RestoredSessions int `json:"restoredSessions,omitempty"`
}

// SessionInfo is one row of `openclaw sessions list`.
type SessionInfo struct {
	Key          string    `json:"key"`
	AgentID      string    `json:"agentId"`
	SessionID    string    `json:"sessionId"`
	ChatType     string    `json:"chatType,omitempty"`
	Channel      string    `json:"channel,omitempty"`
	DisplayName  string    `json:"displayName,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
	Model        string    `json:"model,omitempty"`
	InputTokens  int       `json:"inputTokens"`
	OutputTokens int       `json:"outputTokens"`
	TotalTokens  int       `json:"totalTokens"`
	Messages     int       `json:"messages"`
	// ContextTokens is the context size after the last turn or compaction
	// (informative, OpenClaw's contextTokens).
	ContextTokens int `json:"contextTokens"`
	// CompactionCount counts the compactions of the current session;
	// MemoryFlushAt and MemoryFlushCompactionCount say when the last
	// pre-compaction memory flush ran and in which compaction cycle.
	CompactionCount            int       `json:"compactionCount"`
	MemoryFlushAt              time.Time `json:"memoryFlushAt,omitzero"`
	MemoryFlushCompactionCount int       `json:"memoryFlushCompactionCount,omitempty"`
	// ModelOverride is the session's /model choice ("" = its agent's
	// model); Model is the model that answered last.
	ModelOverride string `json:"modelOverride,omitempty"`
}

// History is a session's current transcript (GET /v1/sessions/history).
// Entries are OpenClaw transcript entries (type message | custom_message |
// custom | compaction | branch_summary | …) as JSON objects, in append order;
// Header is the transcript's session header line.
type History struct {
	SessionKey string            `json:"sessionKey"`
	SessionID  string            `json:"sessionId"`
	Header     json.RawMessage   `json:"header"`
	Entries    []json.RawMessage `json:"entries"`
}

// ImportResult reports an imported transcript. The request's ?key= is
// optional: without it the header's "sessionKey" is used when it is free
// and no chat is routed to it (not an agent's main session, not a
// direct/group/channel/room key): a file someone sent never becomes the
// owner's main session or a chat's by itself. Otherwise the gateway picks
// agent:<agent>:import-<first 8 of the session id>[-N], a key that holds
// no session.
type ImportResult struct {
	SessionKey string `json:"sessionKey"`
	SessionID  string `json:"sessionId"`
	Entries    int    `json:"entries"`
	// RenamedFrom is the header's session id when a transcript with that
	// id was already in the store (say, a re-import of an export), so the
	// import got the fresh SessionID instead.
	RenamedFrom string `json:"renamedFrom,omitempty"`
	// KeyChosen is true when the gateway picked SessionKey.
	KeyChosen bool `json:"keyChosen,omitempty"`
	// HeaderKey is the header's "sessionKey" when it was not used, and
	// KeyNote why (it holds a session; it is the agent's main session…).
	// Import with ?key=HeaderKey to take it anyway.
	HeaderKey string `json:"headerKey,omitempty"`
	KeyNote   string `json:"keyNote,omitempty"`
	// Replaced is the session id an explicit ?key= held before the
	// import: that transcript stays in the store, exportable by id
	// (GET PathSessionExport?id=).
	Replaced string `json:"replaced,omitempty"`
	// Skipped is true when ?ifExists=skip found the transcript already
	// imported: nothing was stored and no key was bound. Existing says
	// how the stored one compares (ExistingSame, ExistingExtended).
	Skipped  bool   `json:"skipped,omitempty"`
	Existing string `json:"existing,omitempty"`
}
