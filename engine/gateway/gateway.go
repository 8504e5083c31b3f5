// Package gateway is the turn core: it runs one message end to end —
// slash commands, session lane, durable inbound, context assembly, the
// agent loop with its tools, the reply committed with the end of the turn
// (docs/design.md §3). Channel messages reach it through RunTurn from
// engine/inbound, the control API (engine/localapi) through Send and the
// session queries; it imports neither, nor any HTTP serving code.
//
// It sees the rest of the engine only through small pieces handed to New:
// the session manager, the tool registry, a model resolver and per-agent
// settings. The appliance builds those from the config file; tests build them
// by hand.
//
// Crash safety follows docs/design.md §4: the inbound message (with its dedup key)
// is committed before any model is called and only then acknowledged (the
// accepted event); every intermediate assistant message (with tool calls)
// and tool result is its own transaction; the final reply is committed
// together with the turn's end marker (EndTurn), so a crash can never leave
// a reply that looks unanswered; and a turn a crash interrupted is closed at
// the next start with a visible error entry (RecoverInterrupted) rather than
// silently re-run: re-running could repeat a tool's side effects. A turn
// that cannot be closed then (full disk) is logged, reported by status and
// closed later; it never keeps the gateway from starting.
//
// Where things are, one job a file:
//
//	gateway.go       Config, New, Send (a message from the control API), RunTurn, session targets, Delete
//	turn.go          the turn runner: one message → model loop → reply committed with the turn's end
//	status.go        the gateway's status (others add theirs with OnStatus)
//	approvals.go     the pending exec approvals a turn waits on (/approve, /deny)
//	commands.go      slash commands
//	budget.go, compact.go  the context budget, memory flush and compaction
//	idempotency.go   retried API sends attach to their first turn
//	sessiontools.go  what the session tools ask: listing, history, a turn in another session, a sub-agent's turn
//	shutdown.go      closing running turns on shutdown
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/agent"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/prompt"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/tool"
)

// ModelInfo describes a resolved model.
type ModelInfo struct {
	Ref           string // "provider/model"
	Provider      string
	ID            string
	API           string
	ContextWindow int
	MaxTokens     int
	Local         bool
	// Limits bound the model's window, each with the setting behind it
	// (the configured or catalog contextWindow, the GGUF's trained context,
	// models.local.contextSize); the smallest wins (prompt.EffectiveWindow).
	// Empty: ContextWindow alone.
	Limits []prompt.Limit
	// Count, when set, counts a request's prompt tokens as the model will
	// see them (a local model: its chat template and tokenizer); nil: an
	// estimate.
	Count func(ctx context.Context, req *engine.ChatRequest) (int, error)
	// Cached, when set (a local model), says how many of a request's
	// prompt tokens the model's cache holds for req.SessionID; loaded is
	// false when the model is not loaded (nothing is started to answer).
	Cached func(ctx context.Context, req *engine.ChatRequest) (cached, total int, loaded bool, err error)
	// Thinking names how /think reaches the model ("enable_thinking",
	// "no_think", "none" …); "" when the provider takes the level itself.
	Thinking string
}

// Switch is one failover from a model to the next in the chain.
type Switch struct {
	From, To string // "provider/model" (with "@profile" when auth profiles rotate)
	Reason   string // the error kind that caused it, e.g. "unreachable"
	Detail   string
}

// Models resolves "provider/model" references to callable models.
type Models interface {
	// Resolve returns a model that tries refs in order (primary first,
	// then fallbacks; docs/design.md §7), calling onSwitch (which may be nil) at
	// every failover, the info of the primary, and a func reporting which
	// ref answered last. A single unusable ref is an error.
	Resolve(refs []string, onSwitch func(Switch)) (agent.Model, ModelInfo, func() string, error)
	// Refs lists every configured model reference, for /model.
	Refs() []string
}

