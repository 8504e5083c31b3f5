package memory

import (
	"context"
	"fmt"
)

// embedMissing gives every chunk without a vector one: from the cache, else
// from the first provider that works. A provider other than the one the
// stored vectors came from means a different vector space: all vectors
// are redone with it (from its cache where possible).
func (ix *Index) embedMissing(ctx context.Context, res *SyncResult, progress func(Progress), added []Doc) {
	if len(ix.cfg.Providers) == 0 {
		return
	}
	text := make(map[string]string, len(added)) // hash → text, for chunks read this sync
	for _, d := range added {
		if r := ix.byID[d.ID]; r != nil {
			text[r.Hash] = d.Text
		}
	}
	var lastErr error
	for i, p := range ix.cfg.Providers {
		fp := p.fingerprint()
		ix.mu.RLock()
		switching := ix.meta.VectorFingerprint != "" && ix.meta.VectorFingerprint != fp
		ix.mu.RUnlock()
		if switching {
			// Probe before dropping the vectors that work: a primary that is
			// still down must not cost the fallback's whole index.
			if _, err := p.Embedder.Embed(ctx, []string{p.DocumentPrefix + "probe"}); err != nil {
				lastErr = err
				ix.log.Warn("memory index: embedding provider failed", "provider", p.Name, "model", p.Model, "err", err)
				continue
			}
		}
		ix.mu.Lock()
		if switching {
			// Switching vector space: drop the old vectors.
			for _, r := range ix.byID {
				r.Slot = -1
			}
			ix.bySlot = map[uint32]*chunkRef{}
			ix.vec, ix.graph = nil, nil
			ix.meta.VectorFingerprint = ""
		}
		var todo []*chunkRef
		for _, r := range ix.byID {
			if r.Slot < 0 {
				todo = append(todo, r)
			}
		}
		ix.mu.Unlock()
		if len(todo) == 0 {
			ix.setProvider(p, fp, i > 0)
			return
		}
		err := ix.embedWith(ctx, p, fp, i > 0, todo, text, res, progress)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			return
		}
		lastErr = err
		ix.log.Warn("memory index: embedding provider failed", "provider", p.Name, "model", p.Model, "err", err)
		if ix.meta.VectorFingerprint == fp {
			// Some vectors of this provider were stored; keep them rather
			// than switch vector space over a transient error.
			break
		}
	}
	if lastErr != nil {
		res.Warnings = append(res.Warnings, "embeddings unavailable, keyword search only for new notes: "+lastErr.Error())
	}
}

func (ix *Index) setProvider(p Provider, fp string, fallback bool) {
	ix.mu.Lock()
	ix.meta.VectorFingerprint, ix.meta.Provider, ix.meta.Model, ix.meta.Fallback = fp, p.Name, p.Model, fallback
	ix.mu.Unlock()
}

