package gateway

import "github.com/openclaw-edge/edge/engine"

// What the tests (package gateway_test, which may use gatewaytest and the
// control API) reach inside the turn core for.

// SetModels replaces the model resolver (a test's scripted window).
func (g *Gateway) SetModels(m Models) { g.cfg.Models = m }

// StatusText is /status's text for a session.
func (g *Gateway) StatusText(ag *Agent, key engine.SessionKey) string { return g.statusText(ag, key) }

// Followed reports whether a retry attached to some running turn: its
// owner's request stays subscribed (writing nowhere once cut), so a second
// subscriber is the retry.
func (g *Gateway) Followed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, l := range g.turnLogs {
		l.mu.Lock()
		n := len(l.subs)
		l.mu.Unlock()
		if n >= 2 {
			return true
		}
	}
	return false
}

// IdemDedupKey is the dedup key of an idempotent API send.
func IdemDedupKey(key string) string { return idemDedupKey(key) }

// WaitPrewarms waits for the prewarms started so far (prewarm.go).
func (g *Gateway) WaitPrewarms() { g.prewarms.Wait() }
