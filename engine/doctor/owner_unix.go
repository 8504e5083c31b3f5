//go:build unix

package doctor

import (
	"io/fs"
	"syscall"
)

// fileOwner returns the uid that owns the file fi describes.
func fileOwner(fi fs.FileInfo) (int, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), true
	}
	return 0, false
}
