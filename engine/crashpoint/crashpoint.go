//go:build !crashpoints

// Package crashpoint marks places where the crash test (make test-crash,
// build tag crashpoints) can kill the gateway on purpose: in a turn, after
// the inbox write, after a send. In a normal build At does nothing and is
// inlined away. One package so the turn core, the inbound side and the
// outbox share one switch ($OPENCLAW_CRASHPOINT).
package crashpoint

// At marks the crash point name. In a normal build it does nothing.
func At(string) {}
