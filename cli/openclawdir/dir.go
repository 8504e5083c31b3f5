package openclawdir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/titanous/json5"
)

// Limits on what is read from a foreign directory. A variable so tests can
// lower them.
var (
	// MaxConfigBytes bounds openclaw.json.
	MaxConfigBytes int64 = 16 << 20
	// MaxFileBytes bounds one workspace file: File.Open fails beyond it.
	MaxFileBytes int64 = 32 << 20
	// MaxWorkspaceFiles bounds how many files WorkspaceFiles lists.
	MaxWorkspaceFiles = 10000
	// MaxSessionBytes bounds one transcript as Session.Open yields it
	// (after decompression).
	MaxSessionBytes int64 = 256 << 20
	// MaxDatabaseBytes bounds what one Dir copies of the SQLite stores
	// (and their WALs) to read them: all agents together, so many agents
	// cannot fill the disk.
	MaxDatabaseBytes int64 = 8 << 30
	// MaxIndexBytes bounds a legacy sessions.json.
	MaxIndexBytes int64 = 64 << 20
)

// Dir is an OpenClaw state dir opened for reading.
type Dir struct {
	path string
	root *os.Root

	mu     sync.Mutex
	tmp    string         // private copies of SQLite stores, removed by Close
	copied int64          // bytes copied into tmp, at most MaxDatabaseBytes
	dbs    map[string]*db // by agent id
	closed bool
}

// Open opens the OpenClaw state dir at path for reading. It fails when path
// is not a directory or holds neither openclaw.json nor agents/. It never
// writes to the directory.
func Open(dir string) (*Dir, error) {
	if dir == "" {
		return nil, errors.New("no OpenClaw state dir given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("OpenClaw state dir %q: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("OpenClaw state dir %s does not exist (OpenClaw keeps it in ~/.openclaw, or $OPENCLAW_STATE_DIR)", abs)
		}
		return nil, fmt.Errorf("OpenClaw state dir: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("OpenClaw state dir %s is not a directory", abs)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("OpenClaw state dir: %w", err)
	}
	sweepStaleCopies(time.Now())
	d := &Dir{path: abs, root: root, dbs: map[string]*db{}}
	if !d.exists(configName) && !d.exists(configName5) && !d.isDir("agents") {
		root.Close()
		return nil, fmt.Errorf("%s does not look like an OpenClaw state dir: it has no %s and no agents/ folder", abs, configName)
	}
	return d, nil
}

// Path returns the state dir's absolute path.
func (d *Dir) Path() string { return d.path }

// Close releases the SQLite stores and removes their private copies.
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	for _, s := range d.dbs {
		if err := s.close(); err != nil {
			errs = append(errs, err)
		}
	}
	d.dbs = nil
	if d.tmp != "" {
		if err := os.RemoveAll(d.tmp); err != nil {
			errs = append(errs, fmt.Errorf("removing the private copy of OpenClaw's store: %w", err))
		}
	}
	if err := d.root.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

const (
	configName  = "openclaw.json"
	configName5 = "openclaw.json5"
)

// Config is OpenClaw's configuration file as it is on disk.
type Config struct {
	File string         // absolute path of the file read
	Raw  map[string]any // the JSON5 document; values as titanous/json5 decodes them
}

// Config reads openclaw.json (or openclaw.json5). It returns nil, nil when
// there is none. ${VAR} references and $include are left as written.
func (d *Dir) Config() (*Config, error) {
	name := configName
	if !d.exists(name) {
		name = configName5
		if !d.exists(name) {
			return nil, nil
		}
	}
	b, err := d.readFile(name, MaxConfigBytes)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(d.path, name)
	var raw map[string]any
	if err := json5.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%s: not valid JSON5: %w", file, err)
	}
	if raw == nil {
		return nil, fmt.Errorf("%s: the top level is not an object", file)
	}
	return &Config{File: file, Raw: raw}, nil
}

// Agent is one OpenClaw agent.
type Agent struct {
	ID        string
	Workspace string // absolute; "" when it does not exist
}

