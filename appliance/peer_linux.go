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
	p := peer{uid: int(cred.Uid), groups: []int{int(cred.Gid)}, child: int(cred.Uid) == os.Getuid() && startedByGateway(int(cred.Pid), os.Getpid(), os.Getenv("INVOCATION_ID") != "")}
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

// startedByGateway reports whether pid is a process the gateway (self)
// started: a descendant in the process tree, or — under systemd, where a
// double-forked child leaves the tree but never the service's cgroup — any
// other process in the gateway's own cgroup. A pid that cannot be read
// counts as started by the gateway (refused), never as a stranger let in;
// the caller asks only about peers with the gateway's own uid (an exec
// child cannot have another: NoNewPrivs), so hidepid never refuses a
// group member.
func startedByGateway(pid, self int, service bool) bool {
	if pid == self {
		return false // the gateway's own tests dial from inside the process
	}
	cur := pid
	for range 256 {
		ppid, ok := parentOf(cur)
		if !ok {
			return true
		}
		if ppid == self {
			return true
		}
		if ppid <= 1 {
			break
		}
		cur = ppid
	}
	if service {
		mine, err1 := os.ReadFile("/proc/self/cgroup")
		theirs, err2 := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err1 != nil || err2 != nil || string(mine) == string(theirs) {
			return true
		}
	}
	return false
}

// parentOf reads the parent pid from /proc/<pid>/stat ("pid (comm) state
// ppid …"; comm may hold spaces and parentheses, so cut at the last ')').
func parentOf(pid int) (int, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}
