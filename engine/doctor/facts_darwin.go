package doctor

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// MemTotal returns this machine's RAM in bytes (sysctl hw.memsize).
func MemTotal() (uint64, error) {
	n, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return 0, fmt.Errorf("read the RAM size: %w", err)
	}
	return n, nil
}

// DiskSpace returns the bytes free (for an unprivileged user) and the size
// of the file system that holds path.
func DiskSpace(path string) (free, total uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", path, err)
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}

// ClockSync is unknown on macOS: it keeps its clock itself.
func ClockSync() Sync { return SyncUnknown }
