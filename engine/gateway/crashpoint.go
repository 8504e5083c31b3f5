//go:build !crashpoints

package gateway

// crashpoint marks a place in a turn where the crash test (make
// test-crash, build tag crashpoints) can kill the gateway on purpose. In a
// normal build it does nothing and is inlined away.
func crashpoint(string) {}
