package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// listenUnix listens on a Unix socket readable only by this user, refusing
// to steal the socket of a gateway that is still running.
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
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restrict socket %s to its owner: %w", path, err)
	}
	return &peerListener{UnixListener: ln.(*net.UnixListener)}, nil
}

// peerListener accepts only connections whose peer runs as this process's
// user or as root (DESIGN.md §10). File mode 0600 already keeps others out;
// the check also holds where a directory or ACL is too permissive.
type peerListener struct{ *net.UnixListener }

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.UnixListener.AcceptUnix()
		if err != nil {
			return nil, err
		}
		uid, err := peerUID(c)
		if err != nil || (uid != os.Getuid() && uid != 0) {
			c.Close()
			continue
		}
		return c, nil
	}
}