func (ix *Index) embedWith(ctx context.Context, p Provider, fp string, fallback bool, todo []*chunkRef, text map[string]string, res *SyncResult, progress func(Progress)) error {
	hashes := make([]string, 0, len(todo))
	for _, r := range todo {
		hashes = append(hashes, r.Hash)
	}
	cached := map[string][]float32{}
	if ix.cfg.Cache != nil {
		var err error
		if cached, err = ix.cfg.Cache.Get(p.Name, fp, hashes); err != nil {
			ix.log.Warn("memory index: embedding cache unreadable", "err", err)
			cached = map[string][]float32{}
		}
	}
	total := len(todo)
	done := 0
	report := func() {
		if progress != nil {
			progress(Progress{Chunks: total, ChunksDone: done})
		}
	}
	report()
	// Cached first: no provider call at all.
	var need []*chunkRef
	for _, r := range todo {
		if v, ok := cached[r.Hash]; ok && len(v) > 0 && (ix.vec == nil || len(v) == ix.vec.dim) {
			if err := ix.store(p, fp, fallback, r, v); err != nil {
				return err
			}
			res.Cached++
			done++
			continue
		}
		need = append(need, r)
	}
	report()
	files := map[string]map[string]string{}
	for i := 0; i < len(need); i += ix.cfg.EmbedBatch {
		var batch []*chunkRef
		var texts []string
		for _, r := range need[i:min(i+ix.cfg.EmbedBatch, len(need))] {
			t, ok := text[r.Hash]
			if !ok {
				var err error
				if t, err = ix.chunkText(r, files); err != nil {
					ix.dirty.Store(true) // re-chunked by the next sync
					continue
				}
			}
			batch = append(batch, r)
			texts = append(texts, p.DocumentPrefix+t)
		}
		if len(batch) == 0 {
			continue
		}
		vecs, err := p.Embedder.Embed(ctx, texts)
		if err != nil {
			return err
		}
		if len(vecs) != len(texts) {
			return fmt.Errorf("%s returned %d vectors for %d texts", p.Name, len(vecs), len(texts))
		}
		put := make(map[string][]float32, len(batch))
		for j, r := range batch {
			v := vecs[j]
			if !normalize(v) {
				continue // a zero vector: keyword search only for this chunk
			}
			if err := ix.store(p, fp, fallback, r, v); err != nil {
				return err
			}
			put[r.Hash] = v
			res.Embedded++
		}
		if ix.cfg.Cache != nil {
			if err := ix.cfg.Cache.Put(p.Name, fp, put); err != nil {
				ix.log.Warn("memory index: embedding cache not written", "err", err)
			}
		}
		done = min(total, done+ix.cfg.EmbedBatch)
		report()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	ix.setProvider(p, fp, fallback)
	return nil
}

// store puts one vector into the in-memory rows.
func (ix *Index) store(p Provider, fp string, fallback bool, r *chunkRef, v []float32) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.vec == nil {
		ix.vec = newVectors(len(v))
		ix.meta.Dim = len(v)
	}
	if len(v) != ix.vec.dim {
		return fmt.Errorf("%s/%s returned %d dimensions, the index has %d", p.Name, p.Model, len(v), ix.vec.dim)
	}
	if ix.byID[r.ID] != r || r.Slot >= 0 {
		return nil // removed or done meanwhile
	}
	id := ix.vec.add(v)
	r.Slot = int64(id)
	ix.bySlot[id] = r
	ix.meta.VectorFingerprint, ix.meta.Provider, ix.meta.Model, ix.meta.Fallback = fp, p.Name, p.Model, fallback
	if ix.graph != nil {
		if err := ix.graph.Add(id, ix.vec.sim); err != nil {
			ix.graph = nil // rebuilt by maybeGraph
		}
	}
	return nil
}

// maybeGraph builds the graph when the index grew past the threshold and
// drops it when it shrank well below (mu held).
func (ix *Index) maybeGraph() {
	if ix.cfg.Graph == nil || ix.vec == nil {
		ix.graph = nil
		return
	}
	n := ix.vec.n
	switch {
	case n > ix.cfg.HNSWThreshold && ix.graph == nil:
		g := ix.cfg.Graph.New()
		for id, live := range ix.vec.live {
			if live {
				if err := g.Add(uint32(id), ix.vec.sim); err != nil {
					ix.log.Warn("memory index: graph build failed; exact search", "err", err)
					return
				}
			}
		}
		ix.graph = g
	case n < ix.cfg.HNSWThreshold*3/4:
		ix.graph = nil
	}
}

// chunkText finds a chunk's text by cutting its file again (a piece of
// a long line has no line range of its own) and matching the hash; files
// caches the cut per file for one sync. A file that changed since is an
// error: the chunk is left without a vector and the next sync re-chunks.
func (ix *Index) chunkText(r *chunkRef, files map[string]map[string]string) (string, error) {
	byHash, ok := files[r.Path]
	if !ok {
		b, err := ix.readMemory(r.Path)
		if err == nil {
			byHash = map[string]string{}
			for _, c := range ChunkText(r.Path, b, ix.cfg.ChunkTokens, ix.cfg.OverlapTokens) {
				byHash[c.Hash] = c.Text
			}
		}
		files[r.Path] = byHash
	}
	t, ok := byHash[r.Hash]
	if !ok {
		return "", fmt.Errorf("%s changed since it was indexed", r.Path)
	}
	return t, nil
}
