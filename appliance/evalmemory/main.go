// Command evalmemory is `make eval-memory`: the memory index's retrieval
// quality on LoCoMo (../shared/bench/locomo-dev; CC BY-NC 4.0, evaluation
// only, never shipped). Each conversation's sessions are written as the
// assistant's daily notes (memory/YYYY-MM-DD.md, one line per turn, by
// engine/memory/memeval), indexed by the real index (bleve BM25, int8
// vectors, the HNSW codec), and every scored question is searched the way
// memory_search does; a passage (file + line range) counts for the
// evidence turns it contains. It prints recall@1/@5/@10/@20, hit@5 and MRR
// for plain Okapi BM25 per turn (the published floor) and on the same
// chunks (the floor at our granularity), bleve BM25, vector only and both
// hybrid merges (weighted 0.7/0.3, RRF k=60).
//
// Embeddings come from a GGUF embedding model through openclaw-runner:
// EMBED_MODEL=path.gguf (task prefixes of the built-in catalog's models are
// applied by file name, or -query-prefix/-doc-prefix). Without it the test
// model ../shared/models/tiny-random-bert-bge-vocab.gguf shows the vector
// path working — its random weights carry no meaning, so its vector and
// hybrid rows say nothing about quality.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine/memory"
	membbolt "github.com/openclaw-edge/edge/engine/memory/bbolt"
	membleve "github.com/openclaw-edge/edge/engine/memory/bleve"
	"github.com/openclaw-edge/edge/engine/memory/hnsw"
	"github.com/openclaw-edge/edge/engine/memory/memeval"
	"github.com/openclaw-edge/edge/models/catalog"
	"github.com/openclaw-edge/edge/models/llamacpp"
)

func main() {
	data := flag.String("data", "../shared/bench/locomo-dev/locomo-dev.json", "LoCoMo JSON")
	model := flag.String("embed-model", os.Getenv("EMBED_MODEL"), "GGUF embedding model (default $EMBED_MODEL, else the shared test model)")
	qp := flag.String("query-prefix", "", "query task prefix (default: the catalog's for a known file)")
	dp := flag.String("doc-prefix", "", "document task prefix")
	chunk := flag.Int("chunk-tokens", 0, "chunk size in tokens (default 400, the index's)")
	md := flag.Bool("markdown", false, "print the table as Markdown")
	noVec := flag.Bool("bm25-only", false, "skip the embedding model")
	flag.Parse()
	if err := run(*data, *model, *qp, *dp, *chunk, *md, *noVec); err != nil {
		fmt.Fprintln(os.Stderr, "eval-memory:", err)
		os.Exit(1)
	}
}

type method struct {
	name string
	opt  memory.Options
}

