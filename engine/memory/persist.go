package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// meta is the index's table of contents, written last (atomically) by
// every sync: what it lists is in the keyword index and the vectors file.
type meta struct {
	Version           int                  `json:"version"`
	TextFingerprint   string               `json:"textFingerprint"`
	VectorFingerprint string               `json:"vectorFingerprint,omitempty"`
	Provider          string               `json:"provider,omitempty"`
	Model             string               `json:"model,omitempty"`
	Fallback          bool                 `json:"fallback,omitempty"`
	Dim               int                  `json:"dim,omitempty"`
	Generation        int64                `json:"generation"`
	VectorsFile       string               `json:"vectorsFile,omitempty"`
	GraphFile         string               `json:"graphFile,omitempty"`
	LastSync          time.Time            `json:"lastSync"`
	Files             map[string]*fileMeta `json:"files"`
}

type fileMeta struct {
	Size   int64       `json:"size"`
	MTime  int64       `json:"mtime"`
	Hash   string      `json:"hash"`
	Chunks []*chunkRef `json:"chunks"`
}

// chunkRef is a chunk as the index remembers it: no text (the snippet is
// read from the file).
type chunkRef struct {
	ID        string `json:"id"`
	Path      string `json:"-"`
	StartLine int    `json:"start"`
	EndLine   int    `json:"end"`
	Hash      string `json:"hash"`
	Slot      int64  `json:"slot"` // -1: no vector (yet)
}

const metaVersion = 1

func (ix *Index) textFingerprint() string {
	return fmt.Sprintf("v%d|chunk %d/%d|extra %s", metaVersion, ix.cfg.ChunkTokens, ix.cfg.OverlapTokens, strings.Join(ix.cfg.ExtraPaths, ","))
}

// load reads meta, the keyword index and the vectors (at Open); whatever
// is missing, corrupt or out of step is dropped so the next sync rebuilds
// it.
func (ix *Index) load() {
	m, fresh := ix.readMetaFile()
	if ix.cfg.OpenText != nil {
		t, rebuilt, err := ix.cfg.OpenText(filepath.Join(ix.cfg.Dir, "bleve"))
		if err != nil {
			ix.textBroken = err.Error()
			ix.log.Error("memory index: no keyword index; vector search only", "err", err)
		} else {
			ix.text = t
			if rebuilt && m != nil {
				ix.log.Warn("memory index: keyword index was unreadable; rebuilding from the files")
				fresh = true
			}
		}
	}
	ix.loadState(m, fresh, func() (uint64, error) { return ix.text.Count() })
}

