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
// only the former (DESIGN.md §3.8).
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
	if c == nil {
		return false
	}
	c.mu.Lock()
	files := append([]createdFile(nil), c.files...)
	c.mu.Unlock()
	if len(files) == 0 {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	var sum []byte // the file's hash, once one record matches its inode
	for _, cf := range files {
		if !os.SameFile(cf.info, fi) || cf.info.Size() != fi.Size() {
			continue
		}
		if sum == nil {
			h := sha256.New()
			if n, err := io.Copy(h, io.LimitReader(f, fi.Size()+1)); err != nil || n != fi.Size() {
				return false // changing under us: not what was written
			}
			sum = h.Sum(nil)
		}
		if bytes.Equal(sum, cf.sum[:]) {
			return true
		}
	}
	return false
}

// Snapshot copies path into a new file in dir if, and only if, the bytes
// copied are exactly what a tool recorded by Add wrote into that same
// inode, and returns the copy's path. The check and the copy are one
// read of one open file: a name swapped for a link to another file after
// the check (the adapter reads attachments later, from the outbox) can no
// longer change what is sent.
func (c *Created) Snapshot(path, dir string) (string, bool) {
	if c == nil {
		return "", false
	}
	c.mu.Lock()
	files := append([]createdFile(nil), c.files...)
	c.mu.Unlock()
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	var want []createdFile
	for _, cf := range files {
		if os.SameFile(cf.info, fi) && cf.info.Size() == fi.Size() {
			want = append(want, cf)
		}
	}
	if len(want) == 0 {
		return "", false
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false
	}
	out, err := os.CreateTemp(dir, "reply-*"+filepath.Ext(path))
	if err != nil {
		return "", false
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(f, fi.Size()+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n == fi.Size() {
		sum := h.Sum(nil)
		for _, cf := range want {
			if bytes.Equal(sum, cf.sum[:]) {
				return out.Name(), true
			}
		}
	}
	os.Remove(out.Name())
	return "", false
}
