package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// listenUnix listens on a Unix socket usable only by this user, root and
// the openclaw group, refusing to steal the socket of a gateway that is
// still running.
func listenUnix(path string) (net.Listener, error) {
	if len(path) > 100 {
		return nil, fmt.Errorf("socket path %s is %d bytes long; Unix sockets allow about 100: use --socket with a shorter path", path, len(path))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create the socket directory: %w", err)
	}
	if _, err := os.Stat(path); err == nil {
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("another gateway is already listening on %s", path)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ENOENT) {
			return nil, fmt.Errorf("socket %s exists and cannot be checked: %w", path, err)
		}
		// A gateway that was killed leaves its socket behind.
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	group := restrictSocket(path, lookupServiceGroup)
	if group == -2 {
		ln.Close()
		return nil, fmt.Errorf("restrict socket %s to its owner: could not chmod it", path)
	}
	return &peerListener{UnixListener: ln.(*net.UnixListener), uid: os.Getuid(), group: group}, nil
}

// serviceGroup is the group whose members may use the control socket
// (docs/design.md §9: the service user and the openclaw group).
const serviceGroup = "openclaw"

// lookupServiceGroup returns the gid of the openclaw group, if it exists.
func lookupServiceGroup() (int, bool) {
	g, err := user.LookupGroup(serviceGroup)
	if err != nil {
		return 0, false
	}
	gid, err := strconv.Atoi(g.Gid)
	return gid, err == nil
}

// restrictSocket sets the socket's mode right after listen: 0660 with the
// openclaw group when that group exists and the socket can be given to it,
// else 0600. It returns the group allowed in (-1: none; -2: chmod failed).
func restrictSocket(path string, lookup func() (int, bool)) int {
	if gid, ok := lookup(); ok {
		if err := os.Chown(path, -1, gid); err == nil {
			if err := os.Chmod(path, 0o660); err == nil {
				return gid
			}
		}
		// Not a member of the group (nor root): owner only.
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return -2
	}
	return -1
}

// peer is who is on the other end of a control-socket connection.
type peer struct {
	uid    int
	groups []int // primary gid first, then the supplementary groups
	// child: a process the gateway started (an exec child, even one that
	// left the process tree, in the service's cgroup). It runs as the
	// gateway's uid, and Landlock before ABI 9 cannot stop it connecting,
	// so without this an approved command could answer its own approvals.
	child bool
}

// allowed says whether p may use the control API (docs/design.md §10): the
// gateway's own user, root, or a member of the openclaw group (-1: no such
// group, nobody gets in that way).
func allowed(p peer, self, group int) bool {
	if p.child {
		return false
	}
	if p.uid == self || p.uid == 0 {
		return true
	}
	return group >= 0 && slices.Contains(p.groups, group)
}

// peerListener accepts only connections whose peer is allowed. The file
// mode already keeps others out; the check also holds where a directory or
// ACL is too permissive, and in the moment between listen and chmod.
type peerListener struct {
	*net.UnixListener
	uid   int // the gateway's
	group int // the openclaw group's gid, -1 when none
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.UnixListener.AcceptUnix()
		if err != nil {
			return nil, err
		}
		p, err := peerOf(c)
		if err != nil || !allowed(p, l.uid, l.group) {
			c.Close()
			continue
		}
		return c, nil
	}
}
