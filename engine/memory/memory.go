// Package memory is the agent's long-term memory index (docs/design.md §6): the
// Markdown files of the workspace (MEMORY.md, memory/**/*.md, extraPaths)
// cut into overlapping chunks with their line ranges, a keyword index (BM25)
// and a vector index over them, and the hybrid search the memory_search tool
// and `openclaw memory` use. The files are the source of truth; everything
// here can be deleted and is rebuilt from them.
//
// The keyword index and the vector graph are implementations named after
// what they wrap (engine/memory/bleve, engine/memory/hnsw); this package owns
// the interfaces they satisfy, and the embedding providers and the cache
// (engine/memory/bbolt) are passed in by the wiring.
//
// Choices where the spec was silent:
//   - Tokens are estimated as 4 bytes (OpenClaw's estimate): chunks of
//     1,600 bytes of whole lines, 320 of overlap; a longer line is cut into
//     pieces on rune boundaries that keep its line number. Overlap 0 in the
//     config means the default, a negative one none.
//   - Vectors are int8 with one float32 scale per row (388 bytes for 384
//     dims); the 4 × maxResults candidates of the scan (or the graph) are
//     re-ranked with the float32 vectors of the embedding cache. The exact
//     scan serves up to DefaultHNSWThreshold chunks (measured: 4.6 ms at
//     50k × 384 on 4 cores), the graph above.
//   - BM25 is normalized by the best BM25 among the candidates; the fused
//     score is 0.7·cosine + 0.3·that. minScore applies to the better of the
//     fused score and either side alone, so an exact keyword hit that the
//     vectors miss still passes OpenClaw's 0.35.
//   - A provider that fails keeps the stored vectors (searches fall back to
//     keywords, and say so); a fallback provider is used only when the
//     primary fails a probe, and then every vector is redone in its space
//     (from the cache, keyed by the provider's fingerprint, where possible).
//   - meta.json is written last and names the vectors and graph files of
//     its generation, so a crash leaves the previous index whole; anything
//     missing, corrupt or inconsistent (a keyword index whose document
//     count differs from the table of contents) is rebuilt from the files.
//   - Files are read without following symbolic links (O_NOFOLLOW, every
//     directory checked), also for snippets between syncs.
//   - A search syncs first when the index is dirty, nothing watches the
//     files, or the index directory was deleted; a sync that changes
//     nothing writes nothing.
//   - An index no search or sync used for Config.IdleRelease (30 s, as the
//     keyword index's child) drops its table of contents, vectors and
//     graph, all on disk since its last sync, and reads them back at the
//     next use (~70 ms at 10k chunks on a 2-core VM); Status answers from
//     a few counters kept meanwhile, without loading them.
package memory

import "context"

// Doc is one chunk as the keyword index sees it.
type Doc struct {
	ID   string // chunk id, stable for the same path, lines and text
	Path string // slash path relative to the workspace (or the extra path)
	Text string
}

// Hit is one keyword match: a chunk id and its BM25 score (higher is better,
// not bounded).
type Hit struct {
	ID    string
	Score float64
}

// TextIndex is the keyword side of the index (engine/memory/bleve).
type TextIndex interface {
	// Index adds or replaces docs, in one batch.
	Index(docs []Doc) error
	// Delete removes docs by id; unknown ids are ignored.
	Delete(ids []string) error
	// Search returns at most k hits, best first. An empty or
	// punctuation-only query returns no hits and no error.
	Search(ctx context.Context, query string, k int) ([]Hit, error)
	// Count is the number of docs indexed.
	Count() (uint64, error)
	Close() error
}

// Embedder turns texts into vectors (a local GGUF embedding model through
// the runner, Ollama, or a remote API).
type Embedder interface {
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}
