package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/delivery"
	"github.com/openclaw-edge/edge/engine/session"
)

// Idempotent sends (api.SendRequest.IdempotencyKey).
//
// A message with an idempotency key is deduplicated under "cli-idem:<key>".
// While its turn runs in this process, a turnLog keeps the turn's events in
// memory; a retry with the same key (the CLI's connection dropped) attaches
// to it, gets the events again (numbered, so the client skips what it
// showed) and then the live rest. Once the turn has ended, or after a
// restart, a retry is answered from the store: the dedup record names the
// answering transcript entry (session.Manager.Outcome). Either way a retry
// never starts a second turn.

// InterruptedNote is the assistant entry that closes a turn a crash cut
// short, and the message a retry of that turn gets.
const InterruptedNote = "The gateway stopped before this turn finished, so no complete reply was sent. Please send your message again."

// idemDedupKey is the dedup key of an idempotency key: its own namespace,
// apart from the channels' message ids.
func idemDedupKey(key string) string { return "cli-idem:" + key }

// maxIdempotencyKey bounds a client's key (it becomes a bbolt key).
const maxIdempotencyKey = 200

// turnLog is the in-memory event log of one running idempotent turn, and
// its broadcaster: every event is numbered, kept, and sent to every
// attached stream. It lives from before the turn's inbound commit until
// the turn's end is durable, so a retry either finds it or finds the
// outcome in the store.
type turnLog struct {
	id string

	mu     sync.Mutex
	events []api.Event
	subs   map[int]func(api.Event)
	nsub   int
	done   chan struct{}
	res    *api.Result
	err    error
}

func newTurnLog() *turnLog {
	return &turnLog{id: engine.NewID(10), subs: map[int]func(api.Event){}, done: make(chan struct{})}
}

// publish numbers ev, keeps it and sends it to every subscriber. The
// subscribers are called under the lock, so each sees events in order and
// a new subscriber's replay cannot interleave with a live event.
func (l *turnLog) publish(ev api.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev.Turn, ev.Seq = l.id, len(l.events)+1
	l.events = append(l.events, ev)
	for _, s := range l.subs {
		s(ev)
	}
}

// subscribe replays the log to emit and sends it every later event.
func (l *turnLog) subscribe(emit func(api.Event)) (unsubscribe func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range l.events {
		emit(ev)
	}
	id := l.nsub
	l.nsub++
	l.subs[id] = emit
	return func() {
		l.mu.Lock()
		delete(l.subs, id)
		l.mu.Unlock()
	}
}

// finish records the turn's end and wakes the followers.
func (l *turnLog) finish(res *api.Result, err error) {
	l.mu.Lock()
	l.res, l.err = res, err
	l.mu.Unlock()
	close(l.done)
}

