package gateway

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/tool"
)

// commands lists the slash commands with their help line (shared with
// clients through the API package).
var commands = api.Commands

// ParseCommand splits "/name args" when name is a known command. Unknown
// slash words are ordinary text: a user may well start a message with "/".
func ParseCommand(text string) (name, args string, ok bool) {
	if !strings.HasPrefix(text, "/") {
		return "", "", false
	}
	word, rest, _ := strings.Cut(text[1:], " ")
	if i := strings.IndexAny(word, "\n\t"); i >= 0 {
		rest = word[i+1:] + " " + rest
		word = word[:i]
	}
	word = strings.ToLower(word)
	for _, c := range commands {
		if c.Name == word {
			return word, strings.TrimSpace(rest), true
		}
	}
	return "", "", false
}

func (g *Gateway) command(ctx context.Context, ag *Agent, key engine.SessionKey, name, args string, req api.SendRequest, emit func(api.Event)) (*api.Result, error) {
	reply := func(text string) (*api.Result, error) {
		r := &api.Result{Reply: text, SessionKey: string(key), Command: name}
		if e, ok, err := g.cfg.Sessions.Get(ag.ID, key); err == nil && ok {
			r.SessionID = e.SessionID
		}
		return r, nil
	}
	switch name {
	case "help":
		var b strings.Builder
		b.WriteString("Commands:\n")
		for _, c := range commands {
			fmt.Fprintf(&b, "  %-34s %s\n", c.Usage, c.Help)
		}
		return reply(strings.TrimRight(b.String(), "\n"))

	case "stop":
		g.mu.Lock()
		cancel, ok := g.running[key]
		g.mu.Unlock()
		if !ok {
			return reply("Nothing is running in this session.")
		}
		cancel()
		return reply("Stopped the running turn.")

	case "approve", "deny":
		text, err := g.approveCommand(name, args, key)
		if err != nil {
			return nil, err
		}
		return reply(text)

	case "new", "reset":
		release, _, err := g.lanes.Acquire(ctx, string(key))
		if err != nil {
			return nil, &api.Error{Code: api.CodeAborted, Message: "stopped while waiting for the session"}
		}
		prev, _, _ := g.cfg.Sessions.Get(ag.ID, key) // what the reset clears, to say so
		e, err := g.cfg.Sessions.Reset(ag.ID, key, session.Meta{ChatType: string(engine.ChatDirect), Channel: "cli", DisplayName: "CLI", Workspace: ag.Workspace})
		release()
		if err != nil {
			return nil, g.Internal("reset the session", err)
		}
		if args != "" {
			return g.turn(ctx, ag, key, args, req.MessageID, emit)
		}
		text := "Started a new session (" + e.SessionID + ")."
		var cleared []string
		if prev.ModelOverride != "" {
			cleared = append(cleared, "the model override ("+prev.ModelOverride+")")
		}
		if prev.ThinkingLevel != "" {
			cleared = append(cleared, "the thinking level ("+prev.ThinkingLevel+")")
		}
		if len(cleared) > 0 {
			text += " Cleared " + strings.Join(cleared, " and ") + ": back to the agent's defaults."
		}
		return &api.Result{Reply: text, SessionKey: string(key), SessionID: e.SessionID, Command: name}, nil

	case "status":
		return reply(g.statusText(ag, key))

	case "model":
		if args == "" {
			cur := ag.Model
			if e, ok, _ := g.cfg.Sessions.Get(ag.ID, key); ok && e.ModelOverride != "" {
				cur = e.ModelOverride + " (session override)"
			}
			if cur == "" {
				cur = "none configured"
			}
			return reply("Model: " + cur + "\nAvailable: " + strings.Join(g.cfg.Models.Refs(), ", "))
		}
		override := args
		if args == "default" {
			override = ""
		} else if _, _, _, err := g.cfg.Models.Resolve([]string{args}, nil); err != nil {
			return nil, badRequest(fmt.Sprintf("unknown model %q: %v (available: %s)", args, err, strings.Join(g.cfg.Models.Refs(), ", ")))
		}
		if _, err := g.updateSession(ag, key, func(e *session.Entry) error { e.ModelOverride = override; return nil }); err != nil {
			return nil, err
		}
		if override == "" {
			return reply("This session uses the agent's model again: " + ag.Model)
		}
		return reply("This session now uses " + override + ".")

	case "think":
		levels := []string{"off", "low", "medium", "high"}
		if !slices.Contains(levels, args) {
			return nil, badRequest("usage: /think off|low|medium|high")
		}
		if _, err := g.updateSession(ag, key, func(e *session.Entry) error { e.ThinkingLevel = args; return nil }); err != nil {
			return nil, err
		}
		return reply("Thinking: " + args)

	case "compact":
		text, err := g.compactCommand(ctx, ag, key, args)
		if err != nil {
			return nil, err
		}
		return reply(text)
	}
	return nil, badRequest("unknown command /" + name)
}

