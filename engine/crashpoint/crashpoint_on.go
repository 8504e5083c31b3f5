//go:build crashpoints

package crashpoint

import (
	"os"
	"syscall"
)

// crashAt is the crash point named by $OPENCLAW_CRASHPOINT, read once.
var crashAt = os.Getenv("OPENCLAW_CRASHPOINT")

// At kills this process with SIGKILL — no deferred function, no
// flush — when name is the crash point $OPENCLAW_CRASHPOINT names. Only
// test builds (-tags crashpoints) have it; the crash test uses it to land a
// kill deterministically where a random one rarely does, e.g. just before
// the reply and the end of the turn commit.
func At(name string) {
	if crashAt != "" && name == crashAt {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
