package command

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
)

// errTurnStopped: the user stopped the turn (Ctrl-C or /stop); what was
// kept has been printed.
var errTurnStopped = errors.New("turn stopped")

// stopTimeout bounds the /stop request itself (not the wait for the turn
// to end, which a second Ctrl-C cuts short).
const stopTimeout = 10 * time.Second

// runTurn sends req and shows its stream in v. Ctrl-C, or a value on
// userStop (/stop typed during the turn), stops the turn ON THE GATEWAY: a
// /stop for the turn's session — closing the stream alone would leave the
// turn running, since the gateway lets a turn outlive its client — then it
// waits for the stream to end, prints what the session kept and returns
// errTurnStopped. A second Ctrl-C while the stop is in flight returns
// errInterrupted at once.
func (a *app) runTurn(ctx context.Context, cl *client.Client, req api.SendRequest, v *turnView, userStop <-chan struct{}) (*api.Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	v.stopping = make(chan struct{})

	st := &stopper{cl: cl, req: req, ctx: ctx, fail: func(err error) {
		v.note("openclaw: could not stop the turn: %v (Ctrl-C again to leave)", err)
	}}
	v.accepted = st.accepted

	type outcome struct {
		res *api.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := cl.SendRetry(ctx, req, v.event, a.retry(v))
		done <- outcome{res, err}
	}()
	intr := make(chan struct{}, 1)
	release := take(ctx, func() {
		select {
		case intr <- struct{}{}:
		default:
		}
	})
	defer release()

	stopping := false
	stop := func() {
		if stopping {
			return
		}
		stopping = true
		close(v.stopping)
		v.note("⏹ stopping the turn… (Ctrl-C again to leave)")
		st.request()
	}
	for {
		select {
		case o := <-done:
			if !stopping {
				return o.res, o.err
			}
			return a.afterStop(v, o.res, o.err)
		case <-userStop:
			userStop = nil
			stop()
		case <-intr:
			if stopping {
				cancel()
				v.breakLines()
				return nil, errInterrupted
			}
			stop()
		}
	}
}

// afterStop reports how a stopped turn ended.
func (a *app) afterStop(v *turnView, res *api.Result, err error) (*api.Result, error) {
	var ae *api.Error
	switch {
	case err == nil:
		// The turn ended before the stop reached it: it is whole.
		v.note("⏹ the turn had already finished")
		return res, nil
	case errors.As(err, &ae) && ae.Code == api.CodeAborted:
		v.breakLines()
		fmt.Fprintln(v.err, v.keptLine())
		return nil, errTurnStopped
	}
	return nil, err
}

// keptLine says what a stopped turn left in the session: the gateway keeps
// the user's message, the tool results that came back and the reply text
// streamed so far (marked as aborted), and drops tool calls in flight.
func (v *turnView) keptLine() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	kept := "your message"
	if v.toolResults > 0 {
		kept += fmt.Sprintf(", %d tool result(s)", v.toolResults)
	}
	if n := v.replyRunes; n > 0 {
		kept += fmt.Sprintf(" and the partial reply (%d chars)", n)
	} else {
		kept += " (no reply yet)"
	}
	return "⏹ stopped; the session keeps " + kept
}

// stopper sends the /stop for a turn once both the user asked and the
// turn's session is known: from its accepted event, or — for a message the
// gateway has not accepted yet (queued behind another turn) — only once it
// is, so that the /stop never aborts someone else's turn.
type stopper struct {
	cl   *client.Client
	req  api.SendRequest
	ctx  context.Context
	fail func(error)

	mu        sync.Mutex
	key       string
	known     bool
	requested bool
	sent      bool
}

func (s *stopper) accepted(key string) {
	s.mu.Lock()
	s.key, s.known = key, true
	go1 := s.requested && !s.sent
	s.sent = s.sent || go1
	s.mu.Unlock()
	if go1 {
		go s.send(key)
	}
}

func (s *stopper) request() {
	s.mu.Lock()
	s.requested = true
	// A slash command (/compact) has no accepted event: stop its session.
	if !s.known && len(s.req.Text) > 0 && s.req.Text[0] == '/' {
		s.key, s.known = s.req.SessionKey, true
	}
	go1 := s.known && !s.sent
	s.sent = s.sent || go1
	key := s.key
	s.mu.Unlock()
	if go1 {
		go s.send(key)
	}
}

func (s *stopper) send(key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), stopTimeout)
	defer cancel()
	_, err := s.cl.Send(ctx, api.SendRequest{Text: "/stop", SessionKey: key, AgentID: s.req.AgentID}, nil)
	if err != nil && s.ctx.Err() == nil {
		s.fail(err)
	}
}
