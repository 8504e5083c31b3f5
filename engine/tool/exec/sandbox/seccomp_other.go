//go:build !linux

package sandbox

import (
	"errors"
	"runtime"
)

// errNoFilter: seccomp is Linux only (so is Landlock; the helper never
// confines anything elsewhere).
var errNoFilter = errors.New("no seccomp filter for " + runtime.GOOS)

func filterArch() uint32 { return 0 }

func installFilter() error { return errNoFilter }
