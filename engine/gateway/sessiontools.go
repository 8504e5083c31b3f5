package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/prompt"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/tool"
	"github.com/openclaw-edge/edge/engine/transcript"
)

// SessionTools is the turn core as the session tools (engine/tool/sessions:
// sessions_list, sessions_history, sessions_send, sessions_spawn,
// session_status) reach it, through their own interface: it reads one
// agent's sessions and runs turns in them. Who may ask for what (the
// caller's own agent, never its own session, the policy a sub-agent gets)
// is the tools' business; these methods only refuse what cannot work (an
// unknown agent, a key of another agent, a session that does not exist).
type SessionTools struct{ g *Gateway }

// SessionTools returns the gateway's side of the session tools.
func (g *Gateway) SessionTools() *SessionTools { return &SessionTools{g: g} }

// agent resolves agentID and checks that key is a valid key of it.
func (s *SessionTools) agent(agentID string, key engine.SessionKey) (*Agent, error) {
	ag := s.g.agents[agentID]
	if ag == nil {
		return nil, fmt.Errorf("agent %q is not configured", agentID)
	}
	if key == "" {
		return ag, nil
	}
	if err := key.Valid(); err != nil {
		return nil, err
	}
	if id := key.AgentID(); id != agentID {
		return nil, fmt.Errorf("session %s is not agent %s's", key, agentID)
	}
	return ag, nil
}

// List lists the agent's sessions, most recently updated first, each
// marked Own when only the owner's side writes to it (OwnSession).
func (s *SessionTools) List(agentID string) ([]tool.SessionInfo, error) {
	if _, err := s.agent(agentID, ""); err != nil {
		return nil, err
	}
	list, err := s.g.cfg.Sessions.List(agentID)
	if err != nil {
		return nil, fmt.Errorf("list the sessions: %w", err)
	}
	out := make([]tool.SessionInfo, 0, len(list))
	for _, k := range list {
		out = append(out, tool.SessionInfo{Key: k.Key, UpdatedAt: k.Entry.UpdatedAt, DisplayName: k.Entry.DisplayName,
			Channel: k.Entry.Channel, Messages: k.Entry.Messages, Model: k.Entry.LastModel,
			Own: OwnSession(k.Key, s.g.cfg.MainKey)})
	}
	return out, nil
}

// History returns the last limit messages (all when limit <= 0) of the
// session's active branch: what the conversation is now, without the
// branches an edit or a retry left behind. Own and DisplayName tell the
// tool whose words they are.
func (s *SessionTools) History(agentID string, key engine.SessionKey, limit int) (tool.SessionHistory, error) {
	if _, err := s.agent(agentID, key); err != nil {
		return tool.SessionHistory{}, err
	}
	e, ok, err := s.g.cfg.Sessions.Get(agentID, key)
	if err != nil {
		return tool.SessionHistory{}, fmt.Errorf("read session %s: %w", key, err)
	}
	if !ok {
		return tool.SessionHistory{}, fmt.Errorf("there is no session %s", key)
	}
	_, entries, err := s.g.cfg.Sessions.History(agentID, key)
	if errors.Is(err, session.ErrNotFound) {
		return tool.SessionHistory{}, fmt.Errorf("there is no session %s", key)
	}
	if err != nil {
		return tool.SessionHistory{}, fmt.Errorf("read session %s: %w", key, err)
	}
	h := tool.SessionHistory{Own: OwnSession(key, s.g.cfg.MainKey), DisplayName: e.DisplayName}
	for _, en := range transcript.Path(entries, transcript.ActiveLeaf(entries)) {
		if en.Message != nil {
			h.Messages = append(h.Messages, *en.Message)
		}
	}
	if limit > 0 && len(h.Messages) > limit {
		h.Messages = h.Messages[len(h.Messages)-limit:]
	}
	return h, nil
}

// Status is /status of the session.
func (s *SessionTools) Status(agentID string, key engine.SessionKey) (string, error) {
	ag, err := s.agent(agentID, key)
	if err != nil {
		return "", err
	}
	if err := s.exists(agentID, key); err != nil {
		return "", err
	}
	return s.g.statusText(ag, key), nil
}

func (s *SessionTools) exists(agentID string, key engine.SessionKey) error {
	_, ok, err := s.g.cfg.Sessions.Get(agentID, key)
	switch {
	case err != nil:
		return fmt.Errorf("read session %s: %w", key, err)
	case !ok:
		return fmt.Errorf("there is no session %s", key)
	}
	return nil
}