// readMetaFile reads the table of contents; fresh: there is none this
// configuration can use.
func (ix *Index) readMetaFile() (m *meta, fresh bool) {
	m, err := readMeta(filepath.Join(ix.cfg.Dir, "meta.json"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		ix.log.Warn("memory index: table of contents unreadable; rebuilding from the files", "err", err)
	}
	return m, m == nil || m.Version != metaVersion || m.TextFingerprint != ix.textFingerprint()
}

// wake reads back what release dropped, the way Open does (mu held), but
// keeps the keyword index that is open: it was in step with the table of
// contents when the state was dropped, and a child that found it
// unreadable since says so to the next sync (TakeRebuilt). Whatever did
// not come back as it was (a vectors file corrupted meanwhile) is logged
// and the index marked dirty, so the next search or sync rebuilds it.
func (ix *Index) wake() {
	was := ix.kept
	ix.released, ix.kept = false, summary{}
	ix.meta = meta{}
	ix.byID, ix.bySlot = map[string]*chunkRef{}, map[uint32]*chunkRef{}
	ix.vec, ix.graph = nil, nil
	m, fresh := ix.readMetaFile()
	if fresh && m == nil && ix.text != nil && was.chunks > 0 {
		// The table of contents is gone: the keyword index holds docs
		// nothing lists, which would take top-k places for good.
		ix.log.Warn("memory index: no table of contents; rebuilding it and the keyword index from the files")
		ix.restartText()
	}
	ix.loadState(m, fresh, func() (uint64, error) { return uint64(was.chunks), nil })
	if ix.meta.Generation == was.generation && ix.meta.LastSync.Before(was.lastSync) {
		ix.meta.LastSync = was.lastSync // a sync that changed nothing does not write it
	}
	if now := ix.summarize(); !now.sameState(was) || ix.forceNext {
		ix.log.Warn("memory index: not all of it came back from disk; the next sync rebuilds it",
			"chunks", now.chunks, "was", was.chunks, "vectors", now.vectors, "vectorsWere", was.vectors, "mode", now.mode, "modeWas", was.mode)
		ix.dirty.Store(true)
	}
}

// restartText empties the keyword index by removing its directory (ix.text
// is open; mu held or the index not shared yet).
func (ix *Index) restartText() {
	_ = ix.text.Close()
	ix.text = nil
	_ = os.RemoveAll(filepath.Join(ix.cfg.Dir, "bleve"))
	if t, _, err := ix.cfg.OpenText(filepath.Join(ix.cfg.Dir, "bleve")); err == nil {
		ix.text = t
	}
}

// loadState fills meta, byID, bySlot, vec and graph from m; textDocs says
// how many docs the keyword index holds (ix.text set).
func (ix *Index) loadState(m *meta, fresh bool, textDocs func() (uint64, error)) {
	ix.graphStale = false
	if fresh {
		if m != nil && ix.text != nil {
			// Drop what the old table of contents says is indexed.
			var ids []string
			for _, f := range m.Files {
				for _, c := range f.Chunks {
					ids = append(ids, c.ID)
				}
			}
			_ = ix.text.Delete(ids)
		}
		ix.meta = meta{Version: metaVersion, TextFingerprint: ix.textFingerprint(), Files: map[string]*fileMeta{}}
		return
	}
	if err := m.validate(); err != nil {
		ix.log.Warn("memory index: table of contents inconsistent; rebuilding from the files", "err", err)
		if ix.text != nil {
			ix.restartText()
		}
		ix.meta = meta{Version: metaVersion, TextFingerprint: ix.textFingerprint(), Files: map[string]*fileMeta{}}
		return
	}
	ix.meta = *m
	if ix.meta.Files == nil {
		ix.meta.Files = map[string]*fileMeta{}
	}
	var vec *vectors
	if m.VectorsFile != "" {
		var err error
		vec, err = readVectors(filepath.Join(ix.cfg.Dir, m.VectorsFile))
		if err != nil || vec.dim != m.Dim {
			ix.log.Warn("memory index: vectors unreadable; re-embedding (from the cache where possible)", "err", err)
			vec = nil
		}
	}
	for p, f := range ix.meta.Files {
		for _, c := range f.Chunks {
			c.Path = p
			if vec == nil || c.Slot < 0 || int(c.Slot) >= len(vec.live) || !vec.live[c.Slot] {
				c.Slot = -1
			}
			ix.byID[c.ID] = c
			if c.Slot >= 0 {
				ix.bySlot[uint32(c.Slot)] = c
			}
		}
	}
	if vec == nil {
		ix.meta.VectorFingerprint, ix.meta.Dim = "", 0
		for _, c := range ix.byID {
			c.Slot = -1
		}
		ix.bySlot = map[uint32]*chunkRef{}
	}
	ix.vec = vec
	// Keyword docs the table of contents does not list (a crash between
	// the two writes) would take top-k places for good: start over.
	if ix.text != nil {
		if n, err := textDocs(); err != nil || n != uint64(len(ix.byID)) {
			ix.log.Warn("memory index: keyword index out of step; rebuilding it", "docs", n, "chunks", len(ix.byID))
			ix.restartText()
			ix.forceNext = true // every chunk back into the keyword index
		}
	}
	if vec != nil && m.GraphFile != "" && ix.cfg.Graph != nil {
		if f, err := os.Open(filepath.Join(ix.cfg.Dir, m.GraphFile)); err == nil {
			g, err := ix.cfg.Graph.Read(f)
			f.Close()
			if err != nil || g.Len() != vec.n {
				ix.log.Warn("memory index: graph unreadable; it is rebuilt", "err", err, "nodes", lenOf(g), "vectors", vec.n)
			} else {
				ix.graph = g
			}
		}
		// The graph the next sync builds again is written even if nothing
		// else changed: else every start (and every wake) builds it again.
		ix.graphStale = ix.graph == nil
	}
}

var generatedFile = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(vectors|hnsw)-[0-9]+\.bin$`) })

// validate refuses a table of contents that a crash, a disk error or a
// hand edit left inconsistent: the index is rebuilt from the files.
func (m *meta) validate() error {
	slots := map[int64]bool{}
	for p, f := range m.Files {
		if f == nil || p == "" {
			return fmt.Errorf("file %q has no entry", p)
		}
		for _, c := range f.Chunks {
			if c == nil || c.ID == "" || c.StartLine < 1 || c.EndLine < c.StartLine {
				return fmt.Errorf("%s: a bad chunk", p)
			}
			if c.Slot >= 0 {
				if slots[c.Slot] {
					return fmt.Errorf("%s: vector slot %d used twice", p, c.Slot)
				}
				slots[c.Slot] = true
			}
		}
	}
	for _, name := range []string{m.VectorsFile, m.GraphFile} {
		if name != "" && !generatedFile().MatchString(name) {
			return fmt.Errorf("bad file name %q", name)
		}
	}
	return nil
}

func readMeta(path string) (*meta, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

func (ix *Index) dirGone() bool {
	_, err := os.Stat(filepath.Join(ix.cfg.Dir, "meta.json"))
	return errors.Is(err, os.ErrNotExist)
}

// reopen recreates the index directory and the keyword index in it.
func (ix *Index) reopen() error {
	if err := os.MkdirAll(ix.cfg.Dir, 0o700); err != nil {
		return fmt.Errorf("memory index: %w", err)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.text != nil {
		_ = ix.text.Close()
		ix.text = nil
	}
	if ix.cfg.OpenText != nil {
		t, _, err := ix.cfg.OpenText(filepath.Join(ix.cfg.Dir, "bleve"))
		if err != nil {
			ix.textBroken = err.Error()
		} else {
			ix.text, ix.textBroken = t, ""
		}
	}
	return nil
}

// save writes the vectors and graph under new names, then the table of
// contents that points at them, then removes the old files.
func (ix *Index) save() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	next := ix.meta // a copy: the live one changes only once all is written
	next.Generation++
	gen := strconv.FormatInt(next.Generation, 10)
	next.VectorsFile, next.GraphFile = "", ""
	if ix.vec != nil && ix.vec.n > 0 {
		name := "vectors-" + gen + ".bin"
		if err := ix.vec.writeFile(filepath.Join(ix.cfg.Dir, name)); err != nil {
			return fmt.Errorf("memory index: write vectors: %w", err)
		}
		next.VectorsFile = name
		if ix.graph != nil {
			name := "hnsw-" + gen + ".bin"
			if err := writeGraph(filepath.Join(ix.cfg.Dir, name), ix.graph); err != nil {
				_ = os.Remove(filepath.Join(ix.cfg.Dir, next.VectorsFile))
				return fmt.Errorf("memory index: write graph: %w", err)
			}
			next.GraphFile = name
		}
	} else {
		next.VectorFingerprint, next.Dim = "", 0
	}
	next.LastSync = ix.cfg.Now().UTC()
	b, err := json.Marshal(&next)
	if err == nil {
		err = writeAtomic(filepath.Join(ix.cfg.Dir, "meta.json"), func(w io.Writer) error {
			_, err := w.Write(b)
			return err
		})
	}
	if err != nil {
		for _, f := range []string{next.VectorsFile, next.GraphFile} {
			if f != "" {
				_ = os.Remove(filepath.Join(ix.cfg.Dir, f))
			}
		}
		return fmt.Errorf("memory index: write table of contents: %w", err)
	}
	for _, old := range []string{ix.meta.VectorsFile, ix.meta.GraphFile} {
		if old != "" && old != next.VectorsFile && old != next.GraphFile {
			_ = os.Remove(filepath.Join(ix.cfg.Dir, old))
		}
	}
	ix.meta = next
	ix.graphStale = false
	if ix.vec != nil && ix.vec.n == 0 {
		ix.vec = nil
	}
	return nil
}

func writeGraph(path string, g Graph) error {
	return writeAtomic(path, func(w io.Writer) error {
		_, err := g.WriteTo(w)
		return err
	})
}

// writeAtomic writes a file through a synced temporary file and a rename:
// a crash leaves the old file or the new one, never half of one.
func writeAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func lenOf(g Graph) int {
	if g == nil {
		return -1
	}
	return g.Len()
}