// Agent is one configured agent, resolved by the wiring.
type Agent struct {
	ID, Name  string
	Workspace string   // absolute
	Model     string   // primary "provider/model"; "" when none is configured
	Fallbacks []string // tried in order when the primary cannot answer
	// Allowed reports whether the agent's tool policy allows a tool.
	Allowed           func(name string) bool
	PromptMode        prompt.Mode
	MaxTurns          int
	Timeout           time.Duration
	MaxTokens         int
	Thinking          engine.ThinkingLevel
	BootstrapMaxChars int
	SkillDirs         []string
	Location          *time.Location
	// ContextTokens caps the window (agents.defaults.contextTokens); 0: none.
	ContextTokens int
	Compaction    Compaction
	// SessionStart, if set, is called when a message starts a new session
	// (none yet, or the old one expired); it must return at once.
	SessionStart func()
	// MemoryWritten, if set, is called after the memory flush appended to
	// a note, so the memory index does not wait for its file watcher.
	MemoryWritten func()
}

// Compaction is an agent's compaction and memory-flush configuration
// (agents.defaults.compaction): 0 (floor: nil) means OpenClaw's default
// scaled to the model's window (prompt.ScaleCompaction).
type Compaction struct {
	ReserveTokens, KeepRecentTokens int
	ReserveTokensFloor              *int
	SoftThresholdTokens             int
	FlushEnabled                    bool
}

// Config is what New needs.
type Config struct {
	Agents          []Agent
	DefaultAgent    string
	MainKey         string // default "main"
	Sessions        *session.Manager
	Tools           *tool.Registry
	Models          Models
	ApprovalTimeout time.Duration // default 2 minutes
	Version         string
	StateDir        string
	Socket          string
	Logger          *slog.Logger
	Now             func() time.Time
	// Allowlist is the per-agent exec allowlist the owner manages through
	// the control API (/v1/approvals/allowlist); nil: no such endpoints.
	Allowlist Allowlist
	// Status, if set, adds what only the wiring knows (loaded local
	// models) to the gateway's status.
	Status func(*api.Status)
	// StateWarning, if set, says what is wrong with the state database
	// (opened read-only …); status reports it.
	StateWarning func() string
}

// Gateway runs turns. It is safe for concurrent use.
type Gateway struct {
	cfg     Config
	agents  map[string]*Agent
	lanes   *session.Lanes
	log     *slog.Logger
	started time.Time
	host    string

	mu           sync.Mutex
	running      map[engine.SessionKey]context.CancelFunc
	pending      map[string]*pendingApproval
	lastError    string
	lastErrAt    time.Time
	lastModel    string
	lastFailover string
	lastFoAt     time.Time
	active       int
	// closing is set by Shutdown: no new turn starts.
	closing bool
	// turnLogs are the running idempotent turns, by dedup key.
	turnLogs map[string]*turnLog
	// recoverErr says why interrupted turns were left open at start-up.
	recoverErr string
	// levels remembers the degradation level that fits each agent and
	// model configuration (planTurn).
	levels map[string]prompt.Level

	// statusHooks add what other parts know to Status (OnStatus).
	statusHooks []func(*api.Status)
	// shapes are the last turn's request shape per session of a local
	// model, for prewarming after /compact; prewarms counts the prewarm
	// goroutines (prewarm.go).
	shapes   map[engine.SessionKey]warmShape
	prewarms sync.WaitGroup
}

