package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/memory"
	membbolt "github.com/openclaw-edge/edge/engine/memory/bbolt"
	membleve "github.com/openclaw-edge/edge/engine/memory/bleve"
	"github.com/openclaw-edge/edge/engine/memory/hnsw"
	"github.com/openclaw-edge/edge/models/llamacpp"
)

// BenchmarkMemorySearchEmbedded is memory search with the query embedding
// included: a real GGUF embedding model through openclaw-runner embeds
// each query (and, first, the 10,000 chunks). The model is
// $OPENCLAW_EMBED_MODEL or the shared test model (a 2-layer BERT with a
// real WordPiece vocabulary, 16 dimensions): the figure is the path's cost
// — runner round trip, tokenizing, encoding — not a 384-d model's (engine/
// memory's BenchmarkMemorySearch has 384-d search without the embedding).
var embeddedOnce struct {
	sync.Once
	ix      *memory.Index
	cleanup func()
	err     error
}

func BenchmarkMemorySearchEmbedded(b *testing.B) {
	embeddedOnce.Do(func() { embeddedOnce.ix, embeddedOnce.cleanup, embeddedOnce.err = buildEmbeddedIndex(b) })
	if embeddedOnce.err != nil {
		b.Skip(embeddedOnce.err)
	}
	ix := embeddedOnce.ix
	qs := []string{"when is the dentist", "blue car lock code", "flight to rome friday", "boiler service booked", "guest wifi name"}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t := time.Now()
		r, err := ix.Search(context.Background(), qs[i%len(qs)], memory.Options{NoSync: true})
		if err != nil || r.Mode != "hybrid" {
			b.Fatalf("%+v %v", r, err)
		}
		lat = append(lat, time.Since(t))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
}

// buildEmbeddedIndex embeds and indexes the corpus once per run (the
// benchmark function runs several times).
func buildEmbeddedIndex(b *testing.B) (*memory.Index, func(), error) {
	model := os.Getenv("OPENCLAW_EMBED_MODEL")
	if model == "" {
		model, _ = filepath.Abs("../../shared/models/tiny-random-bert-bge-vocab.gguf")
	}
	if _, err := os.Stat(model); err != nil {
		return nil, nil, fmt.Errorf("embedding model: %v", err)
	}
	if why := buildRunner(); why != "" {
		return nil, nil, errors.New(why)
	}
	os.Setenv(llamacpp.RunnerEnv, runnerPath())
	dir, err := os.MkdirTemp("", "membed")
	if err != nil {
		return nil, nil, err
	}
	ws := filepath.Join(dir, "ws")
	r := rand.New(rand.NewPCG(5, 6))
	words := strings.Fields("the garden tea dentist car blue green boat lock code bike meeting friday monday plumber rome flight booked vaccine cat dog window cleaner boiler service tulip frost standup wifi guest")
	files := 100 // 10,000 chunks; OPENCLAW_BENCH_CHUNKS for fewer
	if n, err := strconv.Atoi(os.Getenv("OPENCLAW_BENCH_CHUNKS")); err == nil && n > 0 {
		files = max(1, n/100)
	}
	for f := range files {
		var sb strings.Builder
		for range 100 {
			var p strings.Builder
			for p.Len() < 1500 {
				p.WriteString(words[r.IntN(len(words))] + fmt.Sprint(r.IntN(500)) + " ")
			}
			sb.WriteString(p.String() + "\n")
		}
		p := filepath.Join(ws, "memory", fmt.Sprintf("n%03d.md", f))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(sb.String()), 0o644)
	}
	pool := llamacpp.NewPool(llamacpp.Config{Runner: llamacpp.RunnerOptions{Threads: 2, ContextLen: 512, BatchSize: 512}})
	cache, err := membbolt.Open(filepath.Join(dir, "emb.db"), 0)
	if err != nil {
		return nil, nil, err
	}
	ix, err := memory.Open(memory.Config{
		AgentID: "bench", Workspace: ws, Dir: filepath.Join(dir, "index"),
		OpenText:  func(d string) (memory.TextIndex, bool, error) { return membleve.Open(d) },
		Providers: []memory.Provider{{Name: "local", Model: filepath.Base(model), Embedder: pool.Model("local", "embed", model)}},
		Cache:     cache, Graph: hnsw.Codec(hnsw.Config{}, 96), Query: memory.DefaultQuery(),
	})
	if err != nil {
		return nil, nil, err
	}
	t0 := time.Now()
	res, err := ix.Sync(context.Background(), false, nil)
	if err != nil || res.Embedded+res.Cached != files*100 {
		return nil, nil, fmt.Errorf("sync %+v %v", res, err)
	}
	b.Logf("%d chunks embedded and indexed in %s", files*100, time.Since(t0).Round(time.Millisecond))
	time.Sleep(5 * time.Second) // scorch's merges after the bulk build
	return ix, func() { ix.Close(); cache.Close(); pool.Close(); os.RemoveAll(dir) }, nil
}
