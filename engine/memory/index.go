package memory

import (
	"fmt"
	"io"
	"log/slog"
	"os"
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
