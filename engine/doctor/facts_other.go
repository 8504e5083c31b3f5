//go:build !linux && !darwin

package doctor

import "errors"

var errUnsupported = errors.New("not known on this system")

// MemTotal is unknown here.
func MemTotal() (uint64, error) { return 0, errUnsupported }

// DiskSpace is unknown here.
func DiskSpace(string) (free, total uint64, err error) { return 0, 0, errUnsupported }

// ClockSync is unknown here.
func ClockSync() Sync { return SyncUnknown }
