// Package memory is the agent's long-term memory index (DESIGN.md §6): the
// Markdown files of the workspace (MEMORY.md, memory/**/*.md, extraPaths)
// cut into overlapping chunks with their line ranges, a keyword index (BM25)
// and a vector index over them, and the hybrid search the memory_search tool
// and `openclaw memory` use. The files are the source of truth; everything
// here can be deleted and is rebuilt from them.
//
// The keyword index and the vector graph are implementations named after
// what they wrap (engine/memory/bleve, engine/memory/hnsw); this package owns
// the interfaces they satisfy.
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
