package doctor

import "testing"

// TestFacts asks this machine: the RAM and the disk are known on Linux.
func TestFacts(t *testing.T) {
	if n, err := MemTotal(); err != nil || n == 0 {
		t.Errorf("MemTotal: %d, %v", n, err)
	}
	if free, total, err := DiskSpace(t.TempDir()); err != nil || total == 0 || free > total {
		t.Errorf("DiskSpace: %d of %d, %v", free, total, err)
	}
	_ = ClockSync() // any answer; it must not fail
}