// New checks cfg and returns a Gateway.
func New(cfg Config) (*Gateway, error) {
	if cfg.Sessions == nil || cfg.Tools == nil || cfg.Models == nil {
		return nil, errors.New("gateway: sessions, tools and models are required")
	}
	if len(cfg.Agents) == 0 {
		return nil, errors.New("gateway: no agents configured")
	}
	if cfg.MainKey == "" {
		cfg.MainKey = "main"
	}
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = 2 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	g := &Gateway{
		cfg:     cfg,
		agents:  make(map[string]*Agent),
		lanes:   session.NewLanes(),
		log:     cfg.Logger,
		started: cfg.Now(),
		running: make(map[engine.SessionKey]context.CancelFunc),
		pending: make(map[string]*pendingApproval),

		turnLogs: make(map[string]*turnLog),
		levels:   make(map[string]prompt.Level),
		shapes:   make(map[engine.SessionKey]warmShape),
	}
	g.host, _ = os.Hostname()
	for i := range cfg.Agents {
		a := &cfg.Agents[i]
		if a.Allowed == nil {
			a.Allowed = func(string) bool { return true }
		}
		if a.Location == nil {
			a.Location = time.Local
		}
		g.agents[a.ID] = a
	}
	if cfg.DefaultAgent == "" {
		g.cfg.DefaultAgent = cfg.Agents[0].ID
	}
	if _, ok := g.agents[g.cfg.DefaultAgent]; !ok {
		return nil, fmt.Errorf("gateway: default agent %q is not configured", g.cfg.DefaultAgent)
	}
	return g, nil
}

// RecoverInterrupted closes every turn a crash left open with a visible error
// entry, so the transcript says what happened and nothing is answered twice.
// It returns how many it closed; an error means some could not be closed
// (disk full, read-only store): they stay open, status reports them, and
// they are closed at the next start or before the next turn of their
// session. The caller must not treat that error as fatal.
func (g *Gateway) RecoverInterrupted() (int, error) {
	open, err := g.cfg.Sessions.Interrupted()
	if err != nil {
		g.setRecoverErr(fmt.Sprintf("could not look for interrupted turns: %v", err))
		return 0, fmt.Errorf("find interrupted turns: %w", err)
	}
	closed := 0
	var errs []error
	for _, k := range open {
		if err := g.cfg.Sessions.CloseInterrupted(k.AgentID, k.Key, InterruptedNote); err != nil {
			g.log.Error("could not close an interrupted turn; it stays open until the next start or message in its session", "session", k.Key, "err", err)
			errs = append(errs, fmt.Errorf("close interrupted turn of %s: %w", k.Key, err))
			continue
		}
		closed++
		g.log.Warn("closed an interrupted turn", "session", k.Key)
	}
	if len(errs) > 0 {
		g.setRecoverErr(fmt.Sprintf("%d interrupted turn(s) could not be closed: %v", len(errs), errs[0]))
		return closed, errors.Join(errs...)
	}
	g.setRecoverErr("")
	return closed, nil
}

func (g *Gateway) setRecoverErr(s string) {
	g.mu.Lock()
	g.recoverErr = s
	g.mu.Unlock()
}

// closeLeftover closes a turn of key that a crash left open and start-up
// could not close, before a new turn would hide it (BeginTurn replaces the
// open-turn marker). The caller holds the session's lane, so no turn of
// key runs.
func (g *Gateway) closeLeftover(ag *Agent, key engine.SessionKey) {
	e, ok, err := g.cfg.Sessions.Get(ag.ID, key)
	if err != nil || !ok || e.OpenTurn == "" {
		return
	}
	if err := g.cfg.Sessions.CloseInterrupted(ag.ID, key, InterruptedNote); err != nil {
		g.log.Error("could not close an interrupted turn", "session", key, "err", err)
		return
	}
	g.log.Warn("closed an interrupted turn left from before the last start", "session", key)
}

// Send handles one message from the CLI channel. emit receives the stream
// events (it is called from one goroutine at a time). The returned error is
// an *api.Error.
func (g *Gateway) Send(ctx context.Context, req api.SendRequest, emit func(api.Event)) (*api.Result, error) {
	if emit == nil {
		emit = func(api.Event) {}
	}
	var emitMu sync.Mutex
	safeEmit := func(ev api.Event) {
		emitMu.Lock()
		defer emitMu.Unlock()
		emit(ev)
	}
	text := strings.TrimSpace(req.Text)
	if text == "" {
		return nil, badRequest("message text is empty")
	}
	ag, key, err := g.target(req.AgentID, req.SessionKey)
	if err != nil {
		return nil, err
	}
	if cmd, args, ok := ParseCommand(text); ok {
		return g.command(ctx, ag, key, cmd, args, req, safeEmit)
	}
	if req.IdempotencyKey != "" {
		return g.sendIdempotent(ctx, ag, key, text, req, safeEmit)
	}
	return g.turn(ctx, ag, key, text, req.MessageID, safeEmit)
}

