package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/agent"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/crashpoint"
	"github.com/openclaw-edge/edge/engine/delivery"
	"github.com/openclaw-edge/edge/engine/prompt"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/tool"
	"github.com/openclaw-edge/edge/engine/transcript"
)

// Origin is where a turn's message came from and where its reply goes:
// the CLI (the control API) or a channel (engine/inbound builds those).
type Origin struct {
	// In is the normalized message; its Text is what the sender wrote.
	In engine.Inbound
	// Trusted carries what only the gateway knows (mention, subject,
	// group history); Timestamp and Context are filled by RunTurn.
	Trusted prompt.Trusted
	Meta    session.Meta
	// Main: the session is the agent's main one (MEMORY.md is loaded).
	Main bool
	// Owner: the sender is an owner.
	Owner bool
	// Created records the files this turn's tools created (what a
	// non-owner's reply may attach); RunTurn sets it when nil.
	Created *tool.Created
	// Reply, when set, turns the reply into records (outbox items) that
	// are committed with the end of the turn. nil: the CLI, which gets the
	// reply in the API's response.
	Reply func(delivery.Reply) ([]session.Record, error)
	// Stopping, when set, reports whether the origin's side is shutting
	// down: a turn aborted then was cut by a restart, and its sender is
	// told so.
	Stopping func() bool
	// Depth is how far down a chain of sub-agents the turn runs (0: a
	// message's or a job's turn; n: a sub-agent n spawns below one),
	// handed to its tools (tool.Env.Depth).
	Depth int
}

// cliOrigin is the origin of a message from the control API.
func (g *Gateway) cliOrigin(ag *Agent, key engine.SessionKey, text string) *Origin {
	return &Origin{
		In:      engine.Inbound{Channel: "cli", ChatType: engine.ChatDirect, SenderID: "owner", Text: text},
		Trusted: prompt.Trusted{Channel: "cli", Provider: "cli", ChatType: engine.ChatDirect},
		Meta:    session.Meta{ChatType: string(engine.ChatDirect), Channel: "cli", DisplayName: "CLI"},
		Main:    key == engine.AgentSessionKey(ag.ID, g.cfg.MainKey),
		Owner:   true,
	}
}

