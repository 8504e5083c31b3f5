package gateway

import (
	"context"
	"time"

	"github.com/openclaw-edge/edge/engine"
)

// Prewarming after a compaction (issue 24). A compaction changes the
// session's prompt prefix: the system prompt and tools stay, but the
// summary and the kept turns are new, and a local model evaluates all of
// it before the first word of the next reply (20–30 ms a token on a Pi).
// So as soon as a compaction ends — after a turn (trigger "threshold") or
// on /compact — the gateway sends that prefix to the local model in the
// background, with a one-token reply it throws away: the runner keeps the
// prefix in the session's KV slot, and the next message pays for itself
// only. The prefix ends with the beginning of the next message as far as
// it can be known — the same sender on the same channel: the trusted
// block up to its per-message fields (message id, time), with the runtime
// line a compaction makes the next message show again, 60 tokens of a
// small vocabulary. A message that differs (another channel) shares less
// of it; the runner's cache matches tokens exactly, so never wrongly.
//
//   - It holds the session's lane like a turn: a message that arrives
//     first waits for it (it would evaluate the same prefix anyway) and
//     never meets a half-built cache; /stop and Shutdown cancel it.
//   - It reads the context when it runs, so what it evaluates is what the
//     next turn sends; a reset session is skipped.
//   - Only the primary model, and only a local one: a remote provider
//     would bill for it, and a failover must not send it elsewhere.
//   - It writes nothing: no transcript entry, no usage.

// warmShape is what the next request of a session looks like, as a turn
// planned it: the (possibly restricted) agent, the model, the plan (system
// prompt, tools, counters) and the thinking level.
type warmShape struct {
	ag       *Agent
	info     ModelInfo
	plan     *turnPlan
	thinking engine.ThinkingLevel
	// next renders the known beginning of the session's next user
	// message after the given context; nil when unknown.
	next func(ctx []engine.Message) string
}

// maxShapes bounds the shapes remembered for /compact (one a session of a
// local model; a busy box with many group chats forgets the oldest).
const maxShapes = 64

// rememberShape keeps the shape of key's last turn for a later /compact,
// whose own plan does not know the turn's channel (the system prompt
// differs): only for a local primary.
func (g *Gateway) rememberShape(key engine.SessionKey, w warmShape) {
	if !w.info.Local || w.plan.forced {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.shapes[key]; !ok && len(g.shapes) >= maxShapes {
		for k := range g.shapes {
			delete(g.shapes, k) // any one: a forgotten shape only costs a slower next turn
			break
		}
	}
	g.shapes[key] = w
}

// shape returns the remembered shape of key's last turn.
func (g *Gateway) shape(key engine.SessionKey) (warmShape, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w, ok := g.shapes[key]
	return w, ok
}

// nextRequest is what key's next turn will send before the new message's
// own text, as its last turn planned it: the session's context and the
// known beginning of the next message (not after a user message: some
// templates require the roles to alternate). For prewarm and /status.
func (g *Gateway) nextRequest(w warmShape, key engine.SessionKey, info ModelInfo, sessionID string) (*engine.ChatRequest, error) {
	items, err := g.cfg.Sessions.ContextItems(w.ag.ID, key)
	if err != nil {
		return nil, err
	}
	msgs := make([]engine.Message, 0, len(items)+1)
	for i := range items {
		msgs = append(msgs, items[i].Message)
	}
	if w.next != nil && len(msgs) > 0 && msgs[len(msgs)-1].Role != engine.RoleUser {
		if p := w.next(msgs); p != "" {
			msgs = append(msgs, engine.UserText(p))
		}
	}
	req := w.plan.request(info, msgs)
	req.Thinking, req.SessionID = w.thinking, sessionID
	return req, nil
}

// prewarm evaluates key's current prompt prefix on its local primary model
// in the background (see the top of this file). The caller may hold the
// session's lane: the work starts once it is free.
func (g *Gateway) prewarm(key engine.SessionKey, w warmShape) {
	if !w.info.Local || w.plan.forced {
		return // a one-message degradation: the next turn's prompt differs
	}
	g.prewarms.Add(1)
	go func() {
		defer g.prewarms.Done()
		release, _, err := g.lanes.Acquire(context.Background(), string(key))
		if err != nil {
			return
		}
		defer release()
		ctx, _, done, err := g.startRunning(context.Background(), w.ag, key)
		if err != nil {
			return // shutting down
		}
		defer done()
		start := time.Now()
		e, ok, err := g.cfg.Sessions.Get(w.ag.ID, key)
		if err != nil || !ok || g.cfg.Sessions.Expired(e.UpdatedAt, g.cfg.Now()) {
			return // gone or reset since: nothing to warm
		}
		if ref := e.ModelOverride; ref == "" && w.ag.Model != w.info.Ref || ref != "" && ref != w.info.Ref {
			return // /model switched since: the next turn uses another model
		}
		// The primary alone: a failover must not send this elsewhere.
		model, info, _, err := g.cfg.Models.Resolve([]string{w.info.Ref}, nil)
		if err != nil || !info.Local {
			return
		}
		req, err := g.nextRequest(w, key, info, e.SessionID)
		if err != nil || len(req.Messages) == 0 {
			return
		}
		req.MaxTokens = 1
		if err := model.Stream(ctx, req, func(engine.Event) {}); err != nil {
			if ctx.Err() == nil {
				g.log.Warn("could not prewarm the prompt after a compaction; the next turn evaluates it", "session", key, "err", err)
			}
			return
		}
		g.log.Debug("prewarmed the prompt after a compaction", "session", key, "messages", len(req.Messages), "took", time.Since(start))
	}()
}
