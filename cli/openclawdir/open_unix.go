//go:build unix

package openclawdir

import (
	"io/fs"
	"os"
	"syscall"
)

// openNonblock makes open(2) of a FIFO return at once instead of waiting
// for a writer.
const openNonblock = syscall.O_NONBLOCK

// ownedByMe reports whether fi belongs to the current user.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
