//go:build !unix

package exec

import (
	"os"
	osexec "os/exec"
)

// Without process groups only the shell itself can be killed.
func setProcessGroup(*osexec.Cmd) {}

func killGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	return p.Kill()
}

func exitCode(s *os.ProcessState) int {
	if s == nil {
		return -1
	}
	return s.ExitCode()
}
