package config

import "testing"

// Every memorySearch key OpenClaw documents decodes (floats included: a
// float field once panicked the decoder), and unknown OpenClaw keys there
// are warnings, not errors.
func TestMemorySearchKeys(t *testing.T) {
	cfg, err := Parse([]byte(`{
		agents: { defaults: { memorySearch: {
			enabled: true, provider: 'openai', model: 'text-embedding-3-small', fallback: 'local',
			extraPaths: ['../notes'], local: { modelPath: '/m/bge.gguf', modelCacheDir: '/x' },
			remote: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'k', headers: { 'X-A': 'b' }, batch: { enabled: false } },
			query: { maxResults: 8, minScore: 0.2, hybrid: { enabled: true, vectorWeight: 0.6, textWeight: 0.4,
				candidateMultiplier: 5, fusion: 'rrf', rrfK: 30, mmr: { enabled: true, lambda: 0.5 },
				temporalDecay: { enabled: true, halfLifeDays: 14.5 } } },
			chunking: { tokens: 300, overlap: 50 },
			sync: { onSessionStart: false, onSearch: true, watch: true, watchDebounceMs: 500, intervalMinutes: 10, sessions: { deltaBytes: 1 } },
			cache: { enabled: true, maxEntries: 1000 }, store: { path: '/s/{agentId}', vector: { enabled: true } },
			experimental: { sessionMemory: false }, sources: ['memory'],
		} } },
		memory: { backend: 'builtin', citations: 'off' },
	}`), "m.json5")
	if err != nil {
		t.Fatal(err)
	}
	ra, _ := cfg.Agent("main")
	m := ra.MemorySearch
	h := m.Query.Hybrid
	if *m.Query.MinScore != 0.2 || *h.VectorWeight != 0.6 || h.MMR.Lambda != 0.5 || h.TemporalDecay.HalfLifeDays != 14.5 || h.Fusion != "rrf" || m.Chunking.Overlap != 50 {
		t.Errorf("%+v", m)
	}
	if got := m.MemoryStore("/state", "main"); got != "/s/main" {
		t.Errorf("store %s", got)
	}
	if len(cfg.Warnings()) == 0 {
		t.Error("OpenClaw keys we do not implement should warn")
	}
	if _, err := Parse([]byte(`{agents: {defaults: {memorySearch: {query: {minScore: 'high'}}}}}`), "b.json5"); err == nil {
		t.Error("a string minScore was accepted")
	}
}
