package main

// Who may use the control socket (docs/design.md §9, §10) on Linux: the
// gateway's user, root and the openclaw group (socket.go) — but never a
// process the gateway started, because an exec command runs as the
// gateway's user and would otherwise approve its own next command,
// elevated included. Three walls, each enforced by the kernel:
//
//  1. A sandboxed command cannot create a Unix socket at all: the sandbox
//     helper's seccomp filter (engine/tool/exec/sandbox) refuses
//     socket(AF_UNIX) and io_uring, for the command and everything it
//     starts, forever — also after a double fork, and after the gateway
//     restarted. The same keeps it from asking D-Bus, systemd or another
//     local daemon to start a process for it outside the sandbox.
//  2. The gateway is a child subreaper (reaper_linux.go): orphans of its
//     descendants are reparented to it, so "started by the gateway" is
//     exactly "a descendant in the process tree", with or without
//     systemd, and startedByGateway walks that tree. The reaper kills what
//     a sandboxed command left running outside its process group.
//  3. The peer is pinned with a pidfd (SO_PEERPIDFD), so a peer that exits
//     and whose pid is reused cannot pass for another process.
//
// Elevation therefore needs no second credential on the socket: every
// connection that gets through is provably neither the gateway's child
// nor a sandboxed process, nor anything one of them could have had
// started through a local daemon; it is the owner (or root, or the
// openclaw group the owner made). Requiring a terminal was considered and
// left out: it would break the owner's scripts and proves nothing more
// (a process outside the tree with the owner's uid is the owner's). From
// the LAN only paired operator devices decide, and in a chat only the
// owner.

import (
	"errors"
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
//
// The pid is only a number: the peer may have exited and its pid been
// reused by another process before we read /proc. So the peer is pinned
// with a pidfd (SO_PEERPIDFD, Linux 6.5+: the very process that
// connected), and after /proc has been read the pidfd must still name a
// process that has not been reaped — then the pid could not have been
// reused meanwhile. A peer that is gone is refused. Before 6.5 the pidfd
// is opened from the pid, which leaves a short window (a pid reused
// between connect and pidfd_open) that only a kernel update closes.
func peerOf(c *net.UnixConn) (peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return peer{}, err
	}
	var cred *unix.Ucred
	var serr error
	pidfd := -1
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if pfd, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil {
			pidfd = pfd
		}
	}); err != nil {
		return peer{}, err
	}
	if serr != nil {
		return peer{}, fmt.Errorf("SO_PEERCRED: %w", serr)
	}
	if pidfd < 0 && cred.Pid > 0 {
		pidfd, _ = unix.PidfdOpen(int(cred.Pid), 0) // older kernels: see above
	}
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	p := peer{uid: int(cred.Uid), groups: []int{int(cred.Gid)}, child: int(cred.Uid) == os.Getuid() && startedByGateway(int(cred.Pid), os.Getpid(), os.Getenv("INVOCATION_ID") != "")}
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cred.Pid)); err == nil {
		p.groups = append(p.groups, statusGroups(string(data))...)
	}
	if !stillThere(pidfd) {
		p.child = true // what was read may be another process's
	}
	return p, nil
}

// stillThere reports whether the process of pidfd has not been reaped
// (signal 0 checks without sending; EPERM: it exists but is another
// user's).
func stillThere(pidfd int) bool {
	if pidfd < 0 {
		return false
	}
	err := unix.PidfdSendSignal(pidfd, 0, nil, 0)
	return err == nil || errors.Is(err, unix.EPERM)
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
// started: a descendant in the process tree, or — under systemd — any
// other process in the gateway's own cgroup. A pid that cannot be read
// counts as started by the gateway (refused), never as a stranger let in;
// the caller asks only about peers with the gateway's own uid (an exec
// child cannot have another: NoNewPrivs), so hidepid never refuses a
// group member.
//
// The tree is enough because the gateway is a child subreaper
// (reaper_linux.go): an orphan of any of its descendants, double fork and
// setsid included, is reparented to the gateway, not to PID 1, so it
// never leaves the tree while the gateway runs. (Sandboxed commands
// cannot even create the socket to connect: the sandbox's seccomp filter
// refuses AF_UNIX. This check is the wall for the rest: elevated commands,
// runners, kernels where the filter is not built.)
//
// The walk is checked against pid reuse: a parent always started before
// its child (an adoptive parent is an older ancestor), so a "parent" that
// started later is a new process under a recycled pid — a parent died
// during the walk; the walk starts over, and after a few tries the peer is
// refused. A tree too deep to walk is refused as well.
func startedByGateway(pid, self int, service bool) bool {
	if pid == self {
		return false // the gateway's own tests dial from inside the process
	}
	for range 3 {
		desc, consistent := descendant(pid, self)
		if !consistent {
			continue
		}
		if desc {
			return true
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
	return true
}

// maxDepth bounds the ancestry walk; a deeper tree is refused.
const maxDepth = 4096

// descendant walks up from pid. desc: self is an ancestor, or something
// could not be read or the tree is too deep (refuse); consistent: false
// when a parent turned out younger than its child (a reused pid).
func descendant(pid, self int) (desc, consistent bool) {
	cur := pid
	f, ok := statFields(cur)
	if !ok {
		return true, true
	}
	for range maxDepth {
		ppid, err1 := strconv.Atoi(f[1])
		start, err2 := strconv.ParseUint(f[19], 10, 64)
		if err1 != nil || err2 != nil {
			return true, true
		}
		if ppid == self {
			return true, true
		}
		if ppid <= 1 {
			return false, true
		}
		if f, ok = statFields(ppid); !ok {
			return true, true
		}
		if pstart, err := strconv.ParseUint(f[19], 10, 64); err != nil || pstart > start {
			return false, false
		}
		cur = ppid
	}
	return true, true
}

// statFields reads /proc/<pid>/stat and returns its fields after the
// command name ("pid (comm) state ppid …"; comm may hold spaces and
// parentheses, so cut at the last ')'): [0] is the state, [1] the ppid,
// [19] the start time. ok is false unless all of those are there.
func statFields(pid int) ([]string, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, false
	}
	return parseStat(string(data))
}

// parseStat splits a stat line; see statFields. The command name is the
// process's own choice (prctl PR_SET_NAME, up to 15 bytes of anything but
// NUL), so only the last ')' can be trusted to end it.
func parseStat(s string) ([]string, bool) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, false
	}
	f := strings.Fields(s[i+1:])
	return f, len(f) >= 20
}
