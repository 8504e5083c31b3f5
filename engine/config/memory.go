package config

import (
	"path/filepath"
	"strings"
)

// MemorySearch configures an agent's memory index and the memory tools
// (agents.defaults.memorySearch, agents.list[].memorySearch; OpenClaw's
// keys, docs/design.md §6). Unset fields take OpenClaw's defaults; an agent's
// own block overrides the defaults field by field.
type MemorySearch struct {
	Enabled *bool `json:"enabled"` // nil = true
	// Provider of embeddings: local (a GGUF embedding model through the
	// runner), ollama, openai, gemini, or "" to pick: local when an
	// embedding model is installed or local.modelPath is set, else none
	// (keyword search only) — never a remote API unless named.
	Provider   string       `json:"provider"`
	Model      string       `json:"model"`
	Fallback   string       `json:"fallback"` // local | ollama | openai | gemini | none
	ExtraPaths []string     `json:"extraPaths"`
	Local      MemoryLocal  `json:"local"`
	Remote     MemoryRemote `json:"remote"`
	Query      struct {
		MaxResults int      `json:"maxResults"`
		MinScore   *float64 `json:"minScore"`
		Hybrid     struct {
			Enabled             *bool    `json:"enabled"`
			VectorWeight        *float64 `json:"vectorWeight"`
			TextWeight          *float64 `json:"textWeight"`
			CandidateMultiplier int      `json:"candidateMultiplier"`
			// Fusion is ours: "weighted" (OpenClaw's merge, the default) or
			// "rrf" (reciprocal-rank fusion with rrfK, default 60).
			Fusion string `json:"fusion"`
			RRFK   int    `json:"rrfK"`
			MMR    struct {
				Enabled bool    `json:"enabled"`
				Lambda  float64 `json:"lambda"`
			} `json:"mmr"`
			TemporalDecay struct {
				Enabled      bool    `json:"enabled"`
				HalfLifeDays float64 `json:"halfLifeDays"`
			} `json:"temporalDecay"`
		} `json:"hybrid"`
	} `json:"query"`
	Chunking struct {
		Tokens  int `json:"tokens"`
		Overlap int `json:"overlap"`
	} `json:"chunking"`
	Sync  MemorySync `json:"sync"`
	Cache struct {
		Enabled    *bool `json:"enabled"`
		MaxEntries int   `json:"maxEntries"`
	} `json:"cache"`
	Store MemoryStoreConfig `json:"store"`
}

// MemoryLocal is memorySearch.local.
type MemoryLocal struct {
	ModelPath string `json:"modelPath"` // a .gguf path or an installed model name
}

// MemoryRemote is memorySearch.remote: an OpenAI-compatible, Gemini or
// Ollama endpoint for embeddings.
type MemoryRemote struct {
	BaseURL string            `json:"baseUrl"`
	APIKey  string            `json:"apiKey"`
	Headers map[string]string `json:"headers"`
}

// MemorySync is memorySearch.sync.
type MemorySync struct {
	OnSessionStart  *bool `json:"onSessionStart"`
	OnSearch        *bool `json:"onSearch"`
	Watch           *bool `json:"watch"`
	WatchDebounceMs int   `json:"watchDebounceMs"`
	IntervalMinutes int   `json:"intervalMinutes"`
}

// MemoryStoreConfig is memorySearch.store.
type MemoryStoreConfig struct {
	Path string `json:"path"` // {agentId} is replaced; default <state>/memory/<agentId>
}

// Memory is the top-level memory block (OpenClaw's memory.*).
type Memory struct {
	Backend   string `json:"backend"`   // builtin (qmd is OpenClaw's sidecar; not implemented)
	Citations string `json:"citations"` // auto | on | off
}

// IsEnabled reports whether memory search is on (nil means on).
func (m MemorySearch) IsEnabled() bool { return m.Enabled == nil || *m.Enabled }

// mergeMemorySearch returns d with the fields o sets.
func mergeMemorySearch(d MemorySearch, o *MemorySearch) MemorySearch {
	if o == nil {
		return d
	}
	r := d
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	if o.Enabled != nil {
		r.Enabled = o.Enabled
	}
	set(&r.Provider, o.Provider)
	set(&r.Model, o.Model)
	set(&r.Fallback, o.Fallback)
	if o.ExtraPaths != nil {
		r.ExtraPaths = o.ExtraPaths
	}
	set(&r.Local.ModelPath, o.Local.ModelPath)
	set(&r.Remote.BaseURL, o.Remote.BaseURL)
	set(&r.Remote.APIKey, o.Remote.APIKey)
	if o.Remote.Headers != nil {
		r.Remote.Headers = o.Remote.Headers
	}
	if o.Query.MaxResults != 0 {
		r.Query.MaxResults = o.Query.MaxResults
	}
	if o.Query.MinScore != nil {
		r.Query.MinScore = o.Query.MinScore
	}
	oh := o.Query.Hybrid
	if oh.Enabled != nil {
		r.Query.Hybrid.Enabled = oh.Enabled
	}
	if oh.VectorWeight != nil {
		r.Query.Hybrid.VectorWeight = oh.VectorWeight
	}
	if oh.TextWeight != nil {
		r.Query.Hybrid.TextWeight = oh.TextWeight
	}
	if oh.CandidateMultiplier != 0 {
		r.Query.Hybrid.CandidateMultiplier = oh.CandidateMultiplier
	}
	set(&r.Query.Hybrid.Fusion, oh.Fusion)
	if oh.RRFK != 0 {
		r.Query.Hybrid.RRFK = oh.RRFK
	}
	if oh.MMR.Enabled || oh.MMR.Lambda != 0 {
		r.Query.Hybrid.MMR = oh.MMR
	}
	if oh.TemporalDecay.Enabled || oh.TemporalDecay.HalfLifeDays != 0 {
		r.Query.Hybrid.TemporalDecay = oh.TemporalDecay
	}
	if o.Chunking.Tokens != 0 {
		r.Chunking = o.Chunking
	}
	if o.Sync.OnSessionStart != nil {
		r.Sync.OnSessionStart = o.Sync.OnSessionStart
	}
	if o.Sync.OnSearch != nil {
		r.Sync.OnSearch = o.Sync.OnSearch
	}
	if o.Sync.Watch != nil {
		r.Sync.Watch = o.Sync.Watch
	}
	if o.Sync.WatchDebounceMs != 0 {
		r.Sync.WatchDebounceMs = o.Sync.WatchDebounceMs
	}
	if o.Sync.IntervalMinutes != 0 {
		r.Sync.IntervalMinutes = o.Sync.IntervalMinutes
	}
	if o.Cache.Enabled != nil {
		r.Cache.Enabled = o.Cache.Enabled
	}
	if o.Cache.MaxEntries != 0 {
		r.Cache.MaxEntries = o.Cache.MaxEntries
	}
	set(&r.Store.Path, o.Store.Path)
	return r
}

