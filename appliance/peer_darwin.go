package main

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// peerOf returns who is on the other end of c: LOCAL_PEERCRED gives the
// effective uid and the groups (the first is the effective gid; the kernel
// reports at most 16).
func peerOf(c *net.UnixConn) (peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return peer{}, err
	}
	var cred *unix.Xucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	}); err != nil {
		return peer{}, err
	}
	if serr != nil {
		return peer{}, fmt.Errorf("LOCAL_PEERCRED: %w", serr)
	}
	p := peer{uid: int(cred.Uid)}
	for i := 0; i < int(cred.Ngroups) && i < len(cred.Groups); i++ {
		p.groups = append(p.groups, int(cred.Groups[i]))
	}
	return p, nil
}
