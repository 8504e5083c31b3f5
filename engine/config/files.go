package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// readConfigFile reads the config file at path, refusing anything but a
// regular file of at most maxFileSize bytes before reading it: a FIFO or a
// character device such as /dev/zero would block the gateway's start or feed
// it without end, and a directory or socket cannot be a config. The file is
// checked again through the opened descriptor, so one swapped for another
// kind of file between the two looks is refused too (the open itself does not
// block on a FIFO: O_NONBLOCK).
func readConfigFile(path string) ([]byte, error) {
	before, err := os.Stat(path) // follows a symlink: a linked config is fine
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	if err := regularConfig(path, before); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	defer f.Close()
	after, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	if err := regularConfig(path, after); err != nil {
		return nil, err
	}
	if !os.SameFile(before, after) {
		return nil, &Error{File: path, Reason: "the file was replaced while it was being opened; try again"}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("load config: read %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return nil, tooLarge(path)
	}
	return data, nil
}

func tooLarge(name string) *Error {
	return &Error{File: name, Reason: fmt.Sprintf("file is larger than %d bytes", maxFileSize)}
}

// regularConfig refuses a config path that is not a regular file, or one too
// large, naming what it is.
func regularConfig(path string, fi fs.FileInfo) error {
	m := fi.Mode()
	var what string
	switch {
	case m.IsRegular():
		if fi.Size() > maxFileSize {
			return tooLarge(path)
		}
		return nil
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0 || m&fs.ModeCharDevice != 0:
		what = "a device"
	default:
		what = "not a regular file"
	}
	return &Error{File: path, Reason: "is " + what + ": the config must be a regular file"}
}

// workspaceProblem is one finding of checkWorkspaces.
type workspaceProblem struct {
	err     *Error
	warning bool
}

// checkWorkspaces checks each agent's workspace without creating anything:
// an existing one must be a directory (read-only is a warning: file tools
// that write and the memory flush will fail); a missing one must be
// creatable, i.e. its nearest existing ancestor a writable directory.
func (c *Config) checkWorkspaces() []workspaceProblem {
	var out []workspaceProblem
	seen := map[string]bool{}
	for _, id := range c.AgentIDs() {
		a, ok := c.Agent(id)
		if !ok || a.Workspace == "" || seen[a.Workspace] {
			continue
		}
		seen[a.Workspace] = true
		key, who := "agents.defaults.workspace", ""
		if i := c.agentIndex(id); i >= 0 && c.Agents.List[i].Workspace != "" {
			key = indexPath("agents.list", i) + ".workspace"
		} else if !a.Default {
			who = fmt.Sprintf(" (agent %s's workspace derived from it)", id)
		}
		problem := func(warning bool, format string, args ...any) {
			out = append(out, workspaceProblem{err: c.src.err(key, fmt.Sprintf(format, args...)+who), warning: warning})
		}
		fi, err := os.Stat(a.Workspace)
		switch {
		case err == nil && !fi.IsDir():
			problem(false, "%s exists and is not a directory", a.Workspace)
		case err == nil:
			if writable(a.Workspace) != nil {
				problem(true, "%s is read-only: tools that write files and the memory flush will fail", a.Workspace)
			}
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			if reason := creatable(a.Workspace); reason != "" {
				problem(false, "%s does not exist and cannot be created: %s", a.Workspace, reason)
			}
		default:
			problem(false, "%s cannot be checked: %v", a.Workspace, err)
		}
	}
	return out
}

// agentIndex is the index of agent id in agents.list, or -1.
func (c *Config) agentIndex(id string) int {
	for i, a := range c.Agents.List {
		if a.ID == id {
			return i
		}
	}
	return -1
}

// creatable explains why dir, which does not exist, could not be created by
// MkdirAll; "" when it could.
func creatable(dir string) string {
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case err == nil && !fi.IsDir():
			return p + " is not a directory"
		case err == nil:
			if writable(p) != nil {
				return p + " is not writable by this user"
			}
			return ""
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return fmt.Sprintf("%s: %v", p, err)
		}
		if parent := filepath.Dir(p); parent == p {
			return "no existing parent directory"
		}
	}
}
