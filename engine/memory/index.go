package memory

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
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
	// IdleRelease is how long the index stays unused (no search, no sync)
	// before it drops its table of contents, vectors and graph from memory;
	// the next use reads them back from disk. 0 means DefaultIdleRelease,
	// negative never. Why: the keyword index's child process leaves after
	// 30 s idle too; the vectors of a 10k-chunk index are ~4 MB of RSS.
	IdleRelease time.Duration
	Logger      *slog.Logger
	Now         func() time.Time
}

// DefaultIdleRelease is Config.IdleRelease's default (bleveproc.DefaultIdle).
const DefaultIdleRelease = 30 * time.Second

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
	graphStale bool   // the graph file named in meta could not be used (mu)
	syncing    atomic.Bool

	// Idle release (all under mu): users counts the searches and syncs
	// under way; released says meta, byID, bySlot, vec and graph were
	// dropped (kept is what Status needs of them meanwhile); unsaved says
	// a sync started and has not finished well, so memory may be ahead
	// of the files on disk.
	users    int
	released bool
	unsaved  bool
	closed   bool
	kept     summary
	idle     *time.Timer
	lastUse  time.Time
}

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
	if c.IdleRelease == 0 {
		c.IdleRelease = DefaultIdleRelease
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
	ix.mu.Lock()
	ix.armIdle() // an index nobody uses after Open is released too
	ix.mu.Unlock()
	return ix, nil
}

// MarkDirty tells the index that files changed (the watcher calls it).
func (ix *Index) MarkDirty() { ix.dirty.Store(true) }

// Dirty reports whether a sync is due.
func (ix *Index) Dirty() bool { return ix.dirty.Load() }

// Close closes the keyword index and stops the idle release.
func (ix *Index) Close() error {
	ix.syncMu.Lock()
	defer ix.syncMu.Unlock()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.closed = true
	if ix.idle != nil {
		ix.idle.Stop() // one already firing finds closed and does nothing
	}
	if ix.text != nil {
		err := ix.text.Close()
		ix.text = nil
		return err
	}
	return nil
}

// acquire marks the start of a use of the in-memory state (a search, a
// sync): a released index is loaded again first, and none is released
// until the matching done.
func (ix *Index) acquire() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.users++
	if ix.released {
		ix.wake()
	}
}

// done ends a use; the last one arms the idle release. A timer reset
// rather than a goroutine that polls: nothing runs while the index idles.
func (ix *Index) done() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.users--
	if ix.users == 0 {
		ix.armIdle()
	}
}

// armIdle (re)starts the idle release's timer (mu held).
func (ix *Index) armIdle() {
	if ix.closed || ix.cfg.IdleRelease < 0 {
		return
	}
	ix.lastUse = time.Now()
	if ix.idle == nil {
		ix.idle = time.AfterFunc(ix.cfg.IdleRelease, ix.idleRelease)
	} else {
		ix.idle.Reset(ix.cfg.IdleRelease)
	}
}

// idleRelease is the timer's function. A use that ended while the timer
// was firing has reset it: this early call then leaves it to that one.
func (ix *Index) idleRelease() {
	ix.mu.RLock()
	early := time.Since(ix.lastUse) < ix.cfg.IdleRelease
	ix.mu.RUnlock()
	if !early {
		ix.release()
	}
}

// release drops the table of contents, the vectors and the graph when
// nothing uses them and all of them are on disk (every successful sync
// wrote them), and gives the memory back to the OS; the next use reads
// them back the way Open does (wake). The keyword index is a separate
// handle whose child has its own idle exit: it stays as it is. release
// reports whether it dropped anything.
func (ix *Index) release() bool {
	ix.mu.Lock()
	if ix.closed || ix.released || ix.users > 0 || ix.unsaved || ix.forceNext {
		ix.mu.Unlock()
		return false
	}
	ix.kept = ix.summarize()
	chunks, vecs := ix.kept.chunks, ix.kept.vectors
	ix.meta = meta{}
	ix.byID, ix.bySlot = nil, nil
	ix.vec, ix.graph = nil, nil
	ix.released = true
	ix.mu.Unlock()
	// Else the freed heap stays in the RSS as room for the heap to grow
	// back into, and the background scavenger returns it slowly if at all.
	debug.FreeOSMemory()
	ix.log.Debug("memory index released while idle", "chunks", chunks, "vectors", vecs)
	return true
}
