package service

// The state a user's own gateway kept: `gateway install` says when it is
// not where the service will look (the Linux service uses
// /var/lib/openclaw, never a home), and --migrate-state moves it there.
// Choices where the spec was silent:
//   - Nothing is moved while a gateway other than the service being
//     replaced answers at the old state dir's socket, nor into a state dir
//     that holds anything: there is no merging two states.
//   - Within a file system the move is one rename. Across file systems the
//     state is copied into a temporary directory beside the target, renamed
//     into place, and only then is the old one removed: a failure leaves
//     the old state whole.
//   - The model index (models/models.json) holds absolute paths; those
//     under the old state dir are rewritten. Other paths in the config are
//     the user's: install says when the config names the old dir.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/openclaw-edge/edge/cli/atomicfile"
	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/engine/doctor"
	"github.com/openclaw-edge/edge/systemd"
)

// StateDirs returns the state dir a gateway run by the user keeps (from)
// and the one the service uses (to). Linux: from is flag (the global
// --state-dir), else $OPENCLAW_STATE_DIR, else ~/.openclaw-edge of the
// user who ran install (under sudo, $SUDO_USER's); to is
// /var/lib/openclaw. macOS: from is ~/.openclaw-edge, to the agent's state
// dir (flag, else $OPENCLAW_STATE_DIR, else ~/.openclaw-edge).
func (o *OS) StateDirs(flag string) (from, to string, err error) {
	home := o.UserHome
	if home == "" {
		home = o.Home
	}
	if o.GOOS == "darwin" {
		to, err = o.launchdStateDir(flag)
		if err != nil || o.Home == "" {
			return to, to, err
		}
		return filepath.Join(o.Home, config.DefaultStateDirName), to, nil
	}
	from = flag
	if from == "" {
		from = os.Getenv("OPENCLAW_STATE_DIR")
	}
	if from == "" && home != "" {
		from = filepath.Join(home, config.DefaultStateDirName)
	}
	if from != "" {
		if from, err = filepath.Abs(config.ExpandHome(from)); err != nil {
			return "", "", fmt.Errorf("state dir %s: %w", flag, err)
		}
	}
	return from, systemd.StateDir, nil
}

// stateSteps plans what becomes of the state in from when the service
// uses to: nothing when it is the same or holds nothing; a note when it
// stays behind; with opt.MigrateState, the move (and on Linux the chown to
// the service user). agentPID is the pid of the launchd agent that install
// replaces (0: none): it may run from the old state, as it is stopped first.
func (o *OS) stateSteps(from, to string, opt InstallOptions, agentPID int) ([]Step, []string, error) {
	if from == "" || from == to {
		return nil, nil, nil
	}
	entries, err := os.ReadDir(o.Path(from))
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("look at the state a gateway of yours kept: %w", err)
	}
	what := summarize(o.Path(from), entries)
	sudo := ""
	if o.GOOS == "linux" {
		sudo = "sudo "
	}
	if !opt.MigrateState {
		return nil, []string{
			fmt.Sprintf("note: %s (sessions, config, models: %s) stays behind: the service uses %s and starts without it.", from, what, to),
			"  move it there with `" + sudo + "openclaw gateway install --migrate-state` (with the same flags), or copy what you need yourself",
		}, nil
	}
	if held, err := os.ReadDir(o.Path(to)); err == nil && len(held) > 0 {
		return nil, nil, fmt.Errorf("--migrate-state: %s already holds a state (%s): nothing was changed; move it aside first if %s should replace it", to, names(held), from)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("--migrate-state: look at the target: %w", err)
	}
	if r := opt.Running; r != nil && (r.PID == 0 || r.PID != agentPID) {
		pid, kill := "", ""
		if r.PID > 0 {
			pid, kill = fmt.Sprintf("pid %d, ", r.PID), fmt.Sprintf(", or kill %d", r.PID)
		}
		return nil, nil, fmt.Errorf("--migrate-state: a gateway is running from %s (%sanswering at %s): stop it first (Ctrl-C where it runs%s), then run install again; nothing was changed", from, pid, r.Socket, kill)
	}
	steps := []Step{{action: "move", path: from, dest: to, note: what}}
	if o.GOOS == "linux" {
		// systemd would chown the StateDirectory at start too; this says so.
		steps = append(steps, Step{action: "run", argv: []string{"chown", "-R", systemd.User + ":" + systemd.User, to}})
	}
	var notes []string
	for _, name := range []string{"openclaw.json", "openclaw.json5"} {
		data, err := os.ReadFile(filepath.Join(o.Path(from), name))
		if err == nil && (bytes.Contains(data, []byte(from)) || bytes.Contains(data, []byte("~/"))) {
			notes = append(notes, fmt.Sprintf("note: %s names paths under %s or ~: they are not moved; point them into %s (`openclaw config validate` checks them)", name, from, to))
		}
	}
	return steps, notes, nil
}

