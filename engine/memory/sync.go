package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// bulkDocs: a sync that adds or removes this many chunks merges the keyword
// index into one segment afterwards (see engine/memory/bleve.Optimize).
const bulkDocs = 1000

// Progress is reported while a sync embeds and indexes chunks.
type Progress struct {
	Files, FilesDone   int
	Chunks, ChunksDone int
}

// SyncResult says what a sync did.
type SyncResult struct {
	Files, Chunks            int
	Added, Removed, Embedded int
	Cached                   int
	Provider, Model          string
	Fallback                 bool
	Warnings                 []string
	Duration                 time.Duration
	Rebuilt                  bool
}

// Sync brings the index up to date with the files. force drops everything
// and rebuilds (embeddings still come from the cache). It never fails
// because a provider is down: chunks it could not embed stay keyword-only
// and are retried on the next sync.
func (ix *Index) Sync(ctx context.Context, force bool, progress func(Progress)) (*SyncResult, error) {
	ix.syncMu.Lock()
	defer ix.syncMu.Unlock()
	ix.acquire() // before dirty is cleared: a wake may set it
	defer ix.done()
	ix.mu.Lock()
	ix.unsaved = true // memory may run ahead of the disk until this sync succeeds
	ix.mu.Unlock()
	ix.syncing.Store(true)
	defer ix.syncing.Store(false)
	start := ix.cfg.Now()
	ix.dirty.Store(false) // changes from now on make it dirty again
	res, err := ix.sync(ctx, force, progress)
	if err != nil {
		ix.dirty.Store(true)
		s := err.Error()
		ix.lastErr.Store(&s)
		return nil, err
	}
	ix.mu.Lock()
	ix.unsaved = false
	ix.mu.Unlock()
	ix.lastErr.Store(nil)
	res.Duration = ix.cfg.Now().Sub(start)
	return res, nil
}

