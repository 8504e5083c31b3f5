// Package gateway runs one inbound message end to end — slash commands,
// session lane, durable inbound, context assembly, the agent loop with its
// tools, delivery — and serves the control API over it (DESIGN.md §3, §9).
//
// It sees the rest of the engine only through small pieces handed to New:
// the session manager, the tool registry, a model resolver and per-agent
// settings. The appliance builds those from the config file; tests build them
// by hand.
//
// Crash safety follows DESIGN.md §4: the inbound message (with its dedup key)
// is committed before any model is called and only then acknowledged (the
// accepted event); every intermediate assistant message (with tool calls)
// and tool result is its own transaction; the final reply is committed
// together with the turn's end marker (EndTurn), so a crash can never leave
// a reply that looks unanswered; and a turn a crash interrupted is closed at
// the next start with a visible error entry (RecoverInterrupted) rather than
// silently re-run: re-running could repeat a tool's side effects. A turn
// that cannot be closed then (full disk) is logged, reported by status and
// closed later; it never keeps the gateway from starting.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/agent"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/delivery"
	"github.com/openclaw-edge/edge/engine/prompt"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/tool"
	"github.com/openclaw-edge/edge/engine/transcript"
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
	// then fallbacks; DESIGN.md §7), calling onSwitch (which may be nil) at
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
	if cmd, args, ok := parseCommand(text); ok {
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
	return g.runTurn(ctx, ag, key, text, dedup, "", emit)
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

// runTurn runs one model turn in the session's lane. dedup is the inbound
// message's dedup key ("" = none); idemKey, when set, makes a duplicate
// answer with the recorded outcome of the turn it started.
func (g *Gateway) runTurn(ctx context.Context, ag *Agent, key engine.SessionKey, text, dedup, idemKey string, emit func(api.Event)) (*api.Result, error) {
	if g.lanes.Busy(string(key)) {
		emit(api.Event{Type: api.EventQueued, Text: "waiting for the current turn of " + string(key)})
	}
	release, _, err := g.lanes.Acquire(ctx, string(key))
	if err != nil {
		return nil, &api.Error{Code: api.CodeAborted, Message: "stopped while waiting for the session"}
	}
	defer release()

	turnCtx, timeout, done, err := g.startRunning(ctx, ag, key)
	if err != nil {
		return nil, err
	}
	defer done()

	g.closeLeftover(ag, key)
	now := g.cfg.Now()
	messageID := strings.TrimPrefix(dedup, "cli:")
	if idemKey != "" {
		messageID = idemKey
	}

	// What the session is now: its overrides pick the model, and its
	// context says which volatile parts (runtime line, daily notes) the
	// new message must carry (prompt.TurnContext).
	prev, hasPrev, err := g.cfg.Sessions.Get(ag.ID, key)
	if err != nil {
		return nil, g.internal("read the session", err)
	}
	var prior []engine.Message
	if hasPrev && !g.cfg.Sessions.Expired(prev.UpdatedAt, now) {
		items, err := g.cfg.Sessions.ContextItems(ag.ID, key)
		if err != nil {
			return nil, g.internal("read the session context", err)
		}
		for i := range items {
			prior = append(prior, items[i].Message)
		}
	}
	ref := ag.Model
	thinking := ag.Thinking
	if hasPrev {
		if prev.ModelOverride != "" {
			ref = prev.ModelOverride
		}
		if prev.ThinkingLevel != "" {
			thinking = engine.ThinkingLevel(prev.ThinkingLevel)
		}
	}
	// final is the latest text-only assistant message: held back, because
	// if it is the reply it is committed together with the end of the turn
	// (one transaction), and if the loop goes on (a continuation) it is
	// written first.
	var final *engine.Message
	onSwitch := func(sw Switch) {
		text := fmt.Sprintf("%s → %s (%s)", sw.From, sw.To, sw.Reason)
		if sw.Detail != "" {
			text += ": " + sw.Detail
		}
		emit(api.Event{Type: api.EventFailover, Text: text})
		data, _ := json.Marshal(sw) // plain strings
		entry := transcript.Entry{Type: transcript.EntryCustom, CustomType: FailoverEntryType, Data: data}
		if _, err := g.cfg.Sessions.AppendEntries(ag.ID, key, entry); err != nil {
			g.log.Error("could not record a failover", "session", key, "err", err)
		}
		g.mu.Lock()
		g.lastFailover, g.lastFoAt = text, g.cfg.Now()
		g.mu.Unlock()
		g.log.Warn("model failover", "session", key, "from", sw.From, "to", sw.To, "reason", sw.Reason, "detail", sw.Detail)
	}
	var (
		model    agent.Model
		info     ModelInfo
		answered func() string
		modelErr error
	)
	if ref == "" {
		modelErr = &engine.ModelError{Kind: engine.ErrNoModel, Message: NoModelHelp}
	} else {
		model, info, answered, modelErr = g.cfg.Models.Resolve(append([]string{ref}, ag.Fallbacks...), onSwitch)
	}
	base := g.promptParams(ag, key, info, thinking)
	tc := prompt.TurnContext{}
	if modelErr == nil {
		// Notes ride in the user message: on a small window they must
		// leave it room (a quarter of the window, in characters: about a
		// third of its tokens in the worst vocabularies).
		np := base
		if np.BootstrapMaxChars <= 0 {
			np.BootstrapMaxChars = prompt.DefaultBootstrapMaxChars
			if np.LocalModel {
				np.BootstrapMaxChars = prompt.LocalBootstrapMaxChars
			}
		}
		np.BootstrapMaxChars = min(np.BootstrapMaxChars, max(200, g.window(ag, info).Tokens/4))
		notes, err := prompt.DailyMemory(np)
		if err != nil {
			g.log.Warn("could not read the daily memory notes", "agent", ag.ID, "err", err)
		}
		tc = prompt.NewTurnContext(prior, g.runtimeLine(base, info, thinking), notes)
	}

	in := engine.Inbound{Channel: "cli", ChatType: engine.ChatDirect, SenderID: "owner", MessageID: messageID, Text: text, Timestamp: now}
	user := engine.UserText(prompt.UserMessage(in, prompt.Trusted{Channel: "cli", Provider: "cli", ChatType: engine.ChatDirect, MessageID: messageID, Timestamp: now.In(ag.Location), Context: tc}))
	meta := session.Meta{ChatType: string(engine.ChatDirect), Channel: "cli", DisplayName: "CLI", Workspace: ag.Workspace}
	t, err := g.cfg.Sessions.BeginTurn(ag.ID, key, meta, dedup, user)
	if errors.Is(err, session.ErrDuplicate) {
		if idemKey != "" {
			return g.recorded(key, dedup, idemKey, emit)
		}
		return &api.Result{SessionKey: string(key), Suppressed: true, Command: "duplicate"}, nil
	}
	if err != nil {
		return nil, g.internal("record the inbound message", err)
	}
	// Committed: from here the message is answered or, after a crash,
	// closed with a note. Only now is it acknowledged.
	emit(api.Event{Type: api.EventAccepted, Accepted: &api.Accepted{SessionKey: string(key), SessionID: t.SessionID, IdempotencyKey: idemKey}})
	crashpoint("after-accept")
	res := &api.Result{SessionKey: string(key), SessionID: t.SessionID}
	if modelErr != nil {
		return nil, g.failTurn(ag, key, res, modelErr)
	}
	res.Model = info.Ref

	env := tool.Env{Workspace: ag.Workspace, AgentID: ag.ID, SessionKey: key, Approver: &approver{g: g, agentID: ag.ID, key: key, emit: emit}}
	plan, err := g.planTurn(turnCtx, ag, info, base, env, user)
	if err != nil {
		return nil, g.failTurn(ag, key, res, err)
	}
	comp := g.compactor(ag, key, model, info, plan)
	history := t.History
	// The silent memory flush, then compaction, when the context is
	// large: both before the model sees the new message.
	if tokens, err := plan.tokens(turnCtx, info, history); err != nil {
		return nil, g.failTurn(ag, key, res, err)
	} else {
		if comp.flushDue(t.Entry, tokens) && compactable(history) {
			comp.flush(turnCtx, t.SessionID, history[:len(history)-1])
		}
		if tokens > plan.budget.Input {
			if history, err = g.compactToFit(turnCtx, comp, plan, info, TriggerBudget); err != nil {
				return nil, g.failTurn(ag, key, res, err)
			}
		}
	}
	// The reply cap: the configured one; a local model's budget share; for
	// a remote model without one, the provider's own default (a cap of
	// ours would cut reasoning models short), its window checked by the
	// provider (an overflow error compacts and retries).
	maxTokens := ag.MaxTokens
	if maxTokens == 0 {
		maxTokens = info.MaxTokens
	}
	room := plan.room
	switch {
	case maxTokens == 0 && info.Local:
		maxTokens = plan.budget.Output
	case maxTokens == 0:
		room = nil
	}

	filter := delivery.NewStreamFilter()
	flush := func() {
		if s := filter.Flush(); s != "" {
			emit(api.Event{Type: api.EventDelta, Text: s})
		}
		filter = delivery.NewStreamFilter()
	}
	hooks := agent.Hooks{
		Event: func(ev engine.Event) {
			if ev.Type == engine.EventTextDelta {
				if s := filter.Write(ev.Text); s != "" {
					emit(api.Event{Type: api.EventDelta, Text: s})
				}
			}
		},
		Message: func(m engine.Message) error {
			if m.Role == engine.RoleAssistant {
				// Stamp the model that really answered (after a failover).
				if a := answered(); a != "" {
					m.Provider, m.Model, _ = strings.Cut(refOnly(a), "/")
				}
			}
			if final != nil {
				// Something follows it, so it was not the reply.
				if _, err := g.cfg.Sessions.Append(ag.ID, key, *final); err != nil {
					return err
				}
				final = nil
			}
			if m.Role == engine.RoleUser && m.Text() == agent.ContinuePrompt {
				// A [continue] round is ours, not the user's: a custom
				// entry, outside any later context (the parts of the reply
				// are joined when the context is rebuilt).
				data, _ := json.Marshal(map[string]string{"prompt": agent.ContinuePrompt})
				_, err := g.cfg.Sessions.AppendEntries(ag.ID, key, transcript.Entry{Type: transcript.EntryCustom, CustomType: ContinueEntryType, Data: data, Timestamp: transcript.Timestamp(g.cfg.Now())})
				return err
			}
			if m.Role == engine.RoleAssistant && len(m.ToolCalls()) == 0 {
				final = &m
				return nil
			}
			_, err := g.cfg.Sessions.Append(ag.ID, key, m)
			return err
		},
		ToolCall: func(c engine.ToolCall) {
			flush()
			emit(api.Event{Type: api.EventToolCall, Tool: &api.Tool{ID: c.ID, Name: c.Name, Arguments: c.Arguments}})
		},
		ToolResult: func(c engine.ToolCall, r engine.ToolResult) {
			emit(api.Event{Type: api.EventToolResult, Tool: &api.Tool{ID: c.ID, Name: c.Name, IsError: r.IsError, Preview: preview(r)}})
		},
	}
	run := agent.Run{
		Model:         model,
		Provider:      info.Provider,
		ModelID:       info.ID,
		API:           info.API,
		System:        plan.prompt.System,
		CacheBoundary: plan.prompt.CacheBoundary,
		History:       history,
		Tools:         plan.set,
		MaxTokens:     maxTokens,
		Thinking:      thinking,
		SessionID:     t.SessionID,
		Room:          room,
		// A reply is continued only while the context stays below the
		// compaction threshold: on a small window a reply that would fill
		// it ends instead, leaving room for the next turn in the cache.
		MayContinue: func(ctx context.Context, req *engine.ChatRequest) bool {
			n, err := plan.count(ctx, req)
			return err == nil && n+plan.budget.Output <= comp.settings.CompactAt(plan.budget.Window.Tokens)
		},
	}
	out, err := agent.Loop(turnCtx, agent.Config{MaxTurns: ag.MaxTurns}, run, hooks)
	if err != nil && engine.KindOf(err) == engine.ErrContextOverflow {
		// The provider says the prompt is too long (our count was off, or
		// the tools' results grew it): compact and try once more, from
		// what the transcript holds now.
		g.log.Warn("context overflow: compacting and retrying", "session", key, "err", err)
		if final != nil {
			if _, aerr := g.cfg.Sessions.Append(ag.ID, key, *final); aerr != nil {
				return nil, g.internal("record a reply", aerr)
			}
			final = nil
		}
		if run.History, err = g.compactToFit(turnCtx, comp, plan, info, TriggerOverflow); err == nil {
			first := out
			out, err = agent.Loop(turnCtx, agent.Config{MaxTurns: ag.MaxTurns}, run, hooks)
			out.Usage.Add(first.Usage)
		}
	}
	if !filter.Silent() {
		flush()
	}
	usage := out.Usage
	res.Usage = &usage
	contextTokens := out.LastUsage.Input + out.LastUsage.CacheRead + out.LastUsage.Output
	if err != nil {
		if errors.Is(err, agent.ErrTurnLimit) && out.Text == "" {
			out.Text = "I stopped because this turn reached its limit of tool calls. Ask me to continue if needed."
			if final == nil {
				// Record the reply the user gets, so a retry gets it too.
				final = &engine.Message{Role: engine.RoleAssistant, Content: []engine.Block{engine.TextBlock(out.Text)}, StopReason: engine.StopEnd, Timestamp: time.Now().UnixMilli()}
			}
		} else {
			if engine.KindOf(err) == engine.ErrAborted && turnCtx.Err() == context.DeadlineExceeded {
				err = &engine.ModelError{Kind: engine.ErrTimeout, Message: fmt.Sprintf("the turn took longer than %s (agents.defaults.timeoutSeconds)", timeout), Err: err}
			}
			return nil, g.failTurnAfter(ag, key, res, err, usage, contextTokens, final)
		}
	}
	reply := delivery.Parse(out.Text)
	if a := answered(); a != "" {
		res.Model = refOnly(a)
	}
	var closing []engine.Message
	if final != nil {
		closing = append(closing, *final)
	}
	crashpoint("before-end")
	// The reply and the end marker: one transaction.
	if err := g.cfg.Sessions.EndTurn(ag.ID, key, usage, contextTokens, res.Model, closing...); err != nil {
		return nil, g.internal("finish the turn", err)
	}
	crashpoint("after-end")
	g.mu.Lock()
	g.lastModel = res.Model
	g.mu.Unlock()
	if contextTokens > comp.settings.CompactAt(plan.budget.Window.Tokens) {
		// The turn is answered and committed; compacting now keeps the
		// next one inside the window. A failure here costs nothing but a
		// later compaction.
		if _, _, err := comp.compact(turnCtx, TriggerThreshold, ""); err != nil {
			g.log.Warn("compaction after the turn failed", "session", key, "err", err)
		}
	}
	res.Suppressed = reply.Silent
	if !reply.Silent {
		res.Reply = reply.Text
		res.Media = reply.Media
	}
	return res, nil
}

// startRunning bounds the work of one session's lane (a turn, /compact) by
// the agent's timeout and registers it, so /stop can cancel it and Shutdown
// waits for it; done undoes both. The caller holds the session's lane.
func (g *Gateway) startRunning(ctx context.Context, ag *Agent, key engine.SessionKey) (context.Context, time.Duration, func(), error) {
	timeout := ag.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	g.mu.Lock()
	if g.closing {
		g.mu.Unlock()
		cancel()
		return nil, 0, nil, &api.Error{Code: api.CodeAborted, Message: "the gateway is shutting down; send the message again once it is back"}
	}
	g.running[key] = cancel
	g.active++
	g.mu.Unlock()
	return runCtx, timeout, func() {
		cancel()
		g.mu.Lock()
		delete(g.running, key)
		g.active--
		g.mu.Unlock()
	}, nil
}

// FailoverEntryType is the customType of the transcript entry that records
// a failover (data: a Switch).
const FailoverEntryType = "openclaw.failover"

// refOnly drops the "@profile" of a failover label.
func refOnly(label string) string {
	ref, _, _ := strings.Cut(label, "@")
	return ref
}

// NoModelHelp is the reply when no model is configured.
const NoModelHelp = "no model is configured. Add a provider and pick a model in ~/.openclaw/openclaw.json, e.g.\n" +
	"  { models: { providers: { openai: { api: 'openai-completions', baseUrl: 'https://api.openai.com/v1', apiKey: '${OPENAI_API_KEY}', models: [{ id: 'gpt-4o-mini' }] } } },\n" +
	"    agents: { defaults: { model: 'openai/gpt-4o-mini' } } }\n" +
	"then restart the gateway (check the file with `openclaw config validate`)"

func (g *Gateway) promptParams(ag *Agent, key engine.SessionKey, info ModelInfo, thinking engine.ThinkingLevel) prompt.Params {
	skills, err := prompt.LoadSkills(ag.SkillDirs...)
	if err != nil {
		g.log.Warn("some skills could not be loaded", "agent", ag.ID, "err", err)
	}
	return prompt.Params{
		Mode:              ag.PromptMode,
		AgentID:           ag.ID,
		AgentName:         ag.Name,
		Workspace:         ag.Workspace,
		Now:               g.cfg.Now(),
		Location:          ag.Location,
		Skills:            skills,
		SessionKey:        key,
		Channel:           "cli",
		ChatType:          engine.ChatDirect,
		MainSession:       key == engine.AgentSessionKey(ag.ID, g.cfg.MainKey),
		Model:             info.Ref,
		Thinking:          string(thinking),
		Host:              g.host,
		OS:                runtime.GOOS,
		Arch:              runtime.GOARCH,
		LocalModel:        info.Local,
		BootstrapMaxChars: ag.BootstrapMaxChars,
	}
}

// runtimeLine is the turn's runtime line; for a model that takes /think
// through its chat template it says how ("thinking=off (enable_thinking)").
func (g *Gateway) runtimeLine(p prompt.Params, info ModelInfo, thinking engine.ThinkingLevel) string {
	if info.Thinking != "" && thinking != "" {
		p.Thinking = string(thinking) + " (" + info.Thinking + ")"
	}
	return prompt.RuntimeLine(p)
}

// compactToFit compacts the session so its context fits the budget's input
// share, pruning old tool results in memory if the summary and the kept
// turns are still too big, and returns the new context.
func (g *Gateway) compactToFit(ctx context.Context, comp *compactor, plan *turnPlan, info ModelInfo, trigger string) ([]engine.Message, error) {
	if _, _, err := comp.compact(ctx, trigger, ""); err != nil {
		return nil, err
	}
	_, msgs, err := comp.contextMessages()
	if err != nil {
		return nil, err
	}
	tokens, err := plan.tokens(ctx, info, msgs)
	if err != nil {
		return nil, err
	}
	if tokens <= plan.budget.Input {
		return msgs, nil
	}
	count := func(ctx context.Context, m []engine.Message) (int, error) { return plan.tokens(ctx, info, m) }
	pruned, _, err := agent.Prune(ctx, msgs, plan.budget.Input, count)
	if err != nil {
		return nil, err
	}
	if tokens, err = plan.tokens(ctx, info, pruned); err != nil {
		return nil, err
	}
	if tokens > plan.budget.Input {
		return nil, &engine.ModelError{Kind: engine.ErrContextOverflow, Provider: info.Provider, Model: info.ID,
			Message: fmt.Sprintf("the conversation still takes %d tokens after compaction, more than the %d the window leaves (%s)", tokens, plan.budget.Input, windowText(plan.budget.Window))}
	}
	return pruned, nil
}

func windowText(w prompt.Window) string {
	if w.Knob == "" {
		return fmt.Sprintf("window %d tokens", w.Tokens)
	}
	return fmt.Sprintf("window %d tokens, set by %s", w.Tokens, w.Knob)
}

// failTurn records a turn that failed before the model produced anything.
func (g *Gateway) failTurn(ag *Agent, key engine.SessionKey, res *api.Result, err error) error {
	return g.failTurnAfter(ag, key, res, err, engine.Usage{}, 0, nil)
}

// failTurnAfter writes a visible error entry, closes the turn and returns the
// user-facing error. final is the loop's held-back last assistant message
// (nil if none): a partial reply the model produced before failing, which
// then is the error entry, committed with the end of the turn.
// LastModel is left alone: the model did not answer.
func (g *Gateway) failTurnAfter(ag *Agent, key engine.SessionKey, res *api.Result, err error, usage engine.Usage, contextTokens int, final *engine.Message) error {
	kind := engine.KindOf(err)
	msg := userMessage(err)
	code := api.CodeModelFailed
	if kind == engine.ErrAborted {
		code = api.CodeAborted
	}
	var closing []engine.Message
	// A partial assistant message the model produced before failing carries
	// the error already; otherwise record the error itself.
	if final != nil {
		closing = append(closing, *final)
		if closing[0].StopReason != engine.StopError && closing[0].StopReason != engine.StopAborted {
			closing[0].StopReason = engine.StopError
		}
	} else {
		stop := engine.StopError
		if kind == engine.ErrAborted {
			stop = engine.StopAborted
		}
		closing = append(closing, engine.Message{
			Role:         engine.RoleAssistant,
			Content:      []engine.Block{engine.TextBlock("⚠️ " + msg)},
			StopReason:   stop,
			ErrorMessage: err.Error(),
			Timestamp:    time.Now().UnixMilli(),
		})
	}
	if e := g.cfg.Sessions.EndTurn(ag.ID, key, usage, contextTokens, "", closing...); e != nil {
		g.log.Error("could not close a failed turn", "session", key, "err", e)
	}
	g.mu.Lock()
	g.lastError = err.Error()
	g.lastErrAt = g.cfg.Now()
	g.mu.Unlock()
	g.log.Warn("turn failed", "session", key, "kind", kind, "err", err)
	return &api.Error{Code: code, Message: msg}
}

// userMessage turns an error into words safe to show a user.
func userMessage(err error) string {
	var me *engine.ModelError
	var oe *prompt.OverflowError
	if errors.As(err, &oe) {
		return oe.Error()
	}
	if !errors.As(err, &me) {
		return "the turn failed: " + err.Error()
	}
	switch me.Kind {
	case engine.ErrNoModel:
		return me.Message
	case engine.ErrAborted:
		return "stopped"
	case engine.ErrAuth:
		return fmt.Sprintf("the model provider rejected the credentials (%s); check models.providers.%s.apiKey", me.Error(), me.Provider)
	case engine.ErrRateLimit:
		return "the model provider is rate limiting requests (" + me.Error() + "); try again shortly"
	case engine.ErrBilling:
		return "the model provider refused for billing or quota reasons (" + me.Error() + ")"
	case engine.ErrUnreachable:
		return "the model could not be reached (" + me.Error() + ")"
	case engine.ErrTimeout:
		return "the model timed out (" + me.Error() + ")"
	case engine.ErrContextOverflow:
		return "the conversation does not fit the model's context window even after compaction (" + me.Error() + ")"
	}
	return "the model failed: " + me.Error()
}

func (g *Gateway) internal(what string, err error) error {
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

// newID returns a short random id from an alphabet without look-alikes.
func newID(n int) string {
	const alphabet = "abcdefghjkmnpqrstuvwxyz23456789"
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
