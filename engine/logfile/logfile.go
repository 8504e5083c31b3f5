// Package logfile is the gateway's own log file: a size-bounded copy of its
// log (slog text) in <state-dir>/logs/gateway.log, so `openclaw logs` works
// through the control API wherever the gateway runs — also outside systemd,
// and from another machine, where the journal cannot be read.
//
// Choices where the spec was silent:
//   - One generation is kept: at MaxSize the file is renamed gateway.log.1
//     (replacing the older one) and a new one starts. Tail reads across both.
//   - A log write never fails and never blocks on disk trouble: a write that
//     the disk refuses (full, read-only) is dropped and counted (Dropped);
//     the log still reaches stderr (the journal under systemd).
//   - Followers get what is written after their tail through a bounded
//     channel; a follower that reads too slowly loses lines (counted in
//     Sub.Lost) rather than slowing the gateway.
//   - Tail and subscribing happen under the writer's lock, so a follower
//     sees every line exactly once: the tail, then what follows.
package logfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// DefaultMaxSize is the size at which the file is rotated.
const DefaultMaxSize = 5 << 20

// MaxTail bounds how many lines Tail returns.
const MaxTail = 10000

// subBuffer is how many writes a follower may be behind.
const subBuffer = 256

// File is a log file that rotates at a size. It is an io.Writer safe for
// concurrent use.
type File struct {
	path    string
	max     int64
	dropped atomic.Int64

	mu     sync.Mutex
	f      *os.File // nil after an open failed: reopened on the next write
	size   int64
	closed bool // writes after Close are dropped
	subs   map[*Sub]struct{}
}

// Open opens (creating it and its directory, 0700) the log file at path,
// mode 0600, rotating it at maxSize bytes (0: DefaultMaxSize).
func Open(path string, maxSize int64) (*File, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxSize
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	l := &File{path: path, max: maxSize, subs: map[*Sub]struct{}{}}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

// Path returns the file's path.
func (l *File) Path() string { return l.path }

func (l *File) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("log file: %w", err)
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// Write appends p (one or more whole lines) to the file and hands it to
// the followers. It always reports success: a write the disk refuses is
// counted in Dropped, never returned, so a full disk cannot stop the
// gateway's logging to stderr.
func (l *File) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.write(p); err != nil {
		l.dropped.Add(1)
	}
	if len(l.subs) > 0 {
		c := bytes.Clone(p)
		for s := range l.subs {
			select {
			case s.c <- c:
			default:
				s.lost.Add(1)
			}
		}
	}
	return len(p), nil
}

func (l *File) write(p []byte) error {
	if l.closed {
		return os.ErrClosed
	}
	if l.f != nil && l.size > 0 && l.size+int64(len(p)) > l.max {
		l.f.Close()
		l.f = nil
		if err := os.Rename(l.path, l.path+".1"); err != nil && !errors.Is(err, os.ErrNotExist) {
			// Could not rotate: start over rather than grow without bound.
			_ = os.Truncate(l.path, 0)
		}
	}
	if l.f == nil {
		if err := l.open(); err != nil {
			return err
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	return err
}

// Dropped counts the writes the disk refused.
func (l *File) Dropped() int64 { return l.dropped.Load() }

// Close closes the file and ends every follower's channel; later writes
// are dropped.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for s := range l.subs {
		delete(l.subs, s)
		close(s.c)
	}
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Sub is a follower: C carries what is written after its tail, each
// receive one or more whole lines. C is closed by Close (of the Sub or the
// File).
type Sub struct {
	C    <-chan []byte
	c    chan []byte
	l    *File
	lost atomic.Int64
}

// Lost counts the writes this follower missed because it read too slowly.
func (s *Sub) Lost() int64 { return s.lost.Load() }

// Close stops following.
func (s *Sub) Close() {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	if _, ok := s.l.subs[s]; ok {
		delete(s.l.subs, s)
		close(s.c)
	}
}

// Tail returns the last n lines of the log (at most MaxTail; across the
// rotated file too) and, when follow is set, a Sub that gets every write
// after them.
func (l *File) Tail(n int, follow bool) ([]byte, *Sub, error) {
	n = min(max(n, 0), MaxTail)
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []byte
	if n > 0 {
		cur, found, err := lastLines(l.path, n)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, err
		}
		if found < n {
			old, _, err := lastLines(l.path+".1", n-found)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, nil, err
			}
			out = append(out, old...)
		}
		out = append(out, cur...)
	}
	if !follow {
		return out, nil, nil
	}
	c := make(chan []byte, subBuffer)
	s := &Sub{C: c, c: c, l: l}
	l.subs[s] = struct{}{}
	return out, s, nil
}

// lastLines returns the last n lines of the file at path (a last line
// without its newline counts) and how many it found.
func lastLines(path string, n int) ([]byte, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("log file: %w", err)
	}
	const block = 64 << 10
	end := fi.Size()
	var buf []byte
	for off := end; off > 0; {
		start := max(off-block, 0)
		chunk := make([]byte, off-start)
		if _, err := f.ReadAt(chunk, start); err != nil && err != io.EOF {
			return nil, 0, fmt.Errorf("log file: read %s: %w", path, err)
		}
		buf = append(chunk, buf...)
		off = start
		// n lines need n newlines before the last line's end (the last
		// newline, if any, ends the last line).
		body := bytes.TrimSuffix(buf, []byte("\n"))
		if i := nthLastNewline(body, n); i >= 0 {
			return buf[i+1:], n, nil
		}
	}
	body := bytes.TrimSuffix(buf, []byte("\n"))
	if len(body) == 0 {
		return nil, 0, nil
	}
	return buf, bytes.Count(body, []byte("\n")) + 1, nil
}

// nthLastNewline returns the index of the n-th newline from the end of b,
// or -1.
func nthLastNewline(b []byte, n int) int {
	i := len(b)
	for ; n > 0; n-- {
		i = bytes.LastIndexByte(b[:i], '\n')
		if i < 0 {
			return -1
		}
	}
	return i
}
