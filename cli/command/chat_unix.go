//go:build unix

package command

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/chzyer/readline"
	"golang.org/x/sys/unix"
)

// oNoFollow makes opening a symlink fail.
const oNoFollow = syscall.O_NOFOLLOW

// openKeyboard puts in, a terminal, in raw mode for the whole chat and
// starts its one reader (see keyboard). The mode is set and restored at
// once (TCSANOW, never TCSAFLUSH), so no key typed ahead is thrown away.
func openKeyboard(in *os.File, echo io.Writer, ctrlC func()) (*keyboard, error) {
	fd := int(in.Fd())
	saved, err := readline.MakeRaw(fd)
	if err != nil {
		return nil, fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	raw := func() error {
		if _, err := readline.MakeRaw(fd); err != nil {
			return fmt.Errorf("put the terminal in raw mode: %w", err)
		}
		return nil
	}
	k := newKeyboard(echo, ctrlC, raw, func() error {
		if err := readline.Restore(fd, saved); err != nil {
			return fmt.Errorf("restore the terminal: %w", err)
		}
		return nil
	})
	// Closing the pipe wakes the reader when the keyboard is closed.
	wakeR, wakeW, err := os.Pipe()
	if err != nil {
		err = fmt.Errorf("read the terminal: %w", err)
		if rerr := k.restore(); rerr != nil {
			err = fmt.Errorf("%w (and %w)", err, rerr)
		}
		return nil, err
	}
	go func() {
		<-k.stop
		wakeW.Close()
	}()
	go func() {
		defer close(k.done)
		defer wakeR.Close()
		k.ended(readKeys(fd, int(wakeR.Fd()), k.feed))
	}()
	return k, nil
}

// readKeys reads the terminal fd until wake becomes readable (nil) or the
// terminal's input ends (io.EOF: it hung up), handing what it reads to
// feed. It waits in poll, not in read, so that it stops when woken.
func readKeys(fd, wake int, feed func([]byte)) error {
	buf := make([]byte, 512)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(wake), Events: unix.POLLIN}}
		_, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("wait for the terminal: %w", err)
		}
		if fds[1].Revents != 0 {
			return nil
		}
		if fds[0].Revents == 0 {
			continue
		}
		n, err := unix.Read(fd, buf)
		switch {
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			continue
		case errors.Is(err, unix.EIO), err == nil && n == 0:
			return io.EOF // the terminal is gone
		case err != nil:
			return fmt.Errorf("read the terminal: %w", err)
		}
		feed(buf[:n])
	}
}

// termWidth is w's width in columns (80 when it is not a terminal).
func termWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	return 80
}
