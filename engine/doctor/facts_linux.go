package doctor

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// MemTotal returns this machine's RAM in bytes (/proc/meminfo).
func MemTotal() (uint64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("read the RAM size: %w", err)
	}
	defer f.Close()
	return ParseMemInfo(f)
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

// timesyncFlag is the file systemd-timesyncd creates once the clock is
// synchronized.
const timesyncFlag = "/run/systemd/timesync/synchronized"

// ClockSync says whether the kernel clock is synchronized: the
// systemd-timesyncd flag file, else the kernel's own view (adjtimex, read
// only: STA_UNSYNC clear means an NTP daemon keeps the clock).
func ClockSync() Sync {
	if _, err := os.Stat(timesyncFlag); err == nil {
		return Synced
	}
	var tx unix.Timex // Modes 0: read only, allowed to every user
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return SyncUnknown
	}
	if state == unix.TIME_ERROR || tx.Status&unix.STA_UNSYNC != 0 {
		return Unsynced
	}
	return Synced
}
