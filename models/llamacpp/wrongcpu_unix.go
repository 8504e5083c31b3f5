//go:build unix

package llamacpp

import (
	"errors"
	"os/exec"
	"syscall"
)

// wrongCPU reports whether a runner's exit says its build cannot run on
// this CPU: killed by SIGILL (an instruction the CPU lacks), or exited with
// ExitUnsupportedCPU (its own check at start).
func wrongCPU(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGILL {
		return true
	}
	return ee.ExitCode() == ExitUnsupportedCPU
}
