//go:build unix

package command

import "syscall"

// replaceProcess is how Main runs openclaw-migrate: it becomes it.
var replaceProcess = syscall.Exec
