package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// peerOf returns who is on the other end of c: SO_PEERCRED gives the pid,
// uid and gid at connect time; the supplementary groups come from
// /proc/<pid>/status. A peer whose groups cannot be read keeps its primary
// gid only (so a group member may be refused, never a stranger let in).
func peerOf(c *net.UnixConn) (peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return peer{}, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return peer{}, err
	}
	if serr != nil {
		return peer{}, fmt.Errorf("SO_PEERCRED: %w", serr)
	}
	p := peer{uid: int(cred.Uid), groups: []int{int(cred.Gid)}}
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cred.Pid)); err == nil {
		p.groups = append(p.groups, statusGroups(string(data))...)
	}
	return p, nil
}

// statusGroups parses the "Groups:" line of /proc/<pid>/status.
func statusGroups(status string) []int {
	for line := range strings.Lines(status) {
		rest, ok := strings.CutPrefix(line, "Groups:")
		if !ok {
			continue
		}
		var gids []int
		for _, f := range strings.Fields(rest) {
			if g, err := strconv.Atoi(f); err == nil && g >= 0 {
				gids = append(gids, g)
			}
		}
		return gids
	}
	return nil
}