// updateSession changes a session entry, creating the session first when it
// does not exist yet (so /model before the first message works).
func (g *Gateway) updateSession(ag *Agent, key engine.SessionKey, fn func(*session.Entry) error) (session.Entry, error) {
	if _, ok, err := g.cfg.Sessions.Get(ag.ID, key); err != nil {
		return session.Entry{}, g.Internal("read the session", err)
	} else if !ok {
		if _, err := g.cfg.Sessions.Reset(ag.ID, key, session.Meta{ChatType: string(engine.ChatDirect), Channel: "cli", DisplayName: "CLI", Workspace: ag.Workspace}); err != nil {
			return session.Entry{}, g.Internal("create the session", err)
		}
	}
	e, err := g.cfg.Sessions.Update(ag.ID, key, fn)
	if err != nil {
		return e, g.Internal("update the session", err)
	}
	return e, nil
}

func (g *Gateway) statusText(ag *Agent, key engine.SessionKey) string {
	var b strings.Builder
	st := g.Status()
	fmt.Fprintf(&b, "OpenClaw Edge %s — up %s, %d sessions\n", st.Version, time.Duration(st.UptimeSeconds*float64(time.Second)).Round(time.Second), st.Sessions)
	fmt.Fprintf(&b, "Agent: %s   Session: %s\n", ag.ID, key)
	model := ag.Model
	if e, ok, _ := g.cfg.Sessions.Get(ag.ID, key); ok {
		fmt.Fprintf(&b, "Session id: %s   Messages: %d\n", e.SessionID, e.Messages)
		fmt.Fprintf(&b, "Tokens: %d in / %d out / %d context\n", e.InputTokens, e.OutputTokens, e.ContextTokens)
		if e.CompactionCount > 0 || !e.MemoryFlushAt.IsZero() {
			fmt.Fprintf(&b, "Compactions: %d", e.CompactionCount)
			if !e.MemoryFlushAt.IsZero() {
				fmt.Fprintf(&b, "   Last memory flush: %s (cycle %d)", e.MemoryFlushAt.Format(time.RFC3339), e.MemoryFlushCompactionCount)
			}
			b.WriteString("\n")
		}
		if e.ModelOverride != "" {
			model = e.ModelOverride + " (session override)"
		}
		if e.ThinkingLevel != "" {
			fmt.Fprintf(&b, "Thinking: %s\n", e.ThinkingLevel)
		}
		if e.LastModel != "" {
			fmt.Fprintf(&b, "Last answered by: %s\n", e.LastModel)
		}
	}
	if model == "" {
		model = "none configured"
	}
	fmt.Fprintf(&b, "Model: %s", model)
	if line := g.nextTurnLine(ag, key); line != "" {
		b.WriteString("\n" + line)
	}
	if st.LastFailover != "" {
		fmt.Fprintf(&b, "\nLast failover (%s): %s", st.LastFailoverAt.Format(time.RFC3339), st.LastFailover)
	}
	for _, r := range st.Runners {
		fmt.Fprintf(&b, "\nLocal model loaded: %s (pid %d, %d session slots × %d tokens, runner variant %s)", r.Model, r.PID, r.Slots, r.ContextLen, cmp.Or(r.Variant, "not reported"))
	}
	if st.LastError != "" {
		fmt.Fprintf(&b, "\nLast error (%s): %s", st.LastErrorAt.Format(time.RFC3339), st.LastError)
	}
	if st.Sandbox != "" {
		fmt.Fprintf(&b, "\nExec sandbox: %s", st.Sandbox)
	}
	for _, c := range st.Channels {
		fmt.Fprintf(&b, "\nChannel %s (%s): %s", c.Channel, c.Account, c.State)
		if c.Reason != "" && c.State != "linked" {
			fmt.Fprintf(&b, " — %s", c.Reason)
		}
		if c.OutboxPending > 0 {
			fmt.Fprintf(&b, ", %d waiting to be sent", c.OutboxPending)
		}
	}
	b.WriteString(stateLines(st))
	b.WriteString(g.approvalLines(key))
	return b.String()
}