// Send starts a turn for req.Text in an existing session of the agent, in
// that session's lane, as the owner's side, at req.Depth (a turn
// sessions_send started is one hop from a person and cannot send on); the
// outcome arrives on the channel when the turn ends. The reply is recorded
// in that session and goes nowhere else: the session's chat, if it has
// one, is not written to. The turn does not end with ctx (the caller's):
// it is the other session's, stopped by that session's /stop, the agent's
// timeout or shutdown. How many may run at once and how long to wait for
// one is the tool's business (engine/tool/sessions).
func (s *SessionTools) Send(ctx context.Context, req tool.SendRequest) (<-chan tool.SendResult, error) {
	ag, err := s.agent(req.AgentID, req.Key)
	if err != nil {
		return nil, err
	}
	if req.Key == "" {
		return nil, errors.New("no session key")
	}
	if err := s.exists(req.AgentID, req.Key); err != nil {
		return nil, err
	}
	main := req.Key == engine.AgentSessionKey(ag.ID, s.g.cfg.MainKey)
	own := main || OwnSession(req.Key, s.g.cfg.MainKey)
	o := &Origin{
		In:      engine.Inbound{Channel: "session", ChatType: engine.ChatDirect, SenderID: "session", SenderName: "another session", Text: req.Text},
		Trusted: prompt.Trusted{Channel: "session", Provider: "session", ChatType: engine.ChatDirect},
		Main:    main,
		// The turn has tools only in a session of the owner's own: one
		// with a channel contact's or a group's history would run the
		// owner's tools over text a stranger wrote (a prompt injection
		// one hop away). Elsewhere it runs as their turns do, without.
		Owner: own,
		Depth: req.Depth,
	}
	done := make(chan tool.SendResult, 1) // never blocks the turn's goroutine
	go func() {
		res, err := s.g.runTurn(context.WithoutCancel(ctx), ag, req.Key, o, "", "", func(api.Event) {})
		out := tool.SendResult{Own: own, Err: err}
		if err == nil {
			out.Reply = res.Reply
		}
		done <- out
	}()
	return done, nil
}

// Spawn runs a sub-agent's one turn in its own new session and returns
// its final reply. The turn runs under ctx — the spawning tool call's — so
// whatever ends the parent's turn (its /stop, its timeout, shutdown) ends
// the sub-agent's too; its own key's /stop works as well. It runs as the
// owner's turn (only owners' turns can spawn) with the minimal prompt
// (prompt.ModeMinimal: no SOUL.md, USER.md or MEMORY.md), req.Allowed as
// its whole tool policy, and no memory flush: one task's scratch session
// does not write the owner's memory notes.
func (s *SessionTools) Spawn(ctx context.Context, req tool.SpawnRequest) (tool.SpawnResult, error) {
	base, err := s.agent(req.AgentID, req.Key)
	if err != nil {
		return tool.SpawnResult{}, err
	}
	if req.Key == "" {
		return tool.SpawnResult{}, errors.New("no session key for the sub-agent")
	}
	child := *base
	child.PromptMode = prompt.ModeMinimal
	child.Allowed = req.Allowed
	if child.Allowed == nil {
		child.Allowed = func(string) bool { return false }
	}
	child.Compaction.FlushEnabled = false
	child.SessionStart = nil
	if req.Model != "" {
		child.Model = req.Model
	}
	name := "subagent"
	if req.Label != "" {
		name += ": " + req.Label
	}
	o := &Origin{
		In: engine.Inbound{Channel: "subagent", ChatType: engine.ChatDirect, ChatID: string(req.Parent), SenderID: "parent",
			SenderName: "parent session", Text: req.Message},
		Trusted: prompt.Trusted{Channel: "subagent", Provider: "subagent", ChatType: engine.ChatDirect},
		Meta:    session.Meta{ChatType: string(engine.ChatDirect), Channel: "subagent", DisplayName: name},
		Owner:   true,
		Depth:   req.Depth,
	}
	res, err := s.g.runTurn(ctx, &child, req.Key, o, "", "", func(api.Event) {})
	if err != nil {
		return tool.SpawnResult{}, err
	}
	return tool.SpawnResult{Reply: res.Reply, Model: res.Model}, nil
}

// OwnSession reports whether key is a session only the owner's side
// writes to: the main session, a scheduled job's (cron:), a sub-agent's
// (subagent:), the heartbeat's, or one the CLI named. A session that
// routing made for a channel chat (engine/routing: "direct:<peer>",
// "<channel>:direct:<peer>", "<channel>:<account>:direct:<peer>",
// "<channel>:group|channel|room:<id>") is not: its history holds text
// other people wrote, so a turn the owner's side starts there (a cron
// job bound to it, sessions_send) runs without tools. It is decided by
// the key, which nobody can change, not by the session's metadata, which
// every turn rewrites.
func OwnSession(key engine.SessionKey, mainKey string) bool {
	rest, ok := strings.CutPrefix(string(key), "agent:"+key.AgentID()+":")
	if !ok {
		return false
	}
	switch {
	case rest == mainKey, rest == "heartbeat",
		strings.HasPrefix(rest, "cron:"), strings.HasPrefix(rest, "subagent:"):
		return true
	}
	for _, seg := range strings.Split(rest, ":") {
		switch seg {
		case "direct", "dm", "group", "channel", "room":
			return false
		}
	}
	return true
}
