package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/memory"
	membbolt "github.com/openclaw-edge/edge/engine/memory/bbolt"
	"github.com/openclaw-edge/edge/engine/memory/bleveproc"
	"github.com/openclaw-edge/edge/engine/memory/hnsw"
	"github.com/openclaw-edge/edge/models/catalog"
	"github.com/openclaw-edge/edge/models/llamacpp"
	"github.com/openclaw-edge/edge/models/ollama"
	"github.com/openclaw-edge/edge/models/openai"
)

// memories are the agents' memory indexes (docs/design.md §6), built from
// agents.defaults.memorySearch (and each agent's override).
type memories struct {
	// opened is closed once byAgent is filled: the indexes open in the
	// background, so a gateway is ready before its memory (reading an
	// index's table of contents and vectors, and starting the keyword
	// index's child, cost tens of milliseconds on a Pi, 100+ with 10k
	// chunks). Whatever needs an index waits for it.
	opened  chan struct{}
	byAgent map[string]*memory.Index
	enabled map[string]bool
	syncCfg map[string]config.MemorySync
	cache   *membbolt.Cache
	log     *slog.Logger
}

// hnswEf is the search breadth: recall@10 ≥ 0.95 against exact search at
// this ef on clustered 384-d data (engine/memory/hnsw's tests).
const hnswEf = 96

// newMemories opens one index per agent with memory search enabled. It
// never fails the gateway over memory: a problem is logged and the agent
// answers without memory search.
func newMemories(cfg *config.Config, stateDir string, ags []gateway.Agent, registry *catalog.Registry, pool *llamacpp.Pool, log *slog.Logger) *memories {
	m := &memories{opened: make(chan struct{}), byAgent: map[string]*memory.Index{}, enabled: map[string]bool{}, syncCfg: map[string]config.MemorySync{}, log: log}
	// What the opening needs of the agents, copied now: the gateway
	// fills in other fields of ags while the indexes open.
	var open []memAgent
	for _, a := range ags {
		ra, _ := cfg.Agent(a.ID)
		if ms := ra.MemorySearch; ms.IsEnabled() {
			m.enabled[a.ID] = true
			m.syncCfg[a.ID] = ms.Sync
			open = append(open, memAgent{a.ID, a.Workspace})
		}
	}
	go func() {
		defer close(m.opened)
		m.open(cfg, stateDir, open, registry, pool, log)
	}()
	return m
}

// memAgent is what opening an agent's index needs of it.
type memAgent struct{ ID, Workspace string }

// open opens the indexes (newMemories).
func (m *memories) open(cfg *config.Config, stateDir string, ags []memAgent, registry *catalog.Registry, pool *llamacpp.Pool, log *slog.Logger) {
	for _, a := range ags {
		ra, _ := cfg.Agent(a.ID)
		ms := ra.MemorySearch
		if !ms.IsEnabled() {
			continue
		}
		if m.cache == nil && (ms.Cache.Enabled == nil || *ms.Cache.Enabled) {
			c, err := membbolt.Open(filepath.Join(stateDir, "memory", "embeddings.db"), ms.Cache.MaxEntries)
			if err != nil {
				log.Warn("memory: no embedding cache; every reindex embeds again", "err", err)
			} else {
				m.cache = c
			}
		}
		providers, warn := embeddingProviders(cfg, ms, registry, pool)
		if warn != "" {
			log.Info("memory search of agent "+a.ID+": "+warn, "agent", a.ID)
		}
		ix, err := memory.Open(memoryConfig(ms, a.ID, a.Workspace, ms.MemoryStore(stateDir, a.ID), providers, m.cacheOrNil(), log))
		if err != nil {
			log.Error("memory search is off for this agent", "agent", a.ID, "err", err)
			continue
		}
		m.byAgent[a.ID] = ix
	}
	if len(m.byAgent) > 0 {
		// Loading an index decodes its table of contents and reads its
		// vectors: give that garbage back now rather than carry it in the
		// idle RSS (docs/design.md §11 counts a 10k-chunk index in its 30 MB).
		debug.FreeOSMemory()
	}
}

func (m *memories) cacheOrNil() memory.Cache {
	if m.cache == nil {
		return nil
	}
	return m.cache
}

