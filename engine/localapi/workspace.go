package localapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/transcript"
	"github.com/openclaw-edge/edge/engine/workspace"
)

// serveWorkspaceFile writes one file into an agent's workspace (PUT
// /v1/workspace/file?agent=&path=[&overwrite=1]), for `openclaw migrate`.
// The path is confined to the workspace (os.Root) and no symlink is
// followed, not even one inside it; the file is written to a temporary
// name and renamed, so a reader (the memory index watches the workspace)
// never sees half a file. ?dryRun=1 says what would happen. The same bytes already there are a no-op, so a
// second migration changes nothing; a file still exactly as we seeded it
// at first start (workspace.IsTemplate) is replaced, since it is ours, not
// the user's; any other different file is kept unless
// ?overwrite=1.
func (h *handler) serveWorkspaceFile(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ag, _, err := h.gw.Target(q.Get("agent"), "")
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	rel := q.Get("path")
	if err := checkWorkspacePath(rel); err != nil {
		api.WriteError(w, badRequest(api.EscapeControl(err.Error())))
		return
	}
	overwrite := q.Get("overwrite") == "1" || q.Get("overwrite") == "true"
	dryRun := q.Get("dryRun") == "1" || q.Get("dryRun") == "true"
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, api.MaxWorkspaceFile))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			api.WriteError(w, badRequest(fmt.Sprintf("%s is larger than %d MiB; nothing was written", api.EscapeControl(rel), api.MaxWorkspaceFile>>20)))
			return
		}
		api.WriteError(w, badRequest("read the upload: "+err.Error()))
		return
	}
	res, err := writeWorkspaceFile(ag.Workspace, rel, data, overwrite, dryRun)
	if err != nil {
		api.WriteError(w, asAPIError(err))
		return
	}
	res.Agent = ag.ID
	if res.Action != api.FileUnchanged && !dryRun {
		h.log.Info("wrote a workspace file", "agent", ag.ID, "path", rel, "bytes", len(data), "action", res.Action)
	}
	api.WriteJSON(w, http.StatusOK, res)
}

// workspaceFileNames are the files of the workspace root this API writes:
// the bootstrap files and the memory notes — what a migration brings, and
// nothing the gateway would run or load as a skill (skills/, scripts).
var workspaceFileNames = map[string]bool{
	"AGENTS.md": true, "SOUL.md": true, "TOOLS.md": true, "IDENTITY.md": true, "USER.md": true,
	"BOOTSTRAP.md": true, "HEARTBEAT.md": true, "MEMORY.md": true, "memory.md": true,
}

// checkWorkspacePath accepts a clean, relative, slash-separated path of
// printable names, none of them hidden (dot files are not workspace
// content, and .git and the like must not be written by a migration): one
// of workspaceFileNames, or a Markdown note under memory/.
func checkWorkspacePath(rel string) error {
	switch {
	case rel == "":
		return errors.New("missing ?path= (a file relative to the workspace, such as memory/2026-09-01.md)")
	case len(rel) > 512:
		return errors.New("path is longer than 512 bytes")
	case strings.HasPrefix(rel, "/"):
		return fmt.Errorf("path %q is absolute; want one relative to the workspace", rel)
	case strings.ContainsRune(rel, '\\'):
		return fmt.Errorf("path %q has a backslash; separate names with /", rel)
	case path.Clean(rel) != rel:
		return fmt.Errorf("path %q is not clean (want %q)", rel, path.Clean(rel))
	}
	for _, name := range strings.Split(rel, "/") {
		if strings.HasPrefix(name, ".") {
			return fmt.Errorf("path %q names a hidden file or folder or leaves the workspace (%q)", rel, name)
		}
		for _, r := range name {
			if r < ' ' || r == 0x7f {
				return fmt.Errorf("path %q has a control character", rel)
			}
		}
	}
	if !workspaceFileNames[rel] && !(strings.HasPrefix(rel, "memory/") && strings.HasSuffix(rel, ".md")) {
		return fmt.Errorf("path %q is not a bootstrap file (AGENTS.md, SOUL.md, TOOLS.md, IDENTITY.md, USER.md, BOOTSTRAP.md, HEARTBEAT.md, MEMORY.md) or a note memory/….md", rel)
	}
	return nil
}

// writeWorkspaceFile writes data as rel inside the workspace dir, making
// the folders it needs.
// With dryRun it checks the same things and says what it would do, and
// changes nothing.
func writeWorkspaceFile(dir, rel string, data []byte, overwrite, dryRun bool) (api.WorkspaceFileResult, error) {
	res := api.WorkspaceFileResult{Path: rel, Size: int64(len(data)), DryRun: dryRun}
	if dryRun {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			res.Action = api.FileCreated
			return res, nil
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return res, fmt.Errorf("create the workspace %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return res, fmt.Errorf("open the workspace %s: %w", dir, err)
	}
	defer root.Close()
	conflict := func(format string, args ...any) error {
		return &api.Error{Code: api.CodeConflict, Message: fmt.Sprintf(format, args...)}
	}
	// Every folder on the way must be a real folder, not a link.
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		sub := strings.Join(parts[:i], "/")
		fi, err := root.Lstat(sub)
		switch {
		case errors.Is(err, fs.ErrNotExist) && dryRun:
			res.Action = api.FileCreated
			return res, nil
		case errors.Is(err, fs.ErrNotExist):
			if err := root.Mkdir(sub, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return res, fmt.Errorf("create %s in the workspace: %w", sub, err)
			}
		case err != nil:
			return res, fmt.Errorf("check %s in the workspace: %w", sub, err)
		case !fi.IsDir():
			return res, conflict("cannot write %s: %s in the workspace is a symlink or a file, not a folder; nothing was written", rel, sub)
		}
	}
	res.Action = api.FileCreated
	fi, err := root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return res, fmt.Errorf("check %s in the workspace: %w", rel, err)
	case !fi.Mode().IsRegular():
		return res, conflict("cannot write %s: it is a symlink or not a regular file in the workspace; nothing was written", rel)
	default:
		// Read at most one byte more than the upload: a longer file
		// differs, and a huge file the agent wrote is never loaded whole.
		limit := int64(len(data)) + 1
		if t, err := workspace.Template(rel); err == nil && int64(len(t))+1 > limit {
			limit = int64(len(t)) + 1 // enough to recognise our seeded text
		}
		old, err := readAtMost(root, rel, limit)
		if err != nil {
			return res, fmt.Errorf("read %s in the workspace: %w", rel, err)
		}
		if bytes.Equal(old, data) {
			res.Action = api.FileUnchanged
			return res, nil
		}
		if !overwrite && !workspace.IsTemplate(rel, old) {
			return res, conflict("%s in the workspace differs from the one uploaded; nothing was written (pass overwrite to replace it)", rel)
		}
		res.Action = api.FileReplaced
	}
	if dryRun {
		return res, nil
	}
	tmp := rel + ".tmp-" + transcript.NewID()
	// 0600 like the files the gateway seeds: notes and USER.md are private.
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return res, fmt.Errorf("write %s in the workspace: %w", rel, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		_ = root.Remove(tmp) // best effort; the error below is what matters
		return res, fmt.Errorf("write %s in the workspace: %w", rel, err)
	}
	return res, nil
}

// readAtMost reads up to n bytes of the file rel in root, without
// following a symlink at rel.
func readAtMost(root *os.Root, rel string, n int64) ([]byte, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}
