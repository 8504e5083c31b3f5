package tool

import (
	"bytes"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// Created records the files a turn's file tools created (new files, not
// files that existed and were overwritten), so the gateway can tell a file
// the turn made from one of the owner's: a non-owner's reply may attach
// only the former (docs/design.md §3.8).
//
// A file counts while it is still exactly what the tool wrote: the same
// inode (a hard link or a rename of another file put over the name does
// not count) holding the same bytes (a file rewritten in place by a
// command does not count either). Files made by commands (exec) are never
// recorded: a command can copy or link any file, and nothing tells its
// copy of MEMORY.md from a file it made.
//
// The zero value is ready; a nil *Created records nothing and has nothing.
type Created struct {
	mu    sync.Mutex
	files []createdFile
}

type createdFile struct {
	info os.FileInfo
	sum  [sha256.Size]byte
}

// Add records a file a tool has just created: info is the os.File.Stat of
// the file it wrote (taken from the open file, not the path, which another
// process could have replaced meanwhile), data what it wrote.
func (c *Created) Add(info os.FileInfo, data []byte) {
	if c == nil || info == nil || !info.Mode().IsRegular() {
		return
	}
	c.mu.Lock()
	c.files = append(c.files, createdFile{info: info, sum: sha256.Sum256(data)})
	c.mu.Unlock()
}

// Has reports whether path (symlinks are followed) is a file recorded by
// Add that still holds what was written. It reads the file to compare.
func (c *Created) Has(path string) bool {
	return c.read(path, func() (io.Writer, error) { return io.Discard, nil })
}

// Snapshot copies path into a new file in dir if, and only if, the bytes
// copied are exactly what a tool recorded by Add wrote into that same
// inode, and returns the copy's path. The check and the copy are one
// read of one open file: a name swapped for a link to another file after
// the check (the adapter reads attachments later, from the outbox) can no
// longer change what is sent.
func (c *Created) Snapshot(path, dir string) (string, bool) {
	var out *os.File
	ok := c.read(path, func() (io.Writer, error) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		var err error
		out, err = os.CreateTemp(dir, "reply-*"+filepath.Ext(path))
		return out, err
	})
	if out == nil {
		return "", false
	}
	if err := out.Close(); err != nil || !ok {
		os.Remove(out.Name())
		return "", false
	}
	return out.Name(), true
}

// read opens path once and, when a record matches its inode and size,
// copies it to the writer sink makes while hashing it: true when the bytes
// read are what the tool wrote.
func (c *Created) read(path string, sink func() (io.Writer, error)) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	files := append([]createdFile(nil), c.files...)
	c.mu.Unlock()
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	var want []createdFile
	for _, cf := range files {
		if os.SameFile(cf.info, fi) && cf.info.Size() == fi.Size() {
			want = append(want, cf)
		}
	}
	if len(want) == 0 {
		return false
	}
	w, err := sink()
	if err != nil {
		return false
	}
	h := sha256.New()
	if n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(f, fi.Size()+1)); err != nil || n != fi.Size() {
		return false // changing under us: not what was written
	}
	sum := h.Sum(nil)
	for _, cf := range want {
		if bytes.Equal(sum, cf.sum[:]) {
			return true
		}
	}
	return false
}
