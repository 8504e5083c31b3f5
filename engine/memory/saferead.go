package memory

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// readMemory reads a memory file by its shown path without following a
// symbolic link: the listing ignored links, and a file swapped for one
// since (a sync in progress, a search between syncs) must not be read
// through it. Workspace files are opened through os.Root with every
// component checked; an extra path's file with O_NOFOLLOW.
func (ix *Index) readMemory(shown string) ([]byte, error) {
	f, err := ix.openMemory(shown)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAllBounded(f)
}

// openMemory opens a memory file for readMemory and readLines.
func (ix *Index) openMemory(shown string) (*os.File, error) {
	var root *os.Root
	if !filepath.IsAbs(shown) {
		var err error
		if root, err = os.OpenRoot(ix.cfg.Workspace); err != nil {
			return nil, err
		}
		defer root.Close()
		parts := strings.Split(shown, "/")
		for i := range parts[:len(parts)-1] {
			fi, err := root.Lstat(strings.Join(parts[:i+1], "/"))
			if err != nil {
				return nil, err
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				return nil, fmt.Errorf("%s is a symbolic link", strings.Join(parts[:i+1], "/"))
			}
		}
	}
	return openNoFollow(shown, root)
}

// readLines returns lines start..end of a memory file, reading no further
// than end and keeping at most maxBytes.
func (ix *Index) readLines(shown string, start, end, maxBytes int) (string, error) {
	f, err := ix.openMemory(shown)
	if err != nil {
		return "", err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 16<<10)
	var out []byte
	for n := 1; n <= end; n++ {
		line, err := br.ReadSlice('\n')
		for err == bufio.ErrBufferFull { // a long line: keep reading it
			if n >= start && len(out) < maxBytes {
				out = append(out, line...)
			}
			line, err = br.ReadSlice('\n')
		}
		if n >= start && len(out) < maxBytes {
			out = append(out, line...)
		}
		if err != nil {
			break
		}
	}
	if len(out) > maxBytes {
		out = out[:maxBytes]
		for len(out) > 0 && !utf8.Valid(out) {
			out = out[:len(out)-1]
		}
	}
	return strings.ReplaceAll(strings.TrimRight(string(out), "\r\n"), "\r\n", "\n"), nil
}

func openNoFollow(path string, root *os.Root) (*os.File, error) {
	var f *os.File
	var err error
	if root != nil {
		f, err = root.OpenFile(filepath.FromSlash(path), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	} else {
		f, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	}
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil {
		f.Close()
		return nil, err
	} else if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return f, nil
}

func readAllBounded(f *os.File) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("larger than %d MiB", maxFileBytes>>20)
	}
	return b, nil
}
