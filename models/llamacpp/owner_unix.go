//go:build unix

package llamacpp

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// ownedSafely refuses a file or directory that another user owns or that
// its group or others may write.
func ownedSafely(fi fs.FileInfo) error {
	if fi.Mode().Perm()&0o022 != 0 {
		return errors.New("writable by group or others")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return errors.New("owned by another user")
	}
	return nil
}
