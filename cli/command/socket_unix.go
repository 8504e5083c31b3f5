//go:build unix

package command

import (
	"os"
	"syscall"
)

// socketOwner returns the uid that owns the socket at path (following
// symlinks: what counts is the socket the connection reaches).
func socketOwner(path string) (int, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
