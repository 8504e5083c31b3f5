package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

// Retry bounds how SendRetry sends a message again after the connection
// dropped. Zero fields take the defaults: 8 retries, waiting 250 ms, then
// doubling up to 4 s (about 20 s in all: long enough for systemd to restart
// a crashed gateway, short enough that a user is not left waiting blind).
type Retry struct {
	Attempts   int           // retries after the first try; negative: none
	Backoff    time.Duration // first wait
	MaxBackoff time.Duration // longest wait
	// OnRetry, if set, is told before each wait (to show "reconnecting…").
	OnRetry func(attempt int, err error, wait time.Duration)
}

// NewIdempotencyKey returns a random key for one user message.
func NewIdempotencyKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b)
}

// Retriable reports whether err means the message may be sent again with
// the same idempotency key: the gateway was not reachable, or the
// connection broke before the turn's last event. Errors the gateway
// reported (*api.Error), a cancelled context and protocol errors are final.
func Retriable(err error) bool {
	var ae *api.Error
	if err == nil || errors.As(err, &ae) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return errors.Is(err, ErrGatewayDown) || errors.Is(err, ErrStreamEnded) || errors.Is(err, ErrConnectionLost)
}

// SendRetry is Send for a user message that must be answered exactly once
// although connections drop and gateways restart: it gives req an
// idempotency key when it has none and, on a retriable error, sends it
// again with the same key after a backoff, at most r.Attempts times (a
// gateway that is not running at the first try is reported at once). The
// gateway attaches a retry to the turn the key started (never a second
// turn): its remaining events, its recorded reply, or the note that a
// crash interrupted it (an *api.Error with code "interrupted").
//
// Events already passed to on are not passed again: a re-attached stream
// replays its turn's numbered events, and those at or below the last seen
// number are skipped.
func (c *Client) SendRetry(ctx context.Context, req api.SendRequest, on func(api.Event), r Retry) (*api.Result, error) {
	if req.IdempotencyKey == "" {
		req.IdempotencyKey = NewIdempotencyKey()
	}
	switch {
	case r.Attempts == 0:
		r.Attempts = 8
	case r.Attempts < 0:
		r.Attempts = 0
	}
	if r.Backoff <= 0 {
		r.Backoff = 250 * time.Millisecond
	}
	if r.MaxBackoff <= 0 {
		r.MaxBackoff = 4 * time.Second
	}
	var (
		turn string
		seq  int
	)
	filter := func(ev api.Event) {
		if ev.Turn != "" {
			if ev.Turn == turn && ev.Seq <= seq {
				return // shown before the connection dropped
			}
			turn, seq = ev.Turn, ev.Seq
		}
		if on != nil {
			on(ev)
		}
	}
	wait := r.Backoff
	reached := false // some attempt got through to the gateway
	for attempt := 0; ; attempt++ {
		res, err := c.Send(ctx, req, filter)
		if err == nil || !Retriable(err) || attempt >= r.Attempts {
			return res, err
		}
		// A gateway that was down from the start is reported at once
		// (nothing was sent; waiting would only delay "start it"); one that
		// went away mid-message is waited for, as systemd restarts it.
		down := errors.Is(err, ErrGatewayDown)
		if down && !reached {
			return nil, err
		}
		reached = reached || !down
		if r.OnRetry != nil {
			r.OnRetry(attempt+1, err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(wait*2, r.MaxBackoff)
	}
}
