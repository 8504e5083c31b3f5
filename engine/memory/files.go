package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxFileBytes bounds one memory file: a notes file is small; a runaway
// one (a log pasted into memory/) is skipped with a warning instead of
// being read into memory whole.
const maxFileBytes = 16 << 20

// maxFiles bounds how many files one index covers: the model writes
// memory/, and a runaway loop making a million notes must not make every
// sync walk and read them all.
const maxFiles = 50000

// file is one Markdown file the index covers.
type file struct {
	Path  string // as shown to the model: relative to the workspace, or the extra path's absolute form
	Abs   string
	Size  int64
	MTime int64 // UnixNano
}

// listFiles returns MEMORY.md (memory.md when only that exists),
// memory/**/*.md and the extra paths' .md files, sorted by path. Symlinks
// are ignored everywhere (files and directories), as OpenClaw does, so a
// link cannot pull a file from outside into what the model may read.
// Problems with one path are returned as warnings, never as a failure.
func listFiles(workspace string, extra []string) ([]file, []string) {
	var out []file
	var warns []string
	seen := map[string]bool{}
	add := func(abs, shown string, fi fs.FileInfo) {
		if seen[abs] || !fi.Mode().IsRegular() {
			return
		}
		if fi.Size() > maxFileBytes {
			warns = append(warns, fmt.Sprintf("%s: skipped, larger than %d MiB", shown, maxFileBytes>>20))
			return
		}
		if len(out) >= maxFiles {
			if len(out) == maxFiles {
				warns = append(warns, fmt.Sprintf("more than %d memory files: the rest are not indexed", maxFiles))
				out = append(out, file{}) // marker, dropped below
			}
			return
		}
		seen[abs] = true
		out = append(out, file{Path: shown, Abs: abs, Size: fi.Size(), MTime: fi.ModTime().UnixNano()})
	}
	for _, name := range []string{"MEMORY.md", "memory.md"} {
		abs := filepath.Join(workspace, name)
		if fi, err := os.Lstat(abs); err == nil && fi.Mode().IsRegular() {
			add(abs, name, fi)
			break
		}
	}
	walk := func(root, shownRoot string) {
		fi, err := os.Lstat(root)
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			warns = append(warns, fmt.Sprintf("%s: %v", shownRoot, err))
			return
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			warns = append(warns, shownRoot+": a symbolic link, ignored")
			return
		}
		if fi.Mode().IsRegular() {
			if strings.EqualFold(filepath.Ext(root), ".md") {
				add(root, shownRoot, fi)
			} else {
				warns = append(warns, shownRoot+": not a .md file, ignored")
			}
			return
		}
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				warns = append(warns, fmt.Sprintf("%s: %v", p, err))
				return nil
			}
			if d.Type()&fs.ModeSymlink != 0 {
				return nil
			}
			if d.IsDir() {
				if p != root && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir // .git, editors' swap dirs
				}
				return nil
			}
			if !d.Type().IsRegular() || !strings.EqualFold(filepath.Ext(p), ".md") || strings.HasPrefix(d.Name(), ".") {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return nil // removed while walking
			}
			rel, _ := filepath.Rel(root, p)
			add(p, pathJoin(shownRoot, filepath.ToSlash(rel)), fi)
			return nil
		})
	}
	walk(filepath.Join(workspace, "memory"), "memory")
	for _, e := range extra {
		if e == "" {
			continue
		}
		abs := e
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(workspace, e)
		}
		abs = filepath.Clean(abs)
		shown := filepath.ToSlash(abs)
		if rel, err := filepath.Rel(workspace, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			shown = filepath.ToSlash(rel)
		}
		walk(abs, shown)
	}
	out = slices.DeleteFunc(out, func(f file) bool { return f.Path == "" })
	slices.SortFunc(out, func(a, b file) int { return strings.Compare(a.Path, b.Path) })
	return out, warns
}

func pathJoin(a, b string) string {
	if a == "" || a == "." {
		return b
	}
	return a + "/" + b
}
