package gateway

import (
	"context"
	"fmt"
	"time"
)

// Shutdown stops the gateway's turns: no new turn starts, every running
// turn's context is cancelled, and Shutdown waits until they have closed
// their transcripts (an aborted turn ends with a visible "stopped" entry
// and its turn marked closed) or ctx ends. Call it before shutting the
// HTTP server down: a turn's stream keeps its connection busy, so the
// server would otherwise wait for the model. The error names the turns
// still running when ctx ended; the next start closes them as interrupted.
func (g *Gateway) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	g.closing = true
	g.mu.Unlock()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		// Cancel on every round: a turn that was waiting for its lane
		// when Shutdown began registers later (and is refused there).
		g.mu.Lock()
		n := g.active
		for _, cancel := range g.running {
			cancel()
		}
		g.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d turn(s) still running at shutdown: %w", n, ctx.Err())
		case <-tick.C:
		}
	}
}