// memoryConfig turns the resolved configuration into the index's.
func memoryConfig(ms config.MemorySearch, agentID, workspace, dir string, providers []memory.Provider, cache memory.Cache, log *slog.Logger) memory.Config {
	q := memory.DefaultQuery()
	if ms.Query.MaxResults > 0 {
		q.MaxResults = ms.Query.MaxResults
	}
	if ms.Query.MinScore != nil {
		q.MinScore = *ms.Query.MinScore
	}
	h := ms.Query.Hybrid
	q.Hybrid = h.Enabled == nil || *h.Enabled
	if h.VectorWeight != nil || h.TextWeight != nil {
		q.VectorWeight, q.TextWeight = memory.DefaultVectorWeight, memory.DefaultTextWeight
		if h.VectorWeight != nil {
			q.VectorWeight = *h.VectorWeight
		}
		if h.TextWeight != nil {
			q.TextWeight = *h.TextWeight
		}
	}
	q.CandidateMultiplier = h.CandidateMultiplier
	q.Fusion, q.RRFK = h.Fusion, h.RRFK
	q.MMR, q.MMRLambda = h.MMR.Enabled, h.MMR.Lambda
	q.TemporalDecay, q.HalfLifeDays = h.TemporalDecay.Enabled, h.TemporalDecay.HalfLifeDays
	return memory.Config{
		AgentID: agentID, Workspace: workspace, ExtraPaths: ms.ExtraPaths, Dir: dir,
		OpenText:  openText(log),
		Providers: providers, Cache: cache,
		Graph:       hnsw.Codec(hnsw.Config{}, hnswEf),
		ChunkTokens: ms.Chunking.Tokens, OverlapTokens: ms.Chunking.Overlap,
		Query: q, Logger: log,
		NoSyncOnSearch: ms.Sync.OnSearch != nil && !*ms.Sync.OnSearch,
		NoLocalRunner:  noRunner(),
	}
}

// openText opens a memory keyword index in an openclaw-memindex child
// (engine/memory/bleveproc): the gateway does not link bleve, whose init
// and open index would cost every start and every idle hour, memory search
// used or not; the child runs while the index is used.
func openText(log *slog.Logger) func(dir string) (memory.TextIndex, bool, error) {
	return func(dir string) (memory.TextIndex, bool, error) {
		x, rebuilt, err := bleveproc.Open(bleveproc.Config{Logger: log}, dir)
		if err != nil {
			return nil, false, err
		}
		return x, rebuilt, nil
	}
}

