//go:build unix

package command

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// oNoFollow makes opening a symlink fail.
const oNoFollow = syscall.O_NOFOLLOW

// pollLines reads the lines typed on the terminal in while ctx lasts (the
// terminal in its normal, line-buffered mode). It polls instead of
// blocking in read, so that when ctx ends no read is left pending to steal
// the next line from readline. The channel is closed, then done, when it
// has stopped.
func pollLines(ctx context.Context, in *os.File) (<-chan string, <-chan struct{}) {
	ch := make(chan string, 8)
	done := make(chan struct{})
	fd := int(in.Fd())
	go func() {
		defer close(done)
		defer close(ch)
		var partial strings.Builder
		buf := make([]byte, 4096)
		for ctx.Err() == nil {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 100)
			if errors.Is(err, unix.EINTR) || err == nil && n == 0 {
				continue
			}
			if err != nil || fds[0].Revents&(unix.POLLERR|unix.POLLNVAL) != 0 {
				return
			}
			if fds[0].Revents&(unix.POLLIN|unix.POLLHUP) == 0 {
				continue
			}
			// Canonical mode: readable means a whole line (or Ctrl-D).
			n, err = unix.Read(fd, buf)
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
				continue
			}
			if err != nil || n == 0 && fds[0].Revents&unix.POLLHUP != 0 {
				return
			}
			partial.Write(buf[:n])
			for {
				s := partial.String()
				i := strings.IndexByte(s, '\n')
				if i < 0 {
					break
				}
				partial.Reset()
				partial.WriteString(s[i+1:])
				select {
				case ch <- strings.TrimSuffix(s[:i], "\r"):
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return ch, done
}
