// Package fs holds the file tools of group:fs (docs/design.md §3.7): read, write,
// edit, apply_patch, grep, find and ls, all confined to the agent's
// workspace.
//
// Confinement is two layers deep. Paths from the model are first cleaned and
// checked lexically (tool.Env.Rel: relative to the workspace, absolute only
// inside it), then every file access goes through an os.Root opened on the
// workspace, so ".." and symlinks that lead outside are refused by the OS
// layer (openat2/RESOLVE_BENEATH-style walking) rather than by string checks
// that a race could defeat. A refused path gives the error result
// `path "…" is outside the workspace <ws>` and touches nothing.
//
// Choices where the spec was silent:
//   - Writes are atomic (temporary file in the same directory, fsync,
//     rename, fsync of the directory and of the parents of directories it
//     created; a removal by apply_patch syncs its directory too) and keep
//     an existing file's permissions. Writing to a symlink
//     that stays inside the workspace writes its target; a dangling symlink
//     is refused. A file a write creates (never one it overwrites) is
//     recorded in tool.Env.Created, by inode and content, for the gateway's
//     rule on what a non-owner's reply may attach.
//   - read returns the file's text unnumbered (edit matches exact text, so
//     line numbers would only get copied into oldText), pages by lines, and
//     stops early at the turn's result budget with a "use offset=N" hint so
//     the hint survives truncation. Images are recognised by their magic
//     bytes, not their extension.
//   - edit and apply_patch keep CRLF files CRLF. apply_patch follows the
//     Codex format and matching (exact, then ignoring trailing whitespace,
//     then ignoring surrounding whitespace, then with typographic
//     punctuation normalized); an added hunk with no removed lines goes
//     after its @@ context line when it has one, else at the end of the
//     file. "*** Add File" overwrites an existing file, as Codex does.
//   - grep, find and ls skip .git; grep skips binary files (a NUL byte in
//     the first 8 KiB) and files over 16 MiB. Globs support "**" and
//     {a,b} alternatives; a glob without "/" matches the base name at any
//     depth, one with "/" the path relative to the searched directory.
//   - Arguments accept Claude/OpenClaw aliases (file_path, old_string,
//     new_string) besides the documented names.
package fs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/tool"
)

// Config configures the file tools.
type Config struct {
	// MaxReadBytes caps what one read returns: the bytes of an image, the
	// text of a page. Default 2 MiB.
	MaxReadBytes int
}

const defaultMaxReadBytes = 2 << 20

func (c Config) withDefaults() Config {
	if c.MaxReadBytes <= 0 {
		c.MaxReadBytes = defaultMaxReadBytes
	}
	return c
}

// Tools returns the file tools: read, write, edit, apply_patch, grep, find
// and ls.
func Tools(cfg Config) []tool.Tool {
	cfg = cfg.withDefaults()
	return []tool.Tool{
		&readTool{cfg: cfg},
		&writeTool{},
		&editTool{},
		&patchTool{},
		&grepTool{},
		&findTool{},
		&lsTool{},
	}
}

// Compile-time guards.
var (
	_ tool.Tool = (*readTool)(nil)
	_ tool.Tool = (*writeTool)(nil)
	_ tool.Tool = (*editTool)(nil)
	_ tool.Tool = (*patchTool)(nil)
	_ tool.Tool = (*grepTool)(nil)
	_ tool.Tool = (*findTool)(nil)
	_ tool.Tool = (*lsTool)(nil)
)

// workspace is an opened workspace for one call.
type workspace struct {
	env  tool.Env
	root *os.Root
}

// openWorkspace opens env's workspace as an os.Root. Close it when done.
func openWorkspace(env tool.Env) (*workspace, error) {
	if env.Workspace == "" {
		return nil, errors.New("no workspace is configured for this agent")
	}
	root, err := os.OpenRoot(env.Workspace)
	if err != nil {
		return nil, err
	}
	return &workspace{env: env, root: root}, nil
}

func (w *workspace) Close() { w.root.Close() }

// rel cleans a model-given path into a workspace-relative one.
func (w *workspace) rel(p string) (string, error) { return w.env.Rel(p) }

// isEscape reports whether err is os.Root refusing a path that leaves the
// root. The sentinel is unexported in package os, so its text is matched.
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// fail turns a file error about the model's path p into an error result the
// model can act on.
func (w *workspace) fail(tool, p string, err error) engine.ToolResult {
	return failResult(w.env, tool, p, err)
}