// embeddingProviders resolves memorySearch.provider and fallback. "" picks
// local when an embedding model is available, else none (keyword search):
// a remote API is used only when named. The string says what was chosen
// or why there is none.
func embeddingProviders(cfg *config.Config, ms config.MemorySearch, registry *catalog.Registry, pool *llamacpp.Pool) ([]memory.Provider, string) {
	var out []memory.Provider
	var notes []string
	names := []string{ms.Provider}
	if ms.Provider == "" {
		names = []string{"local"}
	}
	if ms.Fallback != "" && ms.Fallback != "none" && ms.Fallback != names[0] {
		names = append(names, ms.Fallback)
	}
	for i, name := range names {
		model := ""
		if i == 0 {
			model = ms.Model
		}
		p, err := embeddingProvider(cfg, ms, name, model, registry, pool)
		if err != nil {
			notes = append(notes, err.Error())
			continue
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, "keyword (BM25) search only: " + strings.Join(notes, "; ")
	}
	return out, strings.Join(notes, "; ")
}

func embeddingProvider(cfg *config.Config, ms config.MemorySearch, name, model string, registry *catalog.Registry, pool *llamacpp.Pool) (memory.Provider, error) {
	switch name {
	case "local":
		if noRunner() {
			return memory.Provider{}, errors.New("no local embeddings: openclaw-runner is not installed beside the gateway (set memorySearch.provider to ollama or openai for semantic search)")
		}
		path, entry := ms.Local.ModelPath, ""
		if path == "" && model != "" {
			path = model
		}
		if path != "" && !strings.ContainsRune(path, os.PathSeparator) && !strings.HasSuffix(path, ".gguf") {
			p, err := registry.Path(path) // an installed model's name
			if err != nil {
				return memory.Provider{}, fmt.Errorf("local embedding model %q: %v", path, err)
			}
			entry, path = path, p
		}
		if path == "" {
			for _, e := range registry.List() {
				if e.Kind == catalog.KindEmbedding && (entry == "" || e.Name == catalog.DefaultEmbedding) {
					entry, path = e.Name, e.Path
				}
			}
		}
		if path == "" {
			return memory.Provider{}, fmt.Errorf("no local embedding model (openclaw models pull %s, or memorySearch.local.modelPath)", catalog.DefaultEmbedding)
		}
		path = config.ExpandHome(path)
		if _, err := os.Stat(path); err != nil {
			return memory.Provider{}, fmt.Errorf("local embedding model: %v", err)
		}
		if entry == "" {
			entry = strings.TrimSuffix(filepath.Base(path), ".gguf")
		}
		p := memory.Provider{Name: "local", Model: entry, Endpoint: path, Embedder: pool.Model(config.LocalProvider, entry, path)}
		if cm, ok := registry.Lookup(entry); ok {
			p.QueryPrefix, p.DocumentPrefix = cm.QueryPrefix, cm.DocumentPrefix
		} else if cm, ok := catalog.ByFile(filepath.Base(path)); ok {
			p.QueryPrefix, p.DocumentPrefix = cm.QueryPrefix, cm.DocumentPrefix
		}
		return p, nil
	case "ollama":
		prov := cfg.Models.Providers["ollama"]
		base := firstNonEmpty(ms.Remote.BaseURL, prov.BaseURL)
		if model == "" {
			model = "nomic-embed-text"
		}
		op, err := ollama.New(ollama.Config{ProviderID: "ollama", BaseURL: base, APIKey: firstNonEmpty(ms.Remote.APIKey, prov.APIKey), Headers: ms.Remote.Headers})
		if err != nil {
			return memory.Provider{}, fmt.Errorf("ollama embeddings: %v", err)
		}
		p := memory.Provider{Name: "ollama", Model: model, Endpoint: base, Embedder: embedFunc(func(ctx context.Context, t []string) ([][]float32, error) { return op.Embed(ctx, model, t) })}
		if strings.HasPrefix(model, "nomic-embed-text") {
			p.QueryPrefix, p.DocumentPrefix = "search_query: ", "search_document: "
		}
		return p, nil
	case "openai":
		prov := cfg.Models.Providers["openai"]
		key := firstNonEmpty(ms.Remote.APIKey, prov.APIKey, os.Getenv("OPENAI_API_KEY"))
		base := firstNonEmpty(ms.Remote.BaseURL, prov.BaseURL)
		if key == "" && base == "" {
			return memory.Provider{}, fmt.Errorf("openai embeddings need an API key (memorySearch.remote.apiKey or OPENAI_API_KEY)")
		}
		if model == "" {
			model = openai.DefaultEmbeddingModel
		}
		op := openai.New(openai.Config{ProviderID: "openai", BaseURL: base, APIKey: key, Headers: ms.Remote.Headers})
		return memory.Provider{Name: "openai", Model: model, Endpoint: firstNonEmpty(base, openai.DefaultBaseURL),
			Embedder: embedFunc(func(ctx context.Context, t []string) ([][]float32, error) { return op.Embed(ctx, model, t) })}, nil
	default:
		return memory.Provider{}, fmt.Errorf("embedding provider %q is not available in this build (local, ollama, openai)", name)
	}
}

type embedFunc func(context.Context, []string) ([][]float32, error)

func (f embedFunc) Embed(ctx context.Context, t []string) ([][]float32, error) { return f(ctx, t) }

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// index returns an agent's index, nil when memory search is off for it.
func (m *memories) index(agentID string) *memory.Index {
	if m == nil || !m.enabled[agentID] {
		return nil
	}
	<-m.opened
	return m.byAgent[agentID]
}

// watch starts each index's watcher (memorySearch.sync.watch, default on)
// and interval sync; they stop with ctx.
func (m *memories) watch(ctx context.Context) {
	go func() {
		select {
		case <-m.opened:
		case <-ctx.Done():
			return
		}
		m.watchOpened(ctx)
	}()
}

func (m *memories) watchOpened(ctx context.Context) {
	for id, ix := range m.byAgent {
		s := m.syncCfg[id]
		interval := time.Duration(s.IntervalMinutes) * time.Minute
		if s.Watch != nil && !*s.Watch {
			go ix.RunInterval(ctx, interval) // searches check the files themselves
		} else {
			go ix.Watch(ctx, time.Duration(s.WatchDebounceMs)*time.Millisecond, interval)
		}
		// The first sync in the background: the gateway is ready at once;
		// a search before it finishes answers from what was indexed.
		ix.SyncInBackground(ctx)
	}
}

// hookSessions syncs an agent's index in the background when one of its
// sessions starts (memorySearch.sync.onSessionStart, default on), and
// marks it dirty when the memory flush wrote a note.
func (m *memories) hookSessions(ags []gateway.Agent) {
	for i := range ags {
		id := ags[i].ID
		if !m.enabled[id] {
			continue
		}
		ags[i].MemoryWritten = func() {
			if ix := m.index(id); ix != nil {
				ix.MarkDirty()
			}
		}
		if s := m.syncCfg[id]; s.OnSessionStart != nil && !*s.OnSessionStart {
			continue
		}
		// SessionStart must not block: the index may still be opening.
		ags[i].SessionStart = func() {
			go func() {
				if ix := m.index(id); ix != nil {
					ix.SyncInBackground(context.Background())
				}
			}()
		}
	}
}

// close closes the indexes and the cache.
func (m *memories) close() {
	<-m.opened
	for _, ix := range m.byAgent {
		_ = ix.Close()
	}
	if m.cache != nil {
		_ = m.cache.Close()
	}
}

// noRunner: openclaw-runner cannot be found, so nothing local can run and
// no advice may suggest pulling a local model file.
func noRunner() bool {
	_, err := llamacpp.FindRunner()
	return err != nil
}
