// Package workspace seeds an agent's workspace with OpenClaw's bootstrap
// files on first start: AGENTS.md (how to work), SOUL.md (persona),
// TOOLS.md (notes on this machine), IDENTITY.md (name and style), USER.md
// (the person helped) and, for a brand-new workspace only, BOOTSTRAP.md, a
// first-run ritual that tells the agent to fill in the others and then
// delete it. engine/prompt loads them into the system prompt
// (docs/design.md §3.5); they are the user's files afterwards.
//
// The texts are ours (templates/*.md, embedded) and deliberately small:
// they are part of every request, and a 2k–4k-token local model pays for
// each line (the budget cuts bootstrap files first, docs/design.md §5). All six
// together are about 2,200 characters: 638 tokens in Llama-2's 32k
// SentencePiece vocabulary, 1,374 in stories260K's 512-token one (measured
// with the runner's tokenizer); TestTemplatesSmall keeps them under 2,400
// bytes.
//
// Choices made where the spec was silent:
//   - As OpenClaw does, every start writes the five standing files that are
//     missing (a deleted SOUL.md comes back as the template); a file that
//     exists in any form — even empty, even a symlink, dangling or not — is
//     never touched, and no symlink is ever followed (the create is
//     O_EXCL, inside an os.Root).
//   - BOOTSTRAP.md is written only when the workspace is brand new (none of
//     the bootstrap files, MEMORY.md or memory/ exist) and has never been
//     seeded. Whether it was seeded is kept outside the workspace, in
//     <state-dir>/workspace-state.json keyed by the workspace's absolute
//     path (OpenClaw keeps .openclaw/workspace-state.json inside it; ours
//     stays out of the user's folder and of the agent's reach), so a
//     BOOTSTRAP.md the agent deleted is not re-created on the next start.
//     A workspace that already had files when first seen is recorded as
//     seeded without a ritual (an upgrade or a migrated workspace).
//   - Once BOOTSTRAP.md is gone (or blank), the record gets
//     onboardingCompletedAt, as OpenClaw's does.
//   - A read-only workspace, or one that cannot be written for another
//     reason, is a warning (Result.ReadOnly): the gateway still starts and
//     answers without the files. A state file that cannot be parsed is left
//     as it is (a warning) and no BOOTSTRAP.md is written while it is bad.
package workspace

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

//go:embed templates/*.md
var templates embed.FS

// Bootstrap is the first-run ritual, written only into a brand-new
// workspace.
const Bootstrap = "BOOTSTRAP.md"

// Standing are the files kept in the workspace for good, in prompt order.
var Standing = []string{"AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md"}

// StateFile is the name of the seeding record in the state dir.
const StateFile = "workspace-state.json"

// Template returns our text for one of the bootstrap files (Standing or
// Bootstrap).
func Template(name string) (string, error) {
	b, err := templates.ReadFile("templates/" + name)
	if err != nil {
		return "", fmt.Errorf("no bootstrap template %q: %w", name, err)
	}
	return string(b), nil
}

// IsTemplate reports whether data is exactly our seeded text for the
// workspace file rel: such a file is still ours, not the user's, so a
// migration may replace it (an OpenClaw user's own SOUL.md wins over the
// default we wrote at first start).
func IsTemplate(rel string, data []byte) bool {
	t, err := Template(rel)
	return err == nil && t == string(data)
}

// Result says what Ensure did.
type Result struct {
	Written   []string // files created, in order
	Bootstrap bool     // BOOTSTRAP.md was written (a brand-new workspace)
	// ReadOnly: the workspace (or a file in it) could not be written; the
	// files missing were left missing.
	ReadOnly bool
	// Warnings are problems that left the workspace usable (read-only
	// workspace, unreadable state file); Ensure's error is for the rest.
	Warnings []string
}

// Entry is one workspace's record in the state file.
type Entry struct {
	Agent                 string    `json:"agent,omitempty"`
	BootstrapSeededAt     time.Time `json:"bootstrapSeededAt"`
	OnboardingCompletedAt time.Time `json:"onboardingCompletedAt,omitzero"`
}