func (ix *Index) sync(ctx context.Context, force bool, progress func(Progress)) (*SyncResult, error) {
	res := &SyncResult{}
	if ix.text == nil && ix.cfg.OpenText != nil {
		// A keyword index that failed before: try again (a disk that was full).
		if t, _, err := ix.cfg.OpenText(filepath.Join(ix.cfg.Dir, "bleve")); err == nil {
			ix.mu.Lock()
			ix.text, ix.textBroken = t, ""
			ix.mu.Unlock()
			force = true
		}
	}
	// A keyword index that started over empty since (its process found it
	// unreadable: engine/memory/bleveproc) gets every chunk back.
	if r, ok := ix.text.(interface{ TakeRebuilt() bool }); ok && r.TakeRebuilt() {
		ix.log.Warn("memory index: the keyword index started over; every chunk goes back into it")
		force = true
	}
	if _, err := os.Stat(ix.cfg.Dir); errors.Is(err, os.ErrNotExist) || (ix.meta.Generation > 0 && ix.dirGone()) {
		// The index directory was deleted under us: start over.
		if err := ix.reopen(); err != nil {
			return nil, err
		}
		force = true
	}
	if force || ix.forceNext {
		ix.forceNext = false
		ix.reset()
		res.Rebuilt = true
	}
	ix.mu.RLock()
	before := ix.meta.VectorFingerprint
	ix.mu.RUnlock()
	files, warns := listFiles(ix.cfg.Workspace, ix.cfg.ExtraPaths)
	res.Warnings = warns
	res.Files = len(files)

	// Which files changed?
	type change struct {
		f      file
		chunks []Chunk
		hash   string
	}
	var changed []change
	touched := false // a file's size or time changed, not its text
	present := map[string]bool{}
	for _, f := range files {
		present[f.Path] = true
		old := ix.meta.Files[f.Path]
		if old != nil && old.Size == f.Size && old.MTime == f.MTime {
			continue
		}
		b, err := ix.readMemory(f.Path)
		if err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s: %v", f.Path, err))
			continue
		}
		sum := sha256.Sum256(b)
		h := hex.EncodeToString(sum[:])
		if old != nil && old.Hash == h {
			ix.mu.Lock()
			old.Size, old.MTime = f.Size, f.MTime
			ix.mu.Unlock()
			touched = true
			continue
		}
		changed = append(changed, change{f: f, hash: h, chunks: ChunkText(f.Path, b, ix.cfg.ChunkTokens, ix.cfg.OverlapTokens)})
	}
	var gone []string
	for p := range ix.meta.Files {
		if !present[p] {
			gone = append(gone, p)
		}
	}

	// Keyword side first (write before you act: the table of contents that
	// says what is indexed is written last).
	var addDocs []Doc
	var delIDs []string
	newFiles := map[string]*fileMeta{}
	for _, c := range changed {
		fm := &fileMeta{Size: c.f.Size, MTime: c.f.MTime, Hash: c.hash}
		keep := map[string]bool{}
		for _, ch := range c.chunks {
			id := ch.ID()
			keep[id] = true
			ref := ix.byID[id]
			if ref == nil {
				ref = &chunkRef{ID: id, Path: ch.Path, StartLine: ch.StartLine, EndLine: ch.EndLine, Hash: ch.Hash, Slot: -1}
				addDocs = append(addDocs, Doc{ID: id, Path: ch.Path, Text: ch.Text})
			}
			fm.Chunks = append(fm.Chunks, ref)
		}
		if old := ix.meta.Files[c.f.Path]; old != nil {
			for _, r := range old.Chunks {
				if !keep[r.ID] {
					delIDs = append(delIDs, r.ID)
				}
			}
		}
		newFiles[c.f.Path] = fm
	}
	for _, p := range gone {
		for _, r := range ix.meta.Files[p].Chunks {
			delIDs = append(delIDs, r.ID)
		}
	}
	if ix.text != nil {
		if len(delIDs) > 0 {
			if err := ix.text.Delete(delIDs); err != nil {
				return nil, fmt.Errorf("keyword index: %w", err)
			}
		}
		// Big batches: each one waits for scorch to persist it (fsync).
		for i := 0; i < len(addDocs); i += 2048 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := ix.text.Index(addDocs[i:min(i+2048, len(addDocs))]); err != nil {
				return nil, fmt.Errorf("keyword index: %w", err)
			}
		}
	}
	res.Added, res.Removed = len(addDocs), len(delIDs)
	if o, ok := ix.text.(interface{ Optimize(context.Context) error }); ok && len(addDocs)+len(delIDs) >= bulkDocs {
		if err := o.Optimize(ctx); err != nil && ctx.Err() == nil {
			ix.log.Warn("memory index: keyword index not merged", "err", err)
		}
	}

	// Apply the new table of contents in memory.
	ix.mu.Lock()
	for _, id := range delIDs {
		if r := ix.byID[id]; r != nil {
			if r.Slot >= 0 && ix.vec != nil {
				if ix.graph != nil {
					ix.graph.Delete(uint32(r.Slot), ix.vec.sim)
				}
				ix.vec.remove(uint32(r.Slot))
				delete(ix.bySlot, uint32(r.Slot))
			}
			delete(ix.byID, id)
		}
	}
	for _, p := range gone {
		delete(ix.meta.Files, p)
	}
	for p, fm := range newFiles {
		ix.meta.Files[p] = fm
		for _, r := range fm.Chunks {
			ix.byID[r.ID] = r
		}
	}
	ix.mu.Unlock()

	// Vector side: embed what has no vector yet.
	ix.embedMissing(ctx, res, progress, addDocs)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ix.mu.Lock()
	ix.maybeGraph()
	ix.mu.Unlock()

	for _, f := range ix.meta.Files {
		res.Chunks += len(f.Chunks)
	}
	res.Provider, res.Model, res.Fallback = ix.meta.Provider, ix.meta.Model, ix.meta.Fallback
	// Nothing changed (the common case: a search, a session start): no
	// rewrite of the vectors and the table of contents. A file's new time
	// and a graph built again are written, though: what is on disk is all
	// an idle index keeps (Config.IdleRelease), and a restart would
	// otherwise hash the file, or build the graph, again.
	ix.mu.RLock()
	same := !res.Rebuilt && len(changed) == 0 && len(gone) == 0 && res.Embedded+res.Cached == 0 &&
		ix.meta.Generation > 0 && ix.meta.VectorFingerprint == before &&
		!touched && !ix.graphStale && (ix.graph != nil) == (ix.meta.GraphFile != "")
	ix.mu.RUnlock()
	if same && !ix.dirGone() {
		ix.mu.Lock()
		ix.meta.LastSync = ix.cfg.Now().UTC()
		ix.mu.Unlock()
		return res, nil
	}
	if err := ix.save(); err != nil {
		return nil, err
	}
	return res, nil
}

// reset forgets everything indexed (the keyword index is emptied).
func (ix *Index) reset() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.text != nil {
		ids := make([]string, 0, len(ix.byID))
		for id := range ix.byID {
			ids = append(ids, id)
		}
		_ = ix.text.Delete(ids)
	}
	ix.meta = meta{Version: metaVersion, TextFingerprint: ix.textFingerprint(), Files: map[string]*fileMeta{}, Generation: ix.meta.Generation}
	ix.byID, ix.bySlot = map[string]*chunkRef{}, map[uint32]*chunkRef{}
	ix.vec, ix.graph = nil, nil
}