// turn runs one model turn in the session's lane; a non-empty messageID
// drops a repeat of the same id silently.
func (g *Gateway) turn(ctx context.Context, ag *Agent, key engine.SessionKey, text, messageID string, emit func(api.Event)) (*api.Result, error) {
	dedup := ""
	if messageID != "" {
		dedup = (&engine.Inbound{Channel: "cli", MessageID: messageID}).DedupKey()
	}
	return g.runTurn(ctx, ag, key, g.cliOrigin(ag, key, text), dedup, "", emit)
}

// RunTurn runs one model turn for a message from o in the session's lane:
// the door every producer of turns uses (engine/inbound for channel
// messages; a scheduler next). dedup is the message's dedup key ("":
// none): a repeat is answered with Command "duplicate".
func (g *Gateway) RunTurn(ctx context.Context, ag *Agent, key engine.SessionKey, o *Origin, dedup string, emit func(api.Event)) (*api.Result, error) {
	return g.runTurn(ctx, ag, key, o, dedup, "", emit)
}

// Command runs the slash command name (ParseCommand) in a session, as a
// channel message asks for it.
func (g *Gateway) Command(ctx context.Context, ag *Agent, key engine.SessionKey, name, args string, emit func(api.Event)) (*api.Result, error) {
	return g.command(ctx, ag, key, name, args, api.SendRequest{}, emit)
}

// AgentIDs lists the configured agents, in config order.
func (g *Gateway) AgentIDs() []string { return g.agentIDs() }

// Allowlist is the exec allowlist the owner manages (nil: none).
func (g *Gateway) Allowlist() Allowlist { return g.cfg.Allowlist }

// Lane waits for the session's lane (no turn of key runs until release):
// an import or a reset must not interleave with a turn.
func (g *Gateway) Lane(ctx context.Context, key engine.SessionKey) (release func(), err error) {
	release, _, err = g.lanes.Acquire(ctx, string(key))
	return release, err
}

// Delete removes the session key of agentID for good: its entry and its
// current transcript in one transaction (session.Manager.Delete), and
// returns the entry as it was. It waits for the session's lane first, as a
// reset does, so a running turn (or prewarm) ends on its own and is never
// cut under it; ctx ends the wait. What the gateway keeps in memory about
// the session goes too: the request shape a prewarm after /compact uses.
// The error is an *api.Error: not_found when there is no such session.
//
// An exec approval pending in the session refuses the delete (conflict)
// before any wait: its turn holds the lane until the owner answers, and a
// delete must not answer for them (allowing would run the command; a
// silent denial would be a decision nobody made). The owner denies it (or
// /stops the turn) and deletes again. An approval raised while Delete
// waits holds it like the rest of the turn, up to the approval timeout.
//
// Nothing else is kept per session: model and thinking overrides live in
// the entry; the cancel func of a running turn and an idempotent turn's
// log end with the turn; the dedup records of its messages stay in the
// store, so a retried message is still not run twice. A local model's
// KV cache slot is keyed by the session id, which no request names again:
// the runner evicts it when it needs the room (the gateway has no way to
// drop a runner's slot).
func (g *Gateway) Delete(ctx context.Context, agentID string, key engine.SessionKey) (session.Entry, error) {
	ag, key, err := g.target(agentID, string(key))
	if err != nil {
		return session.Entry{}, err
	}
	if id := g.pendingApprovalIn(key); id != "" {
		return session.Entry{}, &api.Error{Code: api.CodeConflict, Message: fmt.Sprintf(
			"session %s has a turn waiting for exec approval %s: answer it first (`openclaw approvals deny %s`), then delete the session", key, id, id)}
	}
	release, err := g.Lane(ctx, key)
	if err != nil {
		return session.Entry{}, &api.Error{Code: api.CodeAborted, Message: "cancelled while waiting for the session's running turn"}
	}
	defer release()
	e, err := g.cfg.Sessions.Delete(ag.ID, key)
	if errors.Is(err, session.ErrNotFound) {
		return session.Entry{}, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no session %s (see `openclaw sessions list`)", key)}
	}
	if err != nil {
		return session.Entry{}, g.Internal("delete the session", err)
	}
	g.mu.Lock()
	delete(g.shapes, key)
	g.mu.Unlock()
	g.log.Info("session deleted", "session", key, "sessionId", e.SessionID, "messages", e.Messages)
	return e, nil
}