func run(data, model, qp, dp string, chunk int, md, noVec bool) error {
	samples, err := memeval.Load(data)
	if err != nil {
		return fmt.Errorf("%w (the LoCoMo data lives in ../shared/bench/locomo-dev; see its README)", err)
	}
	tmp, err := os.MkdirTemp("", "evalmemory")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	var providers []memory.Provider
	label := "none"
	var pool *llamacpp.Pool
	if !noVec {
		if model == "" {
			model = "../shared/models/tiny-random-bert-bge-vocab.gguf"
		}
		if _, err := os.Stat(model); err != nil {
			return fmt.Errorf("embedding model: %w", err)
		}
		if _, err := llamacpp.FindRunner(); err != nil {
			return fmt.Errorf("embeddings need openclaw-runner (make build; OPENCLAW_RUNNER=bin/openclaw-runner): %w", err)
		}
		pool = llamacpp.NewPool(llamacpp.Config{Runner: llamacpp.RunnerOptions{Threads: 2, ContextLen: 512, BatchSize: 512}})
		defer pool.Close()
		base := filepath.Base(model)
		if m, ok := catalog.ByFile(base); ok && qp == "" && dp == "" {
			qp, dp = m.QueryPrefix, m.DocumentPrefix
		}
		label = strings.TrimSuffix(base, ".gguf")
		providers = []memory.Provider{{Name: "local", Model: label, Endpoint: model, Embedder: pool.Model("local", label, model), QueryPrefix: qp, DocumentPrefix: dp}}
	}
	cache, err := membbolt.Open(filepath.Join(tmp, "embeddings.db"), 1<<20)
	if err != nil {
		return err
	}
	defer cache.Close()

	zero := 0.0
	methods := []method{{"bm25 (bleve)", memory.Options{Mode: memory.ModeText}}}
	if len(providers) > 0 {
		methods = append(methods,
			method{"vector (" + label + ")", memory.Options{Mode: memory.ModeVector}},
			method{"hybrid weighted 0.7/0.3", memory.Options{Fusion: memory.FusionWeighted}},
			method{"hybrid rrf k=60", memory.Options{Fusion: memory.FusionRRF}})
	}
	accs := make([]memeval.Accumulator, len(methods))
	var chunkFloor memeval.Accumulator
	chunks, start := 0, time.Now()
	var indexTime time.Duration
	for _, s := range samples {
		ws := filepath.Join(tmp, s.ID)
		locs, err := memeval.WriteNotes(ws, s)
		if err != nil {
			return err
		}
		q := memory.DefaultQuery()
		q.MinScore = 0
		ix, err := memory.Open(memory.Config{
			AgentID: s.ID, Workspace: ws, Dir: filepath.Join(tmp, "index-"+s.ID),
			OpenText:  func(d string) (memory.TextIndex, bool, error) { return membleve.Open(d) },
			Providers: providers, Cache: cache, Graph: hnsw.Codec(hnsw.Config{}, 96),
			ChunkTokens: chunk, Query: q, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			return err
		}
		t0 := time.Now()
		res, err := ix.Sync(context.Background(), false, nil)
		if err != nil {
			return err
		}
		indexTime += time.Since(t0)
		chunks += res.Chunks
		if len(providers) > 0 && res.Provider == "" {
			return fmt.Errorf("the embedding model indexed nothing: %s", strings.Join(res.Warnings, "; "))
		}
		floor := chunkBM25(ws, chunk)
		for _, qu := range memeval.Scored(s.Questions) {
			for i, m := range methods {
				opt := m.opt
				opt.MaxResults, opt.MinScore, opt.NoSync = 20, &zero, true
				r, err := ix.Search(context.Background(), qu.Text, opt)
				if err != nil {
					return err
				}
				var ps []memeval.Passage
				for _, x := range r.Results {
					ps = append(ps, memeval.Passage{Path: x.Path, StartLine: x.StartLine, EndLine: x.EndLine})
				}
				accs[i].Add(memeval.Evaluate(locs, qu, ps))
			}
			chunkFloor.Add(memeval.Evaluate(locs, qu, floor(qu.Text)))
		}
		ix.Close()
	}
	rows := []memeval.Row{
		{Method: "floor: Okapi BM25, per turn", Metrics: memeval.FloorBM25(samples)},
		{Method: "floor: Okapi BM25, same chunks", Metrics: chunkFloor.Metrics()},
	}
	for i, m := range methods {
		rows = append(rows, memeval.Row{Method: m.name, Metrics: accs[i].Metrics()})
	}
	fmt.Printf("LoCoMo (5 conversations), %d chunks of ~%d tokens (passage-level: a chunk holds many turns), top 20 of each method, minScore off; indexed in %s, all in %s\n\n",
		chunks, max(chunk, memory.DefaultChunkTokens*boolInt(chunk == 0)), indexTime.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if md {
		return memeval.WriteMarkdown(os.Stdout, rows)
	}
	return memeval.WriteTable(os.Stdout, rows)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// chunkBM25 ranks the same chunks the index makes with plain Okapi BM25:
// the floor at the index's granularity.
func chunkBM25(ws string, tokens int) func(string) []memeval.Passage {
	var texts []string
	var ps []memeval.Passage
	paths, _ := filepath.Glob(filepath.Join(ws, "memory", "*.md"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		rel := "memory/" + filepath.Base(p)
		t := tokens
		if t <= 0 {
			t = memory.DefaultChunkTokens
		}
		for _, c := range memory.ChunkText(rel, b, t, min(memory.DefaultOverlapTokens, t/5)) {
			texts = append(texts, c.Text)
			ps = append(ps, memeval.Passage{Path: rel, StartLine: c.StartLine, EndLine: c.EndLine})
		}
	}
	bm := memeval.NewBM25(texts)
	return func(q string) []memeval.Passage {
		var out []memeval.Passage
		for _, i := range bm.Rank(q) {
			if len(out) == 20 {
				break
			}
			out = append(out, ps[i])
		}
		return out
	}
}
