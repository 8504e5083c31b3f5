package memory

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
)

// Provider is one embedding provider, as configured (memorySearch.provider
// and memorySearch.fallback).
type Provider struct {
	Name     string // local | ollama | openai | gemini
	Model    string
	Endpoint string // part of the fingerprint: the same model name elsewhere may differ
	Embedder Embedder
	// Task prefixes for models trained with them (nomic: "search_query: ",
	// e5: "query: "); raw embeddings without them measurably hurt recall.
	QueryPrefix, DocumentPrefix string
}

func (p Provider) fingerprint() string {
	return p.Name + "|" + p.Model + "|" + p.Endpoint + "|" + p.QueryPrefix + "|" + p.DocumentPrefix
}

// Cache stores embeddings by (provider, model, chunk hash); the bbolt
// implementation is engine/memory/bbolt.
type Cache interface {
	Get(provider, model string, hashes []string) (map[string][]float32, error)
	Put(provider, model string, vecs map[string][]float32) error
}

// Graph is the approximate nearest-neighbour graph used above the exact
// scan's threshold (engine/memory/hnsw).
type Graph interface {
	Add(id uint32, sim func(a, b uint32) float32) error
	Delete(id uint32, sim func(a, b uint32) float32)
	Search(q func(id uint32) float32, k, ef int) []Neighbor
	Len() int
	WriteTo(w io.Writer) (int64, error)
}

// Neighbor is a graph search result.
type Neighbor struct {
	ID    uint32
	Score float32
}

// GraphCodec makes and reads graphs; nil in Config means exact scan only.
type GraphCodec struct {
	New  func() Graph
	Read func(r io.Reader) (Graph, error)
	// Ef is the search breadth used for queries.
	Ef int
}

// Config is one agent's index.
type Config struct {
	AgentID    string
	Workspace  string   // absolute
	ExtraPaths []string // files or folders of .md, absolute or relative to the workspace
	Dir        string   // where the index lives; deleting it loses nothing

	// OpenText opens the keyword index in a directory (engine/memory/bleve);
	// rebuilt reports that it had to start empty. Nil: vector search only.
	OpenText func(dir string) (idx TextIndex, rebuilt bool, err error)
	// Providers are tried in order (primary, then fallback). None, or none
	// working: keyword search only — never an error.
	Providers []Provider
	// NoLocalRunner: the gateway has no openclaw-runner, so the status
	// never suggests pulling a local embedding model (it could not run).
	NoLocalRunner bool
	Cache         Cache
	Graph         *GraphCodec

	ChunkTokens, OverlapTokens int
	// HNSWThreshold is the number of chunks above which the graph is used
	// (if Graph is set); 0 means DefaultHNSWThreshold.
	HNSWThreshold int
	Query         QueryConfig
	// NoSyncOnSearch: searches never sync (memorySearch.sync.onSearch
	// false); the watcher, the interval and session starts do.
	NoSyncOnSearch bool
	// EmbedBatch is how many chunks go to the embedder in one call.
	EmbedBatch int
	Logger     *slog.Logger
	Now        func() time.Time
}

// DefaultHNSWThreshold: below it the exact scan is fast enough for the
// 5 ms search bar and has perfect recall (measured in BenchmarkVectorScan).
const DefaultHNSWThreshold = 50000

// Index is one agent's memory index. Searches run concurrently; syncs are
// serialized and swap their result in under a short write lock.
type Index struct {
	cfg Config
	log *slog.Logger

	syncMu sync.Mutex // one sync at a time
	mu     sync.RWMutex
	meta   meta
	text   TextIndex
	vec    *vectors
	graph  Graph
	byID   map[string]*chunkRef // chunk id → ref
	bySlot map[uint32]*chunkRef

	dirty      atomic.Bool
	watching   atomic.Bool
	lastErr    atomic.Pointer[string]
	textBroken string // why there is no keyword index, if there is none
	forceNext  bool   // the next sync rebuilds (set at load; read by sync)
	syncing    atomic.Bool
}

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

// bulkDocs: a sync that adds or removes this many chunks merges the keyword
// index into one segment afterwards (see engine/memory/bleve.Optimize).
const bulkDocs = 1000

func (c *Config) defaults() {
	if c.ChunkTokens <= 0 {
		c.ChunkTokens = DefaultChunkTokens
	}
	switch {
	case c.OverlapTokens == 0:
		c.OverlapTokens = min(DefaultOverlapTokens, c.ChunkTokens/5)
	case c.OverlapTokens < 0 || c.OverlapTokens >= c.ChunkTokens:
		c.OverlapTokens = 0 // negative: no overlap
	}
	if c.HNSWThreshold <= 0 {
		c.HNSWThreshold = DefaultHNSWThreshold
	}
	if c.EmbedBatch <= 0 {
		c.EmbedBatch = 32
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Query.defaults()
}

// Open loads the index from cfg.Dir (whatever of it is usable) and marks
// it dirty, so the first search or sync brings it up to date with the
// files. It fails only when the directory cannot be created.
func Open(cfg Config) (*Index, error) {
	cfg.defaults()
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("memory index of agent %s: %w", cfg.AgentID, err)
	}
	ix := &Index{cfg: cfg, log: cfg.Logger.With("agent", cfg.AgentID), byID: map[string]*chunkRef{}, bySlot: map[uint32]*chunkRef{}}
	ix.load()
	ix.dirty.Store(true)
	return ix, nil
}

