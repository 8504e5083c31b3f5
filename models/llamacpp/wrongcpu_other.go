//go:build !unix

package llamacpp

import (
	"errors"
	"os/exec"
)

// wrongCPU reports whether a runner's exit says its build cannot run on
// this CPU (its own check at start; signals are a Unix matter).
func wrongCPU(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == ExitUnsupportedCPU
}
