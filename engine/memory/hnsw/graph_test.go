package hnsw

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestEdgeCases(t *testing.T) {
	d := genData(1, 20, 8, 0)
	q := d.query(d[3])
	one := New(Config{})
	if err := one.Add(5, d.sim); err != nil {
		t.Fatal(err)
	}
	full := build(d, Config{Seed: 3})
	for _, tc := range []struct {
		name  string
		g     *Graph
		k, ef int
		want  int // number of results
	}{
		{"empty graph", New(Config{}), 10, 0, 0},
		{"k=0", full, 0, 0, 0},
		{"k<0", full, -1, 0, 0},
		{"k>n", full, 100, 0, len(d)},
		{"k>n small ef", full, 100, 1, len(d)},
		{"single node", one, 10, 0, 1},
		{"k=1", full, 1, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.g.Search(q, tc.k, tc.ef)
			if len(got) != tc.want {
				t.Fatalf("got %d results, want %d: %v", len(got), tc.want, got)
			}
			if !slices.IsSortedFunc(got, func(a, b Neighbor) int {
				return -cmpScore(a.Score, b.Score)
			}) {
				t.Errorf("not best first: %v", got)
			}
		})
	}
	if got := full.Search(q, 1, 0); got[0].ID != 3 || got[0].Score != dot(d[3], d[3]) {
		t.Errorf("query equal to node 3: got %v", got)
	}
	if err := full.Add(7, d.sim); !errors.Is(err, ErrExists) {
		t.Errorf("duplicate Add: err = %v, want ErrExists", err)
	}
	if full.Len() != len(d) {
		t.Errorf("Len after failed Add = %d, want %d", full.Len(), len(d))
	}
	if err := full.Add(MaxID+1, d.sim); err == nil {
		t.Error("Add above MaxID succeeded")
	}
	full.Delete(1000, d.sim) // unknown: no-op
	full.Delete(MaxID+5, d.sim)
	if full.Len() != len(d) {
		t.Errorf("Len after deleting unknown ids = %d", full.Len())
	}
}