// Busy reports whether a turn of the session runs or waits (the
// heartbeat's skipWhenBusy).
func (g *Gateway) Busy(key engine.SessionKey) bool { return g.lanes.Busy(string(key)) }

// Agent returns the configured agent id; nil when there is none.
func (g *Gateway) Agent(id string) *Agent { return g.agents[id] }

// Target resolves the agent and session key of a request: agentID ""
// is the default agent, key "" its main session. The error is an
// *api.Error.
func (g *Gateway) Target(agentID, key string) (*Agent, engine.SessionKey, error) {
	return g.target(agentID, key)
}

// DefaultAgent and MainKey are the routing defaults (agents.list's
// default, session.mainKey).
func (g *Gateway) DefaultAgent() string { return g.cfg.DefaultAgent }

// MainKey is the main session's key within an agent (session.mainKey).
func (g *Gateway) MainKey() string { return g.cfg.MainKey }

// Sessions is the session manager turns run over (the control API reads
// history and exports through it).
func (g *Gateway) Sessions() *session.Manager { return g.cfg.Sessions }

// OnStatus adds f to what Status reports (the channel side adds its
// accounts); call it before serving.
func (g *Gateway) OnStatus(f func(*api.Status)) {
	g.mu.Lock()
	g.statusHooks = append(g.statusHooks, f)
	g.mu.Unlock()
}

// target resolves the agent and session key of a request.
func (g *Gateway) target(agentID, key string) (*Agent, engine.SessionKey, error) {
	sk := engine.SessionKey(key)
	if key != "" {
		if err := sk.Valid(); err != nil {
			return nil, "", badRequest(err.Error())
		}
		if id := sk.AgentID(); id != "" {
			if agentID != "" && agentID != id {
				return nil, "", badRequest(fmt.Sprintf("session %s belongs to agent %q, not %q", key, id, agentID))
			}
			agentID = id
		}
	}
	if agentID == "" {
		agentID = g.cfg.DefaultAgent
	}
	ag, ok := g.agents[agentID]
	if !ok {
		return nil, "", &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("agent %q is not configured (agents: %s)", agentID, strings.Join(g.agentIDs(), ", "))}
	}
	if key == "" {
		sk = engine.AgentSessionKey(ag.ID, g.cfg.MainKey)
	}
	return ag, sk, nil
}

func (g *Gateway) agentIDs() []string {
	ids := make([]string, 0, len(g.cfg.Agents))
	for _, a := range g.cfg.Agents {
		ids = append(ids, a.ID)
	}
	return ids
}

// Internal records err as the gateway's last error (status shows it) and
// returns it as an *api.Error that says what could not be done.
func (g *Gateway) Internal(what string, err error) error {
	g.mu.Lock()
	g.lastError = what + ": " + err.Error()
	g.lastErrAt = g.cfg.Now()
	g.mu.Unlock()
	g.log.Error("internal error", "what", what, "err", err)
	return &api.Error{Code: api.CodeInternal, Message: "the gateway could not " + what + ": " + err.Error()}
}

func badRequest(msg string) *api.Error { return &api.Error{Code: api.CodeBadRequest, Message: msg} }

// preview is the first few hundred characters of a tool result's text.
func preview(r engine.ToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if c.Type == engine.BlockText {
			b.WriteString(c.Text)
		}
	}
	s := b.String()
	if len(s) > 300 {
		cut := 300
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
