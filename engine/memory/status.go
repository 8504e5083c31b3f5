package memory

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Status describes an index for `openclaw memory status`.
type Status struct {
	AgentID     string    `json:"agentId"`
	Workspace   string    `json:"workspace"`
	Dir         string    `json:"dir"`
	Files       int       `json:"files"`
	Chunks      int       `json:"chunks"`
	Vectors     int       `json:"vectors"`
	Dimensions  int       `json:"dimensions,omitempty"`
	Fingerprint string    `json:"fingerprint"`
	LastSync    time.Time `json:"lastSync,omitzero"`
	Dirty       bool      `json:"dirty"`
	Watching    bool      `json:"watching"`
	Provider    string    `json:"provider,omitempty"` // of the stored vectors
	Model       string    `json:"model,omitempty"`
	Fallback    bool      `json:"fallback"`
	// Configured is the configured provider chain, "none" without one.
	Configured []string `json:"configured"`
	VectorMode string   `json:"vectorMode"` // exact | hnsw | none
	TextIndex  bool     `json:"textIndex"`
	DiskBytes  int64    `json:"diskBytes"`
	LastError  string   `json:"lastError,omitempty"`
	Warning    string   `json:"warning,omitempty"`
}

// summary is what Status needs of the table of contents, the vectors and
// the graph: a few numbers and names, kept while those are released so
// that a status (`openclaw status`, /status) does not load them again.
type summary struct {
	files, chunks, vectors, dim int
	mode                        string // exact | hnsw | none
	generation                  int64
	lastSync                    time.Time
	provider, model             string
	fallback                    bool
	textFP, vectorFP            string
}

// summarize describes the loaded state (mu held); released: what was kept.
func (ix *Index) summarize() summary {
	if ix.released {
		return ix.kept
	}
	s := summary{
		files: len(ix.meta.Files), chunks: len(ix.byID), dim: ix.meta.Dim, mode: "none",
		generation: ix.meta.Generation, lastSync: ix.meta.LastSync,
		provider: ix.meta.Provider, model: ix.meta.Model, fallback: ix.meta.Fallback,
		textFP: ix.meta.TextFingerprint, vectorFP: ix.meta.VectorFingerprint,
	}
	if ix.vec != nil {
		s.vectors, s.mode = ix.vec.n, "exact"
		if ix.graph != nil {
			s.mode = "hnsw"
		}
	}
	return s
}

// sameState compares all but the time of the last sync.
func (s summary) sameState(o summary) bool {
	s.lastSync, o.lastSync = time.Time{}, time.Time{}
	return s == o
}

// Status reports the index as it is now (no sync). It reads no more than
// what a released index keeps, so it neither loads one nor keeps one
// from being released.
func (ix *Index) Status() Status {
	ix.mu.RLock()
	sum := ix.summarize()
	st := Status{
		AgentID: ix.cfg.AgentID, Workspace: ix.cfg.Workspace, Dir: ix.cfg.Dir,
		Files: sum.files, Chunks: sum.chunks, Vectors: sum.vectors, LastSync: sum.lastSync,
		Provider: sum.provider, Model: sum.model, Fallback: sum.fallback,
		Dimensions: sum.dim, TextIndex: ix.text != nil, VectorMode: sum.mode,
		Fingerprint: sum.textFP,
	}
	if sum.vectorFP != "" {
		st.Fingerprint += " | " + sum.vectorFP
	}
	if ix.text == nil && ix.textBroken != "" {
		st.Warning = "no keyword index: " + ix.textBroken
	}
	ix.mu.RUnlock()
	for _, p := range ix.cfg.Providers {
		st.Configured = append(st.Configured, p.Name+"/"+p.Model)
	}
	if len(st.Configured) == 0 {
		st.Configured = []string{"none"}
		if st.Warning == "" {
			st.Warning = "no embedding model: keyword (BM25) search only; for semantic search set agents.defaults.memorySearch.provider (ollama, openai) or, with the local runner installed, `openclaw models pull bge-small-en-v1.5`"
			if ix.cfg.NoLocalRunner {
				st.Warning = "no embedding model: keyword (BM25) search only; for semantic search set agents.defaults.memorySearch.provider to ollama or openai (local embeddings need openclaw-runner, which this gateway does not have)"
			}
		}
	}
	st.Dirty = ix.dirty.Load()
	st.Watching = ix.watching.Load()
	if e := ix.lastErr.Load(); e != nil {
		st.LastError = *e
	}
	_ = filepath.WalkDir(ix.cfg.Dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				st.DiskBytes += fi.Size()
			}
		}
		return nil
	})
	return st
}

// DefaultDebounce is how long the watcher waits after the last change
// before it syncs in the background (OpenClaw's 1.5 s).
const DefaultDebounce = 1500 * time.Millisecond