// summarize says what a state dir holds: "12 files, 3.2 GiB: openclaw.json,
// state.db, models/, workspace/".
func summarize(dir string, entries []fs.DirEntry) string {
	var files, size int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil // a summary: what cannot be read is not counted
		}
		if fi, err := d.Info(); err == nil {
			files++
			size += fi.Size()
		}
		return nil
	})
	return fmt.Sprintf("%d files, %s: %s", files, doctor.Bytes(size), names(entries))
}

// names lists entries, directories with a slash, the first eight.
func names(entries []fs.DirEntry) string {
	var out []string
	for i, e := range entries {
		if i == 8 {
			out = append(out, fmt.Sprintf("… %d more", len(entries)-i))
			break
		}
		n := e.Name()
		if e.IsDir() {
			n += "/"
		}
		out = append(out, n)
	}
	return strings.Join(out, ", ")
}

// rename is os.Rename; tests replace it to take the copy path.
var rename = os.Rename

// moveState moves the state dir src to dst (absent or empty), and points
// the model index's paths under from (src's path on the machine) at to.
func moveState(src, dst, from, to string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s is not empty: %w", to, err)
	}
	err := rename(src, dst)
	var le *os.LinkError
	switch {
	case errors.Is(err, syscall.EXDEV):
		err = copyThenRename(src, dst, from, to)
	case errors.As(err, &le):
		return le.Err // the step that failed already names both paths
	case err == nil:
		err = rewriteModelIndex(dst, from, to)
	}
	if err != nil {
		return err
	}
	return os.Chmod(dst, 0o700) // the state's sessions and keys are private
}

// copyThenRename copies src into a temporary directory beside dst, renames
// it into place, and only then removes src.
func copyThenRename(src, dst, from, to string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".moving-*")
	if err != nil {
		return err
	}
	if err := copyTree(src, tmp); err != nil {
		return errors.Join(err, os.RemoveAll(tmp))
	}
	if err := rewriteModelIndex(tmp, from, to); err != nil {
		return errors.Join(err, os.RemoveAll(tmp))
	}
	if err := rename(tmp, dst); err != nil {
		return errors.Join(err, os.RemoveAll(tmp))
	}
	if err := os.RemoveAll(src); err != nil {
		return fmt.Errorf("the state is in %s now, but the old copy stays: %w", to, err)
	}
	return nil
}

// copyTree copies the directory src into dst (which exists): directories,
// regular files (synced) and symbolic links, with their modes. Sockets
// and other special files (a stale gateway.sock) are left out.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case rel == ".":
			return os.Chmod(dst, fi.Mode().Perm())
		case d.IsDir():
			return os.Mkdir(target, fi.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return copyFile(path, target, fi.Mode().Perm())
		}
		return nil
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}

// rewriteModelIndex points the paths of the model index in the state dir
// dir (models/models.json: absolute paths) that lie under from at to.
func rewriteModelIndex(dir, from, to string) error {
	path := filepath.Join(dir, "models", "models.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("the model index: %w", err)
	}
	var idx map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // sizes stay exact
	if err := dec.Decode(&idx); err != nil {
		return fmt.Errorf("the model index %s is damaged (%v): the models' paths were not moved; import them again", path, err)
	}
	models, _ := idx["models"].(map[string]any)
	changed := false
	for _, m := range models {
		e, _ := m.(map[string]any)
		if p, ok := e["path"].(string); ok {
			if rest, ok := strings.CutPrefix(p, from+string(filepath.Separator)); ok {
				e["path"] = filepath.Join(to, rest)
				changed = true
			}
		}
	}
	if !changed {
		return nil
	}
	out, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the model index: %w", err)
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(append(out, '\n'))
		return err
	})
}