var (
	memoryProviders = []string{"local", "ollama", "openai", "gemini"}
	memoryFallbacks = []string{"local", "ollama", "openai", "gemini", "none"}
	citationModes   = []string{"auto", "on", "off"}
	fusionModes     = []string{"weighted", "rrf"}
)

func (c *Config) validateMemory(v *validation) {
	check := func(p string, m *MemorySearch) {
		if m == nil {
			return
		}
		v.enum(p+".provider", m.Provider, memoryProviders, true)
		v.enum(p+".fallback", m.Fallback, memoryFallbacks, true)
		v.enum(p+".query.hybrid.fusion", m.Query.Hybrid.Fusion, fusionModes, true)
		if m.Query.MaxResults < 0 || m.Query.MaxResults > 50 {
			v.fail(p+".query.maxResults", "%d: want 1 to 50", m.Query.MaxResults)
		}
		if s := m.Query.MinScore; s != nil && (*s < 0 || *s > 1) {
			v.fail(p+".query.minScore", "%g: want 0 to 1", *s)
		}
		h := m.Query.Hybrid
		for name, w := range map[string]*float64{"vectorWeight": h.VectorWeight, "textWeight": h.TextWeight} {
			if w != nil && *w < 0 {
				v.fail(p+".query.hybrid."+name, "%g: must not be negative", *w)
			}
		}
		if h.VectorWeight != nil && h.TextWeight != nil && *h.VectorWeight+*h.TextWeight == 0 {
			v.fail(p+".query.hybrid", "vectorWeight and textWeight are both 0")
		}
		if h.CandidateMultiplier < 0 || h.CandidateMultiplier > 20 {
			v.fail(p+".query.hybrid.candidateMultiplier", "%d: want 1 to 20", h.CandidateMultiplier)
		}
		if h.MMR.Lambda < 0 || h.MMR.Lambda > 1 {
			v.fail(p+".query.hybrid.mmr.lambda", "%g: want 0 to 1", h.MMR.Lambda)
		}
		if h.TemporalDecay.HalfLifeDays < 0 {
			v.fail(p+".query.hybrid.temporalDecay.halfLifeDays", "must not be negative")
		}
		if t, o := m.Chunking.Tokens, m.Chunking.Overlap; t < 0 || o < 0 || (t > 0 && o >= t) {
			v.fail(p+".chunking", "tokens %d, overlap %d: want overlap smaller than tokens", t, o)
		}
		if m.Sync.WatchDebounceMs < 0 || m.Sync.IntervalMinutes < 0 || m.Cache.MaxEntries < 0 {
			v.fail(p+".sync", "values must not be negative")
		}
		if m.Provider != "" && m.Provider == m.Fallback {
			v.fail(p+".fallback", "%q is the provider itself", m.Fallback)
		}
	}
	check("agents.defaults.memorySearch", &c.Agents.Defaults.MemorySearch)
	for i, a := range c.Agents.List {
		check(indexPath("agents.list", i)+".memorySearch", a.MemorySearch)
	}
	v.enum("memory.citations", c.Memory.Citations, citationModes, true)
	if b := c.Memory.Backend; b != "" && b != "builtin" {
		v.fail("memory.backend", "%q: only \"builtin\" is available (OpenClaw's qmd sidecar is not supported)", b)
	}
}

// MemoryStore is where an agent's memory index lives: store.path with
// {agentId} replaced, or <stateDir>/memory/<agentId>.
func (m MemorySearch) MemoryStore(stateDir, agentID string) string {
	if m.Store.Path == "" {
		return filepath.Join(stateDir, "memory", agentID)
	}
	p := ExpandHome(replaceAgentID(m.Store.Path, agentID))
	if !filepath.IsAbs(p) {
		p = filepath.Join(stateDir, p)
	}
	return p
}

func replaceAgentID(s, id string) string { return strings.ReplaceAll(s, "{agentId}", id) }
