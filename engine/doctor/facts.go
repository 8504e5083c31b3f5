package doctor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ParseMemInfo returns MemTotal in bytes from /proc/meminfo's text.
func ParseMemInfo(r io.Reader) (uint64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, found := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !found {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			break
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("meminfo: MemTotal %q: %w", f[0], err)
		}
		if len(f) > 1 && f[1] != "kB" {
			return 0, fmt.Errorf("meminfo: MemTotal in unknown unit %q", f[1])
		}
		return kb * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("meminfo: %w", err)
	}
	return 0, errors.New("meminfo: no MemTotal line")
}
