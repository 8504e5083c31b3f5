package hnsw

import (
	"os"
	"sync"
	"testing"
	"time"
)

const benchDim = 384

type benchSet struct {
	once    sync.Once
	d       dataset
	queries dataset
	g       *Graph
	build   time.Duration
}

var bench10k, bench100k benchSet

func (s *benchSet) get(b *testing.B, n int) *benchSet {
	s.once.Do(func() {
		all := genData(77, n+1000, benchDim, 50)
		s.d, s.queries = all[:n], all[n:]
		start := time.Now()
		s.g = build(s.d, Config{Seed: 1})
		s.build = time.Since(start)
	})
	b.Logf("n=%d dim=%d build %v, %.0f bytes/node", n, benchDim, s.build.Round(time.Millisecond), float64(graphBytes(s.g))/float64(s.g.Len()))
	return s
}

func benchSearch(b *testing.B, s *benchSet) {
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		s.g.Search(s.d.query(s.queries[i%len(s.queries)]), 10, 0)
		i++
	}
}

func BenchmarkSearch10k(b *testing.B)  { benchSearch(b, bench10k.get(b, 10000)) }
func BenchmarkSearch100k(b *testing.B) { benchSearch(b, bench100k.get(b, 100000)) }

func BenchmarkBuild10k(b *testing.B) {
	d := genData(78, 10000, benchDim, 50)
	for b.Loop() {
		build(d, Config{Seed: 1})
	}
}

// graphBytes is the heap the graph's adjacency takes: slice headers and
// backing arrays (by capacity), the per-id slot table included.
func graphBytes(g *Graph) int {
	const hdr = 24 // slice header on 64-bit
	n := cap(g.nodes) * hdr
	for _, links := range g.nodes {
		n += cap(links) * hdr
		for _, l := range links {
			n += cap(l) * 4
		}
	}
	return n
}

// TestBytesPerNode logs the adjacency size, for the package doc.
func TestBytesPerNode(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("slow")
	}
	// Adjacency size hardly depends on the dimension; a small one keeps
	// the build fast. 100k only on request (HNSW_BIG=1): it takes minutes.
	sizes := []int{10000}
	if os.Getenv("HNSW_BIG") != "" {
		sizes = append(sizes, 100000)
	}
	for _, n := range sizes {
		d := genData(79, n, 16, 50)
		g := build(d, Config{Seed: 1})
		t.Logf("n=%d M=%d: %.1f bytes/node", g.Len(), g.cfg.M, float64(graphBytes(g))/float64(g.Len()))
	}
}
