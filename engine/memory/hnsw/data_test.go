package hnsw

import (
	"math"
	"math/rand/v2"
	"slices"
)

// dataset is normalized float32 vectors; similarity is the dot product, as
// for the product's normalized embeddings.
type dataset [][]float32

func dot(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

func (d dataset) sim(a, b uint32) float32 { return dot(d[a], d[b]) }

func (d dataset) query(q []float32) func(uint32) float32 {
	return func(id uint32) float32 { return dot(q, d[id]) }
}

func normalize(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
	return v
}

func gaussian(r *rand.Rand, dim int, sigma float64, around []float32) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64() * sigma)
		if around != nil {
			v[i] += around[i]
		}
	}
	return v
}

// genData draws n normalized vectors. clusters > 0: around that many random
// unit centres with a noise of norm about 0.6 — tight clusters with
// near-duplicate members, where "keep the closest M" neighbour selection
// leaves clusters unconnected. clusters == 0: uniform on the sphere.
func genData(seed uint64, n, dim, clusters int) dataset {
	r := rand.New(rand.NewPCG(seed, 7))
	var centres [][]float32
	for range clusters {
		centres = append(centres, normalize(gaussian(r, dim, 1, nil)))
	}
	sigma := 0.6 / math.Sqrt(float64(dim))
	d := make(dataset, n)
	for i := range d {
		if clusters == 0 {
			d[i] = normalize(gaussian(r, dim, 1, nil))
			continue
		}
		d[i] = normalize(gaussian(r, dim, sigma, centres[r.IntN(clusters)]))
	}
	return d
}

// exact returns the ids of the k best nodes among live for q.
func (d dataset) exact(q []float32, k int, live func(uint32) bool) []uint32 {
	all := make([]Neighbor, 0, len(d))
	for i, v := range d {
		if live == nil || live(uint32(i)) {
			all = append(all, Neighbor{uint32(i), dot(q, v)})
		}
	}
	sortBest(all)
	ids := make([]uint32, 0, k)
	for _, n := range all[:min(k, len(all))] {
		ids = append(ids, n.ID)
	}
	return ids
}

// truth is the exact k best ids for each query among live nodes.
func (d dataset) truth(queries dataset, k int, live func(uint32) bool) [][]uint32 {
	t := make([][]uint32, len(queries))
	for i, q := range queries {
		t[i] = d.exact(q, k, live)
	}
	return t
}

// recallAt is the mean share of the exact best (truth) found by g.Search.
func recallAt(g *Graph, d dataset, queries dataset, truth [][]uint32, ef int) float64 {
	var hit, total int
	for i, q := range queries {
		want := truth[i]
		got := g.Search(d.query(q), len(want), ef)
		for _, w := range want {
			if slices.ContainsFunc(got, func(n Neighbor) bool { return n.ID == w }) {
				hit++
			}
		}
		total += len(want)
	}
	return float64(hit) / float64(total)
}

// recall is recallAt with the truth computed here.
func recall(g *Graph, d dataset, queries dataset, k, ef int, live func(uint32) bool) float64 {
	return recallAt(g, d, queries, d.truth(queries, k, live), ef)
}

func build(d dataset, cfg Config) *Graph {
	g := New(cfg)
	for i := range d {
		if err := g.Add(uint32(i), d.sim); err != nil {
			panic(err)
		}
	}
	return g
}