// Watch marks the index dirty when a memory file changes and syncs it in
// the background once changes have settled for debounce; it also syncs
// every interval (0: never). It runs until ctx ends. fsnotify is not
// recursive: directories made later under memory/ are added as they
// appear, and the workspace itself is watched for MEMORY.md and a memory/
// that is created or replaced. Without a watcher (too many watches, an
// unsupported file system) every search syncs, which stays correct.
func (ix *Index) Watch(ctx context.Context, debounce, interval time.Duration) {
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		ix.log.Warn("memory index: no file watcher; every search checks the files", "err", err)
		ix.runInterval(ctx, interval)
		return
	}
	defer w.Close()
	roots := []string{ix.cfg.Workspace, filepath.Join(ix.cfg.Workspace, "memory")}
	for _, e := range ix.cfg.ExtraPaths {
		if !filepath.IsAbs(e) {
			e = filepath.Join(ix.cfg.Workspace, e)
		}
		if fi, err := os.Lstat(e); err == nil && fi.Mode().IsRegular() {
			e = filepath.Dir(e)
		}
		roots = append(roots, e)
	}
	var mu sync.Mutex
	watched := map[string]bool{}
	warned := false // one warning for folders that cannot be watched, not one each
	addTree := func(root string) {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if p != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			mu.Lock()
			defer mu.Unlock()
			if !watched[p] {
				if err := w.Add(p); err == nil {
					watched[p] = true
				} else {
					if !warned {
						warned = true
						ix.log.Warn("memory index: cannot watch a folder (more may follow, not logged); searches check the files", "dir", p, "err", err)
					}
					ix.watching.Store(false)
				}
			}
			return nil
		})
	}
	ix.watching.Store(true)
	if err := w.Add(ix.cfg.Workspace); err != nil {
		ix.log.Warn("memory index: cannot watch the workspace; every search checks the files", "err", err)
		ix.watching.Store(false)
	} else {
		watched[ix.cfg.Workspace] = true
	}
	for _, r := range roots[1:] {
		addTree(r)
	}
	defer ix.watching.Store(false)

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
				// A folder removed or moved away: forget it (and what was
				// under it), so a new one of the same name is watched again.
				mu.Lock()
				for p := range watched {
					if p == ev.Name || strings.HasPrefix(p, ev.Name+string(filepath.Separator)) {
						delete(watched, p)
						_ = w.Remove(p)
					}
				}
				mu.Unlock()
			}
			if ev.Has(fsnotify.Create) && underRoot(ev.Name, roots[1:]) {
				// Only folders of notes: a git clone or node_modules
				// elsewhere in the workspace must not use up inotify watches.
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() && fi.Mode()&fs.ModeSymlink == 0 {
					addTree(ev.Name)
				}
			}
			if !ix.relevant(ev.Name) {
				continue
			}
			ix.dirty.Store(true)
			timer.Reset(debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			// An overflow loses events: assume everything changed.
			ix.dirty.Store(true)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				timer.Reset(debounce)
			}
		case <-timer.C:
			ix.backgroundSync(ctx)
		case <-tick:
			ix.dirty.Store(true) // a change the watcher could not see (network file systems)
			ix.backgroundSync(ctx)
		}
	}
}

// underRoot reports whether p is one of roots or inside one.
func underRoot(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// RunInterval syncs every interval until ctx ends (memorySearch.sync.watch
// off: searches and this interval keep the index current).
func (ix *Index) RunInterval(ctx context.Context, interval time.Duration) {
	ix.runInterval(ctx, interval)
}

func (ix *Index) runInterval(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ix.dirty.Store(true)
			ix.backgroundSync(ctx)
		}
	}
}

// SyncInBackground starts a sync when one is due (at gateway start and
// when a session starts).
func (ix *Index) SyncInBackground(ctx context.Context) {
	if !ix.watching.Load() {
		ix.dirty.Store(true) // nobody watches: check the files
	}
	if ix.dirty.Load() && !ix.syncing.Load() {
		go ix.backgroundSync(context.WithoutCancel(ctx))
	}
}

func (ix *Index) backgroundSync(ctx context.Context) {
	if !ix.dirty.Load() {
		return
	}
	if res, err := ix.Sync(ctx, false, nil); err != nil {
		if ctx.Err() == nil {
			ix.log.Warn("memory index: background sync failed", "err", err)
		}
	} else if res.Added+res.Removed > 0 {
		if res.Added+res.Removed >= 1000 {
			debug.FreeOSMemory() // a bulk index leaves much garbage behind
		}
		ix.log.Info("memory index synced", "files", res.Files, "chunks", res.Chunks, "added", res.Added, "removed", res.Removed, "embedded", res.Embedded, "took", res.Duration.Round(time.Millisecond))
	}
}

// relevant reports whether a changed path can affect the index: a .md
// file or a directory (a folder of notes moved in or out).
func (ix *Index) relevant(p string) bool {
	if strings.HasPrefix(filepath.Base(p), ".") {
		return false
	}
	if strings.EqualFold(filepath.Ext(p), ".md") {
		return true
	}
	if filepath.Dir(p) == ix.cfg.Workspace {
		switch filepath.Base(p) {
		case "MEMORY.md", "memory.md", "memory":
			return true
		}
		for _, e := range ix.cfg.ExtraPaths {
			if filepath.Join(ix.cfg.Workspace, e) == p || e == p {
				return true
			}
		}
		return false // AGENTS.md and the other files of the workspace root
	}
	return filepath.Ext(p) == "" // probably a directory (it may be gone already)
}