type stateFile struct {
	Version    int               `json:"version"`
	Workspaces map[string]*Entry `json:"workspaces"`
}

// Ensure seeds the workspace dir (absolute, existing) of agent with the
// bootstrap files that are missing, and records it in stateDir. now stamps
// the record.
func Ensure(dir, agent, stateDir string, now time.Time) (Result, error) {
	var res Result
	if !filepath.IsAbs(dir) {
		return res, fmt.Errorf("workspace %q is not an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return res, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	defer root.Close()

	statePath := filepath.Join(stateDir, StateFile)
	st, stateErr := loadState(statePath)
	if stateErr != nil {
		res.Warnings = append(res.Warnings, stateErr.Error()+" (left as it is; BOOTSTRAP.md is not written until it is fixed or removed)")
	}
	entry := st.Workspaces[dir]
	brandNew := entry == nil && stateErr == nil && isBrandNew(root)

	names := Standing
	if brandNew {
		names = append(append([]string(nil), Standing...), Bootstrap)
	}
	for _, name := range names {
		created, err := writeIfMissing(root, name)
		switch {
		case isReadOnly(err):
			res.ReadOnly = true
			res.Warnings = append(res.Warnings, fmt.Sprintf("workspace %s is read-only: bootstrap file %s not written (%v)", dir, name, err))
		case err != nil:
			return res, fmt.Errorf("bootstrap file %s in %s: %w", name, dir, err)
		case created:
			res.Written = append(res.Written, name)
			res.Bootstrap = res.Bootstrap || name == Bootstrap
		}
	}

	if stateErr != nil {
		return res, nil
	}
	changed := false
	switch {
	case entry == nil && !res.ReadOnly:
		// Recorded once the files are there (or were there already): a
		// read-only workspace is tried again on the next start.
		entry = &Entry{Agent: agent, BootstrapSeededAt: now.UTC()}
		st.Workspaces[dir] = entry
		changed = true
	case entry != nil && entry.OnboardingCompletedAt.IsZero() && ritualDone(root):
		entry.OnboardingCompletedAt = now.UTC()
		changed = true
	}
	if changed {
		if err := saveState(statePath, st); err != nil {
			return res, err
		}
	}
	return res, nil
}

// isBrandNew: nothing the user or an earlier install would have put there.
func isBrandNew(root *os.Root) bool {
	for _, name := range append([]string{Bootstrap, "MEMORY.md", "memory.md", "memory"}, Standing...) {
		if _, err := root.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
			return false // present, or unknowable: not new
		}
	}
	return true
}

// ritualDone: BOOTSTRAP.md was deleted or emptied (the prompt builder
// skips a blank file).
func ritualDone(root *os.Root) bool {
	fi, err := root.Lstat(Bootstrap)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return false
	}
	b, err := root.ReadFile(Bootstrap)
	return err == nil && strings.TrimSpace(string(b)) == ""
}

// writeIfMissing creates name with its template. O_EXCL makes the create
// fail on anything already there, a symlink included (it is not
// followed), so an existing file is never overwritten.
func writeIfMissing(root *os.Root, name string) (bool, error) {
	text, err := Template(name)
	if err != nil {
		return false, err
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, werr := f.WriteString(text)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		// Ours, and half-written: remove it so the next start tries again.
		return false, errors.Join(err, root.Remove(name))
	}
	return true, nil
}

func isReadOnly(err error) bool {
	return errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission)
}

// loadState reads the state file; a missing one is empty.
func loadState(path string) (*stateFile, error) {
	st := &stateFile{Version: 1, Workspaces: map[string]*Entry{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, st); err != nil {
		return &stateFile{Version: 1, Workspaces: map[string]*Entry{}}, fmt.Errorf("parse %s: %w", path, err)
	}
	if st.Workspaces == nil {
		st.Workspaces = map[string]*Entry{}
	}
	for k, e := range st.Workspaces {
		if e == nil {
			delete(st.Workspaces, k)
		}
	}
	return st, nil
}

// saveState replaces the state file atomically (temp file, rename).
func saveState(path string, st *stateFile) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".workspace-state-*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	if err := errors.Join(werr, tmp.Chmod(0o600), tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