func cmpScore(a, b float32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestGapsInIDs: ids need not be contiguous.
func TestGapsInIDs(t *testing.T) {
	d := genData(2, 300, 16, 5)
	g := New(Config{Seed: 9})
	for i := len(d) - 1; i >= 0; i -= 3 { // descending, every third id
		if err := g.Add(uint32(i), d.sim); err != nil {
			t.Fatal(err)
		}
	}
	live := func(id uint32) bool { return (len(d)-1-int(id))%3 == 0 }
	if r := recall(g, d, d[:50], 10, 0, live); r < 0.95 {
		t.Errorf("recall with gaps = %.3f", r)
	}
	for _, n := range g.Search(d.query(d[0]), 50, 0) {
		if !live(n.ID) {
			t.Fatalf("returned id %d that was never added", n.ID)
		}
	}
}

// TestDeterministic: same seed and insertion order, same graph.
func TestDeterministic(t *testing.T) {
	d := genData(3, 500, 16, 10)
	a, b := build(d, Config{Seed: 5}), build(d, Config{Seed: 5})
	if !sameGraph(a, b) {
		t.Error("two builds with the same seed differ")
	}
}

func sameGraph(a, b *Graph) bool {
	if a.cfg != b.cfg || a.count != b.count || a.entry != b.entry || a.top != b.top || len(a.nodes) != len(b.nodes) {
		return false
	}
	for i := range a.nodes {
		if (a.nodes[i] == nil) != (b.nodes[i] == nil) || len(a.nodes[i]) != len(b.nodes[i]) {
			return false
		}
		for l := range a.nodes[i] {
			if !slices.Equal(a.nodes[i][l], b.nodes[i][l]) {
				return false
			}
		}
	}
	return true
}

// checkInvariants: every link names a live node of a high enough level, no
// self links or duplicates, lists within their bounds, entry at the top level.
func checkInvariants(t *testing.T, g *Graph) {
	t.Helper()
	n := 0
	for id, links := range g.nodes {
		if links == nil {
			continue
		}
		n++
		if len(links)-1 > g.top {
			t.Fatalf("node %d level %d above top %d", id, len(links)-1, g.top)
		}
		for l, lst := range links {
			if len(lst) > g.maxLinks(l) {
				t.Fatalf("node %d layer %d has %d links", id, l, len(lst))
			}
			for j, x := range lst {
				if x == uint32(id) || !g.Has(x) || len(g.nodes[x]) <= l || slices.Contains(lst[:j], x) {
					t.Fatalf("node %d layer %d: bad link %d", id, l, x)
				}
			}
		}
	}
	if n != g.count {
		t.Fatalf("count %d, %d nodes present", g.count, n)
	}
	if n > 0 && (!g.Has(g.entry) || len(g.nodes[g.entry])-1 != g.top) {
		t.Fatalf("entry %d not a node of top level %d", g.entry, g.top)
	}
}

// reachable counts nodes an exhaustive search (ef = n) finds.
func reachable(g *Graph) int {
	return len(g.Search(func(uint32) float32 { return 0 }, g.Len(), g.Len()))
}

func TestDelete(t *testing.T) {
	n, dim := 5000, 64
	if testing.Short() || raceEnabled {
		n, dim = 1500, 32
	}
	const nq = 200
	all := genData(11, n+nq, dim, 50)
	d, queries := all[:n], all[n:]
	g := build(d, Config{Seed: 2})
	deleted := make([]bool, n)
	live := func(id uint32) bool { return !deleted[id] }

	// 20% at random, the entry point first.
	r := rand.New(rand.NewPCG(4, 4))
	order := r.Perm(n)
	first := g.entry
	g.Delete(first, d.sim)
	deleted[first] = true
	for _, i := range order[:n/5] {
		g.Delete(uint32(i), d.sim)
		deleted[i] = true
	}
	checkInvariants(t, g)
	if g.Has(first) || g.entry == first {
		t.Fatal("deleted entry point still in the graph")
	}
	liveN := 0
	for _, x := range deleted {
		if !x {
			liveN++
		}
	}
	if g.Len() != liveN {
		t.Fatalf("Len = %d, want %d", g.Len(), liveN)
	}
	rec := recall(g, d, queries, 10, 0, live)
	t.Logf("n=%d dim=%d after deleting 20%%: recall@10=%.4f, %d of %d reachable", n, dim, rec, reachable(g), g.Len())
	if rec < 0.95 {
		t.Errorf("recall after deletes = %.4f, want >= 0.95", rec)
	}
	for _, q := range queries {
		for _, nb := range g.Search(d.query(q), 50, 0) {
			if deleted[nb.ID] {
				t.Fatalf("deleted id %d returned", nb.ID)
			}
		}
	}

	// Everything, then the graph is empty and usable again.
	for i := range n {
		g.Delete(uint32(i), d.sim)
	}
	checkInvariants(t, g)
	if g.Len() != 0 {
		t.Fatalf("Len after deleting all = %d", g.Len())
	}
	if got := g.Search(d.query(queries[0]), 10, 0); len(got) != 0 {
		t.Fatalf("search on emptied graph returned %v", got)
	}
	for i := range 100 {
		if err := g.Add(uint32(i), d.sim); err != nil {
			t.Fatalf("re-Add %d: %v", i, err)
		}
	}
	checkInvariants(t, g)
	if got := g.Search(d.query(d[7]), 1, 0); len(got) != 1 || got[0].ID != 7 {
		t.Fatalf("after re-adding: %v", got)
	}
}

// TestDeleteEntryPoint deletes the entry point again and again; the graph
// must keep a valid entry and every node reachable.
func TestDeleteEntryPoint(t *testing.T) {
	d := genData(12, 400, 16, 8)
	g := build(d, Config{Seed: 6})
	for g.Len() > 0 {
		old := g.entry
		g.Delete(old, d.sim)
		if g.Has(old) {
			t.Fatalf("entry %d not deleted", old)
		}
		checkInvariants(t, g)
		if got := reachable(g); got != g.Len() {
			t.Fatalf("after deleting entry %d: %d of %d nodes reachable", old, got, g.Len())
		}
	}
}