func (ix *Index) textFingerprint() string {
	return fmt.Sprintf("v%d|chunk %d/%d|extra %s", metaVersion, ix.cfg.ChunkTokens, ix.cfg.OverlapTokens, strings.Join(ix.cfg.ExtraPaths, ","))
}

// load reads meta, the keyword index and the vectors; whatever is missing,
// corrupt or out of step is dropped so the next sync rebuilds it.
func (ix *Index) load() {
	m, err := readMeta(filepath.Join(ix.cfg.Dir, "meta.json"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		ix.log.Warn("memory index: table of contents unreadable; rebuilding from the files", "err", err)
	}
	fresh := m == nil || m.Version != metaVersion || m.TextFingerprint != ix.textFingerprint()
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
			_ = ix.text.Close()
			ix.text = nil
			_ = os.RemoveAll(filepath.Join(ix.cfg.Dir, "bleve"))
			if t, _, err := ix.cfg.OpenText(filepath.Join(ix.cfg.Dir, "bleve")); err == nil {
				ix.text = t
			}
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
		if n, err := ix.text.Count(); err != nil || n != uint64(len(ix.byID)) {
			ix.log.Warn("memory index: keyword index out of step; rebuilding it", "docs", n, "chunks", len(ix.byID))
			_ = ix.text.Close()
			ix.text = nil
			_ = os.RemoveAll(filepath.Join(ix.cfg.Dir, "bleve"))
			if t, _, err := ix.cfg.OpenText(filepath.Join(ix.cfg.Dir, "bleve")); err == nil {
				ix.text = t
			}
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
	}
}

var generatedFile = regexp.MustCompile(`^(vectors|hnsw)-[0-9]+\.bin$`)

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
		if name != "" && !generatedFile.MatchString(name) {
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

// MarkDirty tells the index that files changed (the watcher calls it).
func (ix *Index) MarkDirty() { ix.dirty.Store(true) }

// Dirty reports whether a sync is due.
func (ix *Index) Dirty() bool { return ix.dirty.Load() }

// Close closes the keyword index.
func (ix *Index) Close() error {
	ix.syncMu.Lock()
	defer ix.syncMu.Unlock()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.text != nil {
		err := ix.text.Close()
		ix.text = nil
		return err
	}
	return nil
}

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
	// rewrite of the vectors and the table of contents.
	ix.mu.RLock()
	same := !res.Rebuilt && len(changed) == 0 && len(gone) == 0 && res.Embedded+res.Cached == 0 &&
		ix.meta.Generation > 0 && ix.meta.VectorFingerprint == before
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

// readMemory reads a memory file by its shown path without following a
// symbolic link: the listing ignored links, and a file swapped for one
// since (a sync in progress, a search between syncs) must not be read
// through it. Workspace files are opened through os.Root with every
// component checked; an extra path's file with O_NOFOLLOW.
func (ix *Index) readMemory(shown string) ([]byte, error) {
	f, err := ix.openMemory(shown)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAllBounded(f)
}

// openMemory opens a memory file for readMemory and readLines.
func (ix *Index) openMemory(shown string) (*os.File, error) {
	var root *os.Root
	if !filepath.IsAbs(shown) {
		var err error
		if root, err = os.OpenRoot(ix.cfg.Workspace); err != nil {
			return nil, err
		}
		defer root.Close()
		parts := strings.Split(shown, "/")
		for i := range parts[:len(parts)-1] {
			fi, err := root.Lstat(strings.Join(parts[:i+1], "/"))
			if err != nil {
				return nil, err
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				return nil, fmt.Errorf("%s is a symbolic link", strings.Join(parts[:i+1], "/"))
			}
		}
	}
	return openNoFollow(shown, root)
}

// readLines returns lines start..end of a memory file, reading no further
// than end and keeping at most maxBytes.
func (ix *Index) readLines(shown string, start, end, maxBytes int) (string, error) {
	f, err := ix.openMemory(shown)
	if err != nil {
		return "", err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 16<<10)
	var out []byte
	for n := 1; n <= end; n++ {
		line, err := br.ReadSlice('\n')
		for err == bufio.ErrBufferFull { // a long line: keep reading it
			if n >= start && len(out) < maxBytes {
				out = append(out, line...)
			}
			line, err = br.ReadSlice('\n')
		}
		if n >= start && len(out) < maxBytes {
			out = append(out, line...)
		}
		if err != nil {
			break
		}
	}
	if len(out) > maxBytes {
		out = out[:maxBytes]
		for len(out) > 0 && !utf8.Valid(out) {
			out = out[:len(out)-1]
		}
	}
	return strings.ReplaceAll(strings.TrimRight(string(out), "\r\n"), "\r\n", "\n"), nil
}

func openNoFollow(path string, root *os.Root) (*os.File, error) {
	var f *os.File
	var err error
	if root != nil {
		f, err = root.OpenFile(filepath.FromSlash(path), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	} else {
		f, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	}
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil {
		f.Close()
		return nil, err
	} else if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return f, nil
}

func readAllBounded(f *os.File) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("larger than %d MiB", maxFileBytes>>20)
	}
	return b, nil
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
