package command

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// historyLimit is how many lines chat's history keeps.
const historyLimit = 1000

// maxHistoryLine is the longest line kept in the history; longer ones
// (a pasted document) are not worth recalling with the arrow keys.
const maxHistoryLine = 4096

// maxHistoryRead bounds how much of a history file is read at start.
const maxHistoryRead = 4 << 20

// history is chat's history file: one message per line, 0600, never a
// symlink (it could point anywhere the user can write), at most limit
// lines — rewritten when it has grown to twice that.
type history struct {
	f     *os.File
	path  string
	limit int
	lines []string
}

// openHistory opens (creating it and its directory) the history file at
// path and returns it with its last limit lines. An error means the file
// cannot be used — a symlink, not a regular file, unreadable — and says so
// in words for a warning; chat then runs without saving history.
func openHistory(path string, limit int) (*history, []string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, fmt.Errorf("cannot create the history directory: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return nil, nil, fmt.Errorf("the history file %s is a symlink, which is not followed", path)
		case !fi.Mode().IsRegular():
			return nil, nil, fmt.Errorf("the history file %s is not a regular file", path)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND|oNoFollow, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot open the history file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("the history file %s is not a regular file", path)
	}
	if fi.Mode().Perm() != 0o600 {
		// Messages are private: tighten a file someone made readable.
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("cannot make the history file %s private (0600): %w", path, err)
		}
	}
	h := &history{f: f, path: path, limit: limit}
	total := 0
	sc := bufio.NewScanner(io.LimitReader(f, maxHistoryRead))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		total++
		if l := sc.Text(); historyWorthy(l) {
			h.lines = append(h.lines, l)
			if len(h.lines) > 2*limit {
				h.lines = append(h.lines[:0], h.lines[len(h.lines)-limit:]...)
			}
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		f.Close()
		return nil, nil, fmt.Errorf("cannot read the history file %s: %w", path, err)
	}
	if len(h.lines) > limit {
		h.lines = h.lines[len(h.lines)-limit:]
	}
	if total > limit || sc.Err() != nil {
		if err := h.rewrite(); err != nil {
			f.Close()
			return nil, nil, err
		}
	}
	return h, append([]string(nil), h.lines...), nil
}

// add appends one line.
func (h *history) add(line string) error {
	if _, err := io.WriteString(h.f, line+"\n"); err != nil {
		return fmt.Errorf("cannot write the history file %s: %w", h.path, err)
	}
	h.lines = append(h.lines, line)
	if len(h.lines) >= 2*h.limit {
		h.lines = append(h.lines[:0], h.lines[len(h.lines)-h.limit:]...)
		return h.rewrite()
	}
	return nil
}

// rewrite replaces the file's content with h.lines.
func (h *history) rewrite() error {
	var b strings.Builder
	for _, l := range h.lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if err := h.f.Truncate(0); err != nil {
		return fmt.Errorf("cannot trim the history file %s: %w", h.path, err)
	}
	if _, err := io.WriteString(h.f, b.String()); err != nil { // O_APPEND: at the new end
		return fmt.Errorf("cannot write the history file %s: %w", h.path, err)
	}
	return nil
}

func (h *history) close() { h.f.Close() }

// historyWorthy reports whether a typed line belongs in the history: not
// empty, one printable line of reasonable length, and not an answer to an
// approval (/approve, /deny: one-shot ids, and a history that replays
// them is one keypress from approving the wrong thing).
func historyWorthy(line string) bool {
	t := strings.TrimSpace(line)
	if t == "" || len(line) > maxHistoryLine || t == `"""` {
		return false
	}
	for _, r := range line {
		if unicode.IsControl(r) && r != '\t' || r == '\uFFFD' {
			return false
		}
	}
	word, _, _ := strings.Cut(strings.ToLower(t), " ")
	return word != "/approve" && word != "/deny"
}