func failResult(env tool.Env, toolName, p string, err error) engine.ToolResult {
	var oe *tool.OutsideError
	switch {
	case errors.As(err, &oe):
		return engine.ErrorResult("%s: %v", toolName, err)
	case isEscape(err):
		return engine.ErrorResult("%s: %v", toolName, &tool.OutsideError{Path: p, Workspace: env.Workspace})
	case errors.Is(err, iofs.ErrNotExist):
		return engine.ErrorResult("%s: %q does not exist", toolName, p)
	case errors.Is(err, iofs.ErrPermission):
		return engine.ErrorResult("%s: permission denied for %q", toolName, p)
	}
	return engine.ErrorResult("%s: %q: %v", toolName, p, trimPathError(err))
}

// trimPathError drops the absolute path os puts in errors: the model knows
// which path it asked for.
func trimPathError(err error) error {
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// writeTarget returns the workspace-relative path a write to rel should
// replace: rel itself, or the target of a symlink that stays inside the
// workspace. Directories, dangling links and escaping links are refused.
func (w *workspace) writeTarget(rel string) (string, error) {
	fi, err := w.root.Lstat(rel)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return rel, nil
	case err != nil:
		return "", err
	case fi.IsDir():
		return "", errors.New("is a directory")
	case fi.Mode()&iofs.ModeSymlink == 0:
		return rel, nil
	}
	// A symlink: the root follows it only if it stays inside.
	if _, err := w.root.Stat(rel); err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return "", errors.New("is a dangling symlink")
		}
		return "", err
	}
	real, err := filepath.EvalSymlinks(filepath.Join(w.env.Workspace, filepath.FromSlash(rel)))
	if err != nil {
		return "", err
	}
	base, err := filepath.EvalSymlinks(w.env.Workspace)
	if err != nil {
		return "", err
	}
	r, err := filepath.Rel(base, real)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", &tool.OutsideError{Path: rel, Workspace: w.env.Workspace}
	}
	return filepath.ToSlash(r), nil
}

// writeFile writes data to rel atomically: a temporary file in the same
// directory, fsync, rename. Parent directories are created. An existing
// file keeps its permissions. A new file is recorded in env.Created.
func (w *workspace) writeFile(rel string, data []byte) error {
	target, err := w.writeTarget(rel)
	if err != nil {
		return err
	}
	perm, existed := iofs.FileMode(0o644), false
	if fi, err := w.root.Stat(target); err == nil {
		perm, existed = fi.Mode().Perm(), true
	}
	dir := path.Dir(target)
	created := w.missingDirs(dir)
	if dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(dir, "."+path.Base(target)+".tmp-"+hex.EncodeToString(rnd[:]))
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	var info iofs.FileInfo // of the file written, from its descriptor
	if werr == nil && !existed {
		info, werr = f.Stat()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil && existed {
		// O_CREATE's mode is filtered by the umask; keep the old mode.
		werr = w.root.Chmod(tmp, perm)
	}
	if werr == nil {
		werr = w.root.Rename(tmp, target)
	}
	if werr != nil {
		_ = w.root.Remove(tmp)
		return werr
	}
	if !existed {
		// A new file: the turn made it (an overwrite of an existing one,
		// perhaps the owner's, is not recorded).
		w.env.Created.Add(info, data)
	}
	// The rename and any new directories live in directory entries, which
	// the file's fsync does not cover: sync them too, so a crash after the
	// tool result is recorded cannot lose the file.
	if err := w.syncDir(dir); err != nil {
		return err
	}
	for _, d := range created {
		if err := w.syncDir(path.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

// remove removes rel and syncs its directory, so the removal is durable.
func (w *workspace) remove(rel string) error {
	if err := w.root.Remove(rel); err != nil {
		return err
	}
	return w.syncDir(path.Dir(rel))
}

// missingDirs lists dir and those of its ancestors that do not exist yet,
// deepest first: the directories MkdirAll(dir) will create.
func (w *workspace) missingDirs(dir string) []string {
	var out []string
	for d := dir; d != "." && d != "/" && d != ""; d = path.Dir(d) {
		if _, err := w.root.Stat(d); err == nil {
			break
		}
		out = append(out, d)
	}
	return out
}

// syncDir fsyncs directory dir (workspace-relative). File systems and
// platforms that cannot sync a directory are not an error: there is
// nothing more to be done there.
func (w *workspace) syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // directory handles cannot be flushed there
	}
	d, err := w.root.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// readText reads a whole text file (for edit and apply_patch).
func (w *workspace) readText(rel string) ([]byte, error) {
	fi, err := w.root.Stat(rel)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, errors.New("is a directory")
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("is not a regular file")
	}
	if fi.Size() > maxEditBytes {
		return nil, errors.New("file is too large to edit (over 16 MiB)")
	}
	return w.root.ReadFile(rel)
}

const maxEditBytes = 16 << 20

// pathArg returns the first non-empty of the path argument spellings.
func pathArg(names ...string) string {
	for _, n := range names {
		if n != "" {
			return n
		}
	}
	return ""
}