// runTurn runs one model turn in the session's lane. dedup is the inbound
// message's dedup key ("" = none); idemKey, when set, makes a duplicate
// answer with the recorded outcome of the turn it started.
func (g *Gateway) runTurn(ctx context.Context, ag *Agent, key engine.SessionKey, o *Origin, dedup, idemKey string, emit func(api.Event)) (*api.Result, error) {
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
	if o.In.Channel == "cli" {
		o.In.MessageID = strings.TrimPrefix(dedup, "cli:")
		if idemKey != "" {
			o.In.MessageID = idemKey
		}
	}
	if o.In.Timestamp.IsZero() {
		o.In.Timestamp = now
	}

	// What the session is now: its overrides pick the model, and its
	// context says which volatile parts (runtime line, daily notes) the
	// new message must carry (prompt.TurnContext).
	prev, hasPrev, err := g.cfg.Sessions.Get(ag.ID, key)
	if err != nil {
		return nil, g.Internal("read the session", err)
	}
	var prior []engine.Message
	if (!hasPrev || g.cfg.Sessions.Expired(prev.UpdatedAt, now)) && ag.SessionStart != nil {
		ag.SessionStart() // memory sync at session start (docs/design.md §6); must not block
	}
	if hasPrev && !g.cfg.Sessions.Expired(prev.UpdatedAt, now) {
		items, err := g.cfg.Sessions.ContextItems(ag.ID, key)
		if err != nil {
			return nil, g.Internal("read the session context", err)
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
	base.Channel, base.ChatType, base.MainSession = o.In.Channel, o.In.ChatType, o.Main
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

	trusted := o.Trusted
	trusted.Timestamp, trusted.Context = o.In.Timestamp.In(ag.Location), tc
	trusted.SenderShown = prompt.SenderShown(prior, o.In, trusted)
	user := engine.UserText(prompt.UserMessage(o.In, trusted))
	meta := o.Meta
	meta.Workspace = ag.Workspace
	t, err := g.cfg.Sessions.BeginTurn(ag.ID, key, meta, dedup, user)
	if errors.Is(err, session.ErrDuplicate) {
		if idemKey != "" {
			return g.recorded(key, dedup, idemKey, emit)
		}
		return &api.Result{SessionKey: string(key), Suppressed: true, Command: "duplicate"}, nil
	}
	if err != nil {
		return nil, g.Internal("record the inbound message", err)
	}
	// Committed: from here the message is answered or, after a crash,
	// closed with a note. Only now is it acknowledged.
	emit(api.Event{Type: api.EventAccepted, Accepted: &api.Accepted{SessionKey: string(key), SessionID: t.SessionID, IdempotencyKey: idemKey}})
	crashpoint.At("after-accept")
	res := &api.Result{SessionKey: string(key), SessionID: t.SessionID}
	if modelErr != nil {
		return nil, g.failTurn(ag, key, o, res, modelErr)
	}
	res.Model = info.Ref

	if o.Created == nil {
		o.Created = &tool.Created{}
	}
	env := tool.Env{Workspace: ag.Workspace, AgentID: ag.ID, SessionKey: key, Approver: &approver{g: g, agentID: ag.ID, key: key, emit: emit}, Created: o.Created, Depth: o.Depth}
	if !o.Owner {
		// Someone other than the owner (an approved contact, a group
		// member) chats without tools: the tools act on the owner's
		// workspace — its MEMORY.md, AGENTS.md, files and shell — and a
		// tool policy per sender is not built yet. Deny by default.
		// Nor does their conversation reach the owner's memory notes
		// (the silent memory flush writes memory/<day>.md, which the main
		// session loads).
		restricted := *ag
		restricted.Allowed = func(string) bool { return false }
		restricted.Compaction.FlushEnabled = false
		ag = &restricted
	}
	// The policy the turn runs under, after the restriction above: what a
	// sub-agent it spawns may at most be allowed (engine/tool/sessions).
	env.Allowed = ag.Allowed
	plan, err := g.planTurn(turnCtx, ag, info, base, env, user)
	if err != nil {
		return nil, g.failTurn(ag, key, o, res, err)
	}
	comp := g.compactor(ag, key, model, info, plan)
	runtime := ""
	if modelErr == nil {
		runtime = g.runtimeLine(base, info, thinking)
	}
	shape := warmShape{ag: ag, info: info, plan: plan, thinking: thinking,
		next: func(ctx []engine.Message) string {
			// What the next message from the same sender begins with, as
			// it will be rendered after ctx.
			t := trusted
			t.Context = prompt.NewTurnContext(ctx, runtime, nil)
			t.SenderShown = prompt.SenderShown(ctx, o.In, t)
			return prompt.NextMessagePrefix(o.In, t)
		}}
	g.rememberShape(key, shape)
	history := t.History
	// The silent memory flush, then compaction, when the context is
	// large: both before the model sees the new message.
	if tokens, err := plan.tokens(turnCtx, info, history); err != nil {
		return nil, g.failTurn(ag, key, o, res, err)
	} else {
		if comp.flushDue(t.Entry, tokens) && compactable(history) {
			comp.flush(turnCtx, t.SessionID, history[:len(history)-1])
		}
		if tokens > plan.budget.Input {
			if history, err = g.compactToFit(turnCtx, comp, plan, info, TriggerBudget); err != nil {
				return nil, g.failTurn(ag, key, o, res, err)
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
				return nil, g.Internal("record a reply", aerr)
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
			return nil, g.failTurnAfter(ag, key, o, res, err, usage, contextTokens, final)
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
	// The reply's delivery to a channel (the outbox) is queued in the
	// same transaction as the reply and the end marker.
	var records []session.Record
	if o.Reply != nil && !reply.Silent {
		if records, err = o.Reply(reply); err != nil {
			return nil, g.Internal("queue the reply", err)
		}
	}
	crashpoint.At("before-end")
	// The reply and the end marker: one transaction.
	if err := g.cfg.Sessions.EndTurnWith(ag.ID, key, usage, contextTokens, res.Model, records, closing...); err != nil {
		return nil, g.Internal("finish the turn", err)
	}
	crashpoint.At("after-end")
	g.mu.Lock()
	g.lastModel = res.Model
	g.mu.Unlock()
	if contextTokens > comp.settings.CompactAt(plan.budget.Window.Tokens) {
		// The turn is answered and committed; compacting now keeps the
		// next one inside the window. A failure here costs nothing but a
		// later compaction.
		if _, did, err := comp.compact(turnCtx, TriggerThreshold, ""); err != nil {
			g.log.Warn("compaction after the turn failed", "session", key, "err", err)
		} else if did {
			g.prewarm(key, shape) // once this turn has released the lane
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
const NoModelHelp = "no model is configured. Add a provider and pick a model in the gateway's config file (~/.openclaw-edge/openclaw.json unless --config, --state-dir or $OPENCLAW_CONFIG_PATH say otherwise; `openclaw config validate` names it), e.g.\n" +
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
func (g *Gateway) failTurn(ag *Agent, key engine.SessionKey, o *Origin, res *api.Result, err error) error {
	return g.failTurnAfter(ag, key, o, res, err, engine.Usage{}, 0, nil)
}

// failTurnAfter writes a visible error entry, closes the turn and returns the
// user-facing error. final is the loop's held-back last assistant message
// (nil if none): a partial reply the model produced before failing, which
// then is the error entry, committed with the end of the turn.
// LastModel is left alone: the model did not answer.
func (g *Gateway) failTurnAfter(ag *Agent, key engine.SessionKey, o *Origin, res *api.Result, err error, usage engine.Usage, contextTokens int, final *engine.Message) error {
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
	var records []session.Record
	if o != nil && o.Reply != nil && (kind != engine.ErrAborted || (o.Stopping != nil && o.Stopping())) {
		// The channel's sender learns that the turn failed; only an owner
		// sees why (it may name providers and config keys).
		text := "⚠️ Sorry, I could not answer that. Please try again later."
		switch {
		case kind == engine.ErrAborted:
			text = "⚠️ I was restarting and could not finish answering. Please send that again."
		case o.Owner:
			text = "⚠️ " + msg
		}
		if r, e := o.Reply(delivery.Reply{Text: text}); e != nil {
			g.log.Error("could not queue a failed turn's notice", "session", key, "err", e)
		} else {
			records = r
		}
	}
	if e := g.cfg.Sessions.EndTurnWith(ag.ID, key, usage, contextTokens, "", records, closing...); e != nil {
		g.log.Error("could not close a failed turn", "session", key, "err", e)
	}
	// A stopped turn (the user's /stop or Ctrl-C, a shutdown) did not
	// fail: status's last error is for what went wrong.
	if kind != engine.ErrAborted {
		g.mu.Lock()
		g.lastError = err.Error()
		g.lastErrAt = g.cfg.Now()
		g.mu.Unlock()
	}
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