// follow streams the turn to emit until it ends (or ctx does) and returns
// its outcome.
func (l *turnLog) follow(ctx context.Context, emit func(api.Event)) (*api.Result, error) {
	unsubscribe := l.subscribe(emit)
	defer unsubscribe()
	select {
	case <-l.done:
	case <-ctx.Done():
		return nil, &api.Error{Code: api.CodeAborted, Message: "stopped following the turn"}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.res, l.err
}

// sendIdempotent runs or attaches to the turn of an idempotency key.
func (g *Gateway) sendIdempotent(ctx context.Context, ag *Agent, key engine.SessionKey, text string, req api.SendRequest, emit func(api.Event)) (*api.Result, error) {
	if len(req.IdempotencyKey) > maxIdempotencyKey || strings.ContainsFunc(req.IdempotencyKey, func(r rune) bool { return r < ' ' }) {
		return nil, badRequest(fmt.Sprintf("idempotencyKey must be at most %d printable characters", maxIdempotencyKey))
	}
	dedup := idemDedupKey(req.IdempotencyKey)
	g.mu.Lock()
	l, running := g.turnLogs[dedup]
	if !running {
		l = newTurnLog()
		g.turnLogs[dedup] = l
	}
	g.mu.Unlock()
	if running {
		g.log.Info("retry attached to its running turn", "session", key)
		return l.follow(ctx, emit)
	}
	unsubscribe := l.subscribe(emit)
	res, err := g.runTurn(ctx, ag, key, g.cliOrigin(ag, key, text), dedup, req.IdempotencyKey, l.publish)
	unsubscribe()
	// The turn's end is durable now (or it never started): later retries
	// are answered from the store.
	g.mu.Lock()
	delete(g.turnLogs, dedup)
	g.mu.Unlock()
	l.finish(res, err)
	return res, err
}

// recorded answers a retried idempotency key from the store: the reply, the
// error, or the interrupted-turn note of the turn it started.
func (g *Gateway) recorded(key engine.SessionKey, dedup, idemKey string, emit func(api.Event)) (*api.Result, error) {
	out, found, err := g.cfg.Sessions.Outcome(dedup)
	if err != nil {
		return nil, g.Internal("look up the earlier turn of this message", err)
	}
	if !found || out.State == session.OutcomeUnknown {
		// Seen, but nothing says how it ended: drop it as before.
		return &api.Result{SessionKey: string(key), Suppressed: true, Command: "duplicate"}, nil
	}
	if out.Key != "" {
		key = out.Key
	}
	emit(api.Event{Type: api.EventAccepted, Accepted: &api.Accepted{SessionKey: string(key), SessionID: out.SessionID, IdempotencyKey: idemKey}})
	g.log.Info("retry answered from the store", "session", key, "outcome", out.State)
	switch out.State {
	case session.OutcomeOpen:
		// Not running here (it would have a turn log), so a crash cut it and
		// closing it failed: say so rather than wait for nothing.
		return nil, &api.Error{Code: api.CodeInterrupted, Message: InterruptedNote}
	case session.OutcomeInterrupted:
		msg := InterruptedNote
		if out.Answer != nil && out.Answer.Text() != "" {
			msg = out.Answer.Text()
		}
		return nil, &api.Error{Code: api.CodeInterrupted, Message: msg}
	case session.OutcomeFailed:
		msg := "the turn failed before its reply was complete"
		if out.Answer != nil {
			// failTurnAfter's own entries start with the warning sign; a
			// partial reply cut by the error does not.
			if t, ok := strings.CutPrefix(out.Answer.Text(), "⚠️ "); ok && strings.TrimSpace(t) != "" {
				msg = strings.TrimSpace(t)
			}
		}
		code := api.CodeModelFailed
		if out.Answer != nil && out.Answer.StopReason == engine.StopAborted {
			code = api.CodeAborted
		}
		return nil, &api.Error{Code: code, Message: msg}
	}
	res := &api.Result{SessionKey: string(key), SessionID: out.SessionID, Replayed: true}
	if out.Answer != nil {
		reply := delivery.Parse(out.Answer.Text())
		res.Suppressed = reply.Silent
		if !reply.Silent {
			res.Reply, res.Media = reply.Text, reply.Media
		}
		if out.Answer.Provider != "" && out.Answer.Model != "" {
			res.Model = out.Answer.Provider + "/" + out.Answer.Model
		}
	}
	return res, nil
}

// stateLines are the /status lines about crash recovery and the state
// database ("" when all is well), each starting with a newline.
func stateLines(st api.Status) string {
	var b strings.Builder
	if st.InterruptedOpen > 0 {
		fmt.Fprintf(&b, "\nInterrupted turns not closed yet: %d (closed at the next start or message in their session)", st.InterruptedOpen)
		if st.InterruptedError != "" {
			fmt.Fprintf(&b, ": %s", st.InterruptedError)
		}
	}
	if st.StateWarning != "" {
		fmt.Fprintf(&b, "\nState database: %s", st.StateWarning)
	}
	return b.String()
}
