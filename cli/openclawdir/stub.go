// Package openclawdir reads a real OpenClaw (2026.9) state dir (default
// ~/.openclaw) read-only, for `openclaw migrate openclaw`.
//
// STUB (branch mig-transcript): a minimal stand-in with the agreed API
// (/tmp/prompts/reader-api.md) so `openclaw migrate` compiles and its
// end-to-end test runs before the real reader (branch mig-reader: SQLite
// store, zstd archives) is merged. It reads only openclaw.json (JSON5),
// agents/<id>/ folders, the workspace and legacy
// agents/<id>/sessions/*.jsonl (keys from sessions.json). INTEGRATOR:
// delete this file when merging cli/openclawdir from mig-reader.
//
// Choices made where the spec was silent: none beyond the agreed API; this
// file is temporary.
package openclawdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/titanous/json5"
)

// Dir is an OpenClaw state dir opened for reading.
type Dir struct{ path string }

// Config is openclaw.json as parsed.
type Config struct {
	File string
	Raw  map[string]any
}

// Agent is one agent of the state dir.
type Agent struct{ ID, Workspace string }

// File is one workspace file.
type File struct {
	Rel     string
	Size    int64
	ModTime time.Time
	Open    func() (io.ReadCloser, error)
}

// SessionOptions choose which sessions Sessions lists.
type SessionOptions struct{ Deleted bool }

// Session is one transcript.
type Session struct {
	Key      string
	ID       string
	Source   string
	Archived bool
	Deleted  bool
	Updated  time.Time
	Open     func() (io.ReadCloser, error)
}

// Open opens the state dir at path.
func Open(path string) (*Dir, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	_, errCfg := os.Stat(filepath.Join(abs, "openclaw.json"))
	_, errAgents := os.Stat(filepath.Join(abs, "agents"))
	if errCfg != nil && errAgents != nil {
		return nil, fmt.Errorf("%s does not look like an OpenClaw state dir (no openclaw.json, no agents/)", abs)
	}
	return &Dir{path: abs}, nil
}

// Path is the state dir.
func (d *Dir) Path() string { return d.path }

// Close releases the dir.
func (d *Dir) Close() error { return nil }

// Config reads openclaw.json; nil, nil when there is none.
func (d *Dir) Config() (*Config, error) {
	f := filepath.Join(d.path, "openclaw.json")
	b, err := os.ReadFile(f)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var raw map[string]any
	if err := json5.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", f, err)
	}
	return &Config{File: f, Raw: raw}, nil
}

// Agents lists agents/<id>/ folders ("main" when none), with the default
// workspace for main.
func (d *Dir) Agents() ([]Agent, error) {
	ents, _ := os.ReadDir(filepath.Join(d.path, "agents"))
	var out []Agent
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, Agent{ID: e.Name(), Workspace: d.workspace(e.Name())})
		}
	}
	if len(out) == 0 {
		out = append(out, Agent{ID: "main", Workspace: d.workspace("main")})
	}
	return out, nil
}

func (d *Dir) workspace(id string) string {
	ws := filepath.Join(d.path, "workspace")
	if id != "main" {
		ws += "-" + id
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return ""
	}
	return ws
}

// WorkspaceFiles lists the bootstrap files, memory.md/MEMORY.md and memory/**/*.md.
func (d *Dir) WorkspaceFiles(agentID string) ([]File, error) {
	ws := d.workspace(agentID)
	if ws == "" {
		return nil, nil
	}
	var out []File
	err := filepath.WalkDir(ws, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(ws, p)
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			if rel != "." && (strings.HasPrefix(e.Name(), ".") || !strings.HasPrefix(rel, "memory")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() || !strings.HasSuffix(rel, ".md") {
			return nil
		}
		if !strings.Contains(rel, "/") && !slices.Contains([]string{"AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "BOOTSTRAP.md", "HEARTBEAT.md", "MEMORY.md", "memory.md"}, rel) {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		out = append(out, File{Rel: rel, Size: fi.Size(), ModTime: fi.ModTime(), Open: func() (io.ReadCloser, error) { return os.Open(p) }})
		return nil
	})
	return out, err
}

// Sessions lists the legacy JSONL transcripts of agentID.
func (d *Dir) Sessions(agentID string, opt SessionOptions) ([]Session, error) {
	dir := filepath.Join(d.path, "agents", agentID, "sessions")
	keys := map[string]string{} // session id → key
	if b, err := os.ReadFile(filepath.Join(dir, "sessions.json")); err == nil {
		var store map[string]struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(b, &store); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "sessions.json"), err)
		}
		for k, v := range store {
			keys[v.SessionID] = k
		}
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Session
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(name, ".jsonl") {
			continue
		}
		p := filepath.Join(dir, name)
		id, err := headerID(p)
		if err != nil {
			return nil, err
		}
		fi, _ := e.Info()
		key := keys[id]
		out = append(out, Session{Key: key, ID: id, Source: "jsonl", Archived: key == "", Updated: fi.ModTime(),
			Open: func() (io.ReadCloser, error) { return os.Open(p) }})
	}
	return out, nil
}

func headerID(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var h struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(f).Decode(&h); err != nil {
		return "", fmt.Errorf("%s: header: %w", p, err)
	}
	return h.ID, nil
}