// nextTurnLine says how many prompt tokens the session's next turn will
// evaluate before its first word on a local model (issue 24): the prompt
// as the last turn planned it, with the new message's known beginning
// (prewarm.go), measured against the runner's cache. "" when the session
// has no turn planned on a local model yet.
func (g *Gateway) nextTurnLine(ag *Agent, key engine.SessionKey) string {
	w, ok := g.shape(key)
	if !ok || w.info.Cached == nil {
		return ""
	}
	e, ok, err := g.cfg.Sessions.Get(ag.ID, key)
	if err != nil || !ok {
		return ""
	}
	req, err := g.nextRequest(w, key, w.info, e.SessionID)
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cached, total, loaded, err := w.info.Cached(ctx, req)
	switch {
	case err != nil:
		return "Next turn: cannot tell what is cached now (" + userMessage(err) + ")"
	case !loaded:
		return fmt.Sprintf("Next turn: %s is not loaded; it loads with the next message (with the sessions it saved, if any)", w.info.Ref)
	}
	return fmt.Sprintf("Next turn: %d prompt tokens to evaluate before the first word, plus your message (%d of %d cached)", total-cached, cached, total)
}

// compactCommand runs /compact [instructions] in the session's lane.
func (g *Gateway) compactCommand(ctx context.Context, ag *Agent, key engine.SessionKey, instructions string) (string, error) {
	release, _, err := g.lanes.Acquire(ctx, string(key))
	if err != nil {
		return "", &api.Error{Code: api.CodeAborted, Message: "stopped while waiting for the session"}
	}
	defer release()
	// Like a turn: bounded by the agent's timeout, stoppable with /stop,
	// counted as running for Shutdown.
	ctx, _, done, err := g.startRunning(ctx, ag, key)
	if err != nil {
		return "", err
	}
	defer done()
	e, ok, err := g.cfg.Sessions.Get(ag.ID, key)
	if err != nil {
		return "", g.Internal("read the session", err)
	}
	if !ok || g.cfg.Sessions.Expired(e.UpdatedAt, g.cfg.Now()) {
		return "Nothing to compact: this session has no history yet.", nil
	}
	ref := ag.Model
	if e.ModelOverride != "" {
		ref = e.ModelOverride
	}
	if ref == "" {
		return "", &api.Error{Code: api.CodeModelFailed, Message: NoModelHelp}
	}
	model, info, _, err := g.cfg.Models.Resolve(append([]string{ref}, ag.Fallbacks...), nil)
	if err != nil {
		return "", &api.Error{Code: api.CodeModelFailed, Message: userMessage(err)}
	}
	env := tool.Env{Workspace: ag.Workspace, AgentID: ag.ID, SessionKey: key}
	plan, err := g.planTurn(ctx, ag, info, g.promptParams(ag, key, info, ag.Thinking), env, placeholder[0])
	if err != nil {
		return "", &api.Error{Code: api.CodeModelFailed, Message: userMessage(err)}
	}
	res, did, err := g.compactor(ag, key, model, info, plan).compact(ctx, TriggerManual, strings.TrimSpace(instructions))
	if err != nil {
		return "", &api.Error{Code: api.CodeModelFailed, Message: "compaction failed: " + userMessage(err)}
	}
	if !did {
		return "Nothing to compact yet: the session holds fewer than two turns.", nil
	}
	// The next turn's prompt as the last turn planned it (this plan does
	// not know the turn's channel): prewarmed once /compact has answered.
	if w, ok := g.shape(key); ok && w.info.Ref == info.Ref {
		g.prewarm(key, w)
	}
	after, _, _ := g.cfg.Sessions.Get(ag.ID, key)
	return fmt.Sprintf("Compacted: %d → %d tokens (compaction #%d of this session). Recent turns are kept verbatim.", res.TokensBefore, after.ContextTokens, after.CompactionCount), nil
}