// agentIDPattern is what OpenClaw's normalizeAgentId leaves: anything else
// cannot be an agent folder it wrote, and may be a traversal attempt.
var agentIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`) })

func checkAgentID(id string) error {
	if !agentIDPattern().MatchString(id) {
		return fmt.Errorf("agent id %q is not one OpenClaw writes (lower-case letters, digits, _ and -, at most 64)", id)
	}
	return nil
}

type agentConf struct {
	id, workspace string
	isDefault     bool
}

// agentsConf reads the agents and agents.defaults.workspace from the
// config: agents.entries (id → agent, what OpenClaw 2026.9 writes; sorted
// by id, agents.defaults.systemAgent the default) when it is there, as
// OpenClaw reads it first, else agents.list. Entries without a usable id
// are skipped.
func agentsConf(cfg *Config) (list []agentConf, defaultWorkspace string) {
	if cfg == nil {
		return nil, ""
	}
	agents, _ := cfg.Raw["agents"].(map[string]any)
	defs, _ := agents["defaults"].(map[string]any)
	defaultWorkspace, _ = defs["workspace"].(string)
	add := func(id string, m map[string]any) {
		id = strings.ToLower(strings.TrimSpace(id))
		if checkAgentID(id) != nil {
			return
		}
		ws, _ := m["workspace"].(string)
		def, _ := m["default"].(bool)
		list = append(list, agentConf{id: id, workspace: strings.TrimSpace(ws), isDefault: def})
	}
	if entries, ok := agents["entries"].(map[string]any); ok {
		system, _ := defs["systemAgent"].(map[string]any)
		sysID, _ := system["agentId"].(string)
		ids := make([]string, 0, len(entries))
		for id := range entries {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			if m, ok := entries[id].(map[string]any); ok {
				add(id, m)
			}
		}
		if sysID = strings.ToLower(strings.TrimSpace(sysID)); sysID != "" {
			for i := range list {
				list[i].isDefault = list[i].id == sysID
			}
		}
		return list, strings.TrimSpace(defaultWorkspace)
	}
	items, _ := agents["list"].([]any)
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			id, _ := m["id"].(string)
			add(id, m)
		}
	}
	return list, strings.TrimSpace(defaultWorkspace)
}

// Agents lists every agent: those in the config's agents.entries or
// agents.list and those with a folder under agents/, sorted by id; "main"
// when the config lists none (OpenClaw's default agent).
func (d *Dir) Agents() ([]Agent, error) {
	cfg, err := d.Config()
	if err != nil {
		return nil, err
	}
	list, defWS := agentsConf(cfg)
	ids := map[string]bool{}
	for _, a := range list {
		ids[a.id] = true
	}
	if len(list) == 0 {
		ids["main"] = true
	}
	ents, err := fs.ReadDir(d.root.FS(), "agents")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", filepath.Join(d.path, "agents"), err)
	}
	for _, e := range ents {
		// Symlinked agent folders are skipped: they may point anywhere.
		if e.IsDir() && checkAgentID(e.Name()) == nil {
			ids[e.Name()] = true
		}
	}
	defaultID := "main"
	for i, a := range list {
		if a.isDefault || (i == 0 && !hasDefault(list)) {
			defaultID = a.id
			break
		}
	}
	var out []Agent
	for id := range ids {
		ws := d.workspaceOf(id, defaultID, list, defWS)
		if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
			ws = ""
		}
		out = append(out, Agent{ID: id, Workspace: ws})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func hasDefault(list []agentConf) bool {
	for _, a := range list {
		if a.isDefault {
			return true
		}
	}
	return false
}

// workspaceOf resolves an agent's workspace the way OpenClaw's
// resolveAgentWorkspaceDir does, with the state dir standing for
// ~/.openclaw.
func (d *Dir) workspaceOf(id, defaultID string, list []agentConf, defWS string) string {
	for _, a := range list {
		if a.id == id && a.workspace != "" {
			return d.userPath(a.workspace)
		}
	}
	if id == defaultID {
		if defWS != "" {
			return d.userPath(defWS)
		}
		return filepath.Join(d.path, "workspace")
	}
	if defWS != "" {
		return filepath.Join(d.userPath(defWS), id)
	}
	return filepath.Join(d.path, "workspace-"+id)
}

// userPath expands ~ like OpenClaw's resolveUserPath; a relative path is
// taken relative to the state dir (OpenClaw would use its working
// directory, which is not known here).
func (d *Dir) userPath(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[1:])
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(d.path, p)
	}
	return filepath.Clean(p)
}

// File is one workspace file.
type File struct {
	Rel     string // slash-separated, relative to the workspace
	Size    int64
	ModTime time.Time
	// Open reads the file; it fails when the file grew past MaxFileBytes or
	// was replaced by something other than a regular file.
	Open func() (io.ReadCloser, error)
}

// bootstrapFiles are the workspace files OpenClaw loads into the prompt,
// plus its memory files.
var bootstrapFiles = []string{"AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "BOOTSTRAP.md", "HEARTBEAT.md", "MEMORY.md", "memory.md"}

// WorkspaceFiles lists the agent's bootstrap and memory files: the files
// named in bootstrapFiles and every memory/**/*.md. Symbolic links, dot
// files and dot folders are skipped; nil when the agent has no workspace.
func (d *Dir) WorkspaceFiles(agentID string) ([]File, error) {
	if err := checkAgentID(agentID); err != nil {
		return nil, err
	}
	agents, err := d.Agents()
	if err != nil {
		return nil, err
	}
	ws := ""
	for _, a := range agents {
		if a.ID == agentID {
			ws = a.Workspace
		}
	}
	if ws == "" {
		return nil, nil
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, fmt.Errorf("workspace of agent %s: %w", agentID, err)
	}
	// Each File.Open reopens the root, so nothing stays open here.
	defer root.Close()
	var out []File
	add := func(rel string, fi fs.FileInfo) {
		out = append(out, File{Rel: rel, Size: fi.Size(), ModTime: fi.ModTime(), Open: func() (io.ReadCloser, error) {
			return openCapped(ws, rel, MaxFileBytes)
		}})
	}
	for _, name := range bootstrapFiles {
		fi, err := root.Lstat(name)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("%s: %w", filepath.Join(ws, name), err)
		}
		// On a case-insensitive file system MEMORY.md and memory.md are the
		// same file: list it once, under its own name.
		if !fi.Mode().IsRegular() || fi.Name() != name && seen(out, fi.Name()) {
			continue
		}
		add(name, fi)
	}
	// memory/ itself may be a link out of the workspace: WalkDir would
	// follow its root.
	if fi, err := root.Lstat("memory"); err != nil || !fi.IsDir() {
		return out, nil
	}
	err = fs.WalkDir(root.FS(), "memory", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == "memory" && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if strings.HasPrefix(e.Name(), ".") {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		// WalkDir reports symbolic links as such and does not follow them.
		if e.Type()&fs.ModeSymlink != 0 || !e.Type().IsRegular() || path.Ext(p) != ".md" {
			return nil
		}
		if len(out) >= MaxWorkspaceFiles {
			return fmt.Errorf("more than %d files under memory/", MaxWorkspaceFiles)
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		add(p, fi)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", ws, err)
	}
	return out, nil
}

func seen(files []File, rel string) bool {
	for _, f := range files {
		if f.Rel == rel {
			return true
		}
	}
	return false
}

// openCapped opens rel under dir without leaving dir, refusing anything but
// a regular file of at most limit bytes; reading past limit fails too (the
// file may grow after the check).
func openCapped(dir, rel string, limit int64) (io.ReadCloser, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return openInRoot(root, dir, rel, limit)
}

func openInRoot(root *os.Root, dir, rel string, limit int64) (*cappedFile, error) {
	name := filepath.Join(dir, filepath.FromSlash(rel))
	if fi, err := root.Lstat(rel); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	} else if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symbolic link; only plain files are read", name)
	} else if !fi.Mode().IsRegular() {
		// open(2) of a FIFO waits for a writer forever, and opening a
		// device may act on it: refuse before opening.
		return nil, notPlain(name, fi.Mode())
	}
	if testHookBeforeOpen != nil {
		testHookBeforeOpen(name)
	}
	// O_NONBLOCK: the file may have been swapped for a FIFO since the
	// Lstat; then open returns at once and the Stat below refuses it. It
	// changes nothing for a regular file.
	f, err := root.OpenFile(rel, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, notPlain(name, fi.Mode())
	}
	if fi.Size() > limit {
		f.Close()
		return nil, fmt.Errorf("%s is %d bytes, more than the %d this reads", name, fi.Size(), limit)
	}
	return &cappedFile{f: f, name: name, left: limit, size: fi.Size()}, nil
}

// testHookBeforeOpen, when set, runs between openInRoot's Lstat and its
// open, so a test can swap the file.
var testHookBeforeOpen func(name string)

// notPlain says what a file that is not a regular file is, so the user
// knows why it is refused.
func notPlain(name string, m fs.FileMode) error {
	kind := "not a plain file"
	switch {
	case m.IsDir():
		kind = "a folder, not a plain file"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO), not a plain file"
	case m&fs.ModeSocket != 0:
		kind = "a socket, not a plain file"
	case m&fs.ModeDevice != 0:
		kind = "a device, not a plain file"
	}
	return fmt.Errorf("%s is %s; only plain files are read", name, kind)
}

type cappedFile struct {
	f    *os.File
	name string
	left int64
	size int64 // when opened
	over bool
}

func (c *cappedFile) Read(p []byte) (int, error) {
	if c.over {
		return 0, fmt.Errorf("%s grew past the size limit while being read", c.name)
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.f.Read(p)
	if int64(n) > c.left {
		c.over = true
		n, c.left = int(c.left), 0
		return n, fmt.Errorf("%s grew past the size limit while being read", c.name)
	}
	c.left -= int64(n)
	return n, err
}

func (c *cappedFile) Close() error { return c.f.Close() }

// readFile reads rel (slash-separated) under the state dir, at most limit
// bytes.
func (d *Dir) readFile(rel string, limit int64) ([]byte, error) {
	rc, err := openInRoot(d.root, d.path, rel, limit)
	if err != nil {
		return nil, rootErr(err, d.path)
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// rootErr makes os.Root's refusal to follow a link out of the state dir
// say what happened.
func rootErr(err error, dir string) error {
	if err != nil && strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("%w (a symbolic link points outside %s; it is not followed)", err, dir)
	}
	return err
}

func (d *Dir) exists(rel string) bool {
	_, err := d.root.Lstat(rel)
	return err == nil
}

func (d *Dir) isDir(rel string) bool {
	fi, err := d.root.Lstat(rel)
	return err == nil && fi.IsDir()
}
