package hnsw

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// Defaults for the zero fields of Config.
const (
	DefaultM              = 16
	DefaultEfConstruction = 200
	DefaultEfSearch       = 64
)

// MaxID is the largest node id the graph accepts. The graph keeps one slot
// per id up to the largest one used, so ids must stay dense; the bound also
// caps what a corrupt file can make Read allocate.
const MaxID = 1<<24 - 1

// maxLevel clamps the generated level. With M >= 2 a level above it has a
// probability below 2^-31; the clamp keeps per-node storage bounded and gives
// Read a limit to check.
const maxLevel = 31

// Config holds the graph's parameters. Zero fields get the defaults.
type Config struct {
	// M is the maximum number of neighbours a node keeps on each layer above
	// 0; layer 0 keeps 2*M.
	M int
	// EfConstruction is the candidate list size used while inserting.
	EfConstruction int
	// EfSearch is the candidate list size Search uses when given ef <= 0.
	EfSearch int
	// Seed seeds the level generator: the same seed and insertion order give
	// the same graph.
	Seed uint64
}

// Sim returns the similarity (higher = closer) between two stored nodes. It
// must be symmetric.
type Sim func(a, b uint32) float32

// Neighbor is one search result.
type Neighbor struct {
	ID    uint32
	Score float32
}

// ErrExists is returned by Add for an id already in the graph.
var ErrExists = errors.New("hnsw: id already in the graph")

// Graph is an HNSW graph over caller-owned node ids. It stores adjacency
// only; similarities come from the caller.
//
// Search may run concurrently with other Search calls; Add and Delete need
// exclusive access (the caller holds a sync.RWMutex: RLock for Search, Lock
// for Add, Delete and Read/WriteTo of the same graph).
type Graph struct {
	cfg Config
	ml  float64 // level multiplier 1/ln(M)
	pcg *rand.PCG
	rng *rand.Rand

	// nodes[id][layer] is id's neighbour list on that layer; nodes[id] == nil
	// means id is not in the graph. A node of level L has L+1 lists (a list
	// may be empty). Lists on layer l only name nodes of level >= l.
	nodes [][][]uint32
	count int
	entry uint32
	top   int // level of entry, -1 when empty

	scratch sync.Pool // *scratch, reused so a search does not allocate a visited set
}

// New returns an empty graph.
func New(cfg Config) *Graph {
	if cfg.M <= 0 {
		cfg.M = DefaultM
	}
	if cfg.M < 2 {
		cfg.M = 2 // 1/ln(1) is infinite
	}
	if cfg.EfConstruction <= 0 {
		cfg.EfConstruction = DefaultEfConstruction
	}
	if cfg.EfSearch <= 0 {
		cfg.EfSearch = DefaultEfSearch
	}
	pcg := rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)
	return &Graph{
		cfg: cfg,
		ml:  1 / math.Log(float64(cfg.M)),
		pcg: pcg,
		rng: rand.New(pcg),
		top: -1,
	}
}

// Config returns the graph's configuration with defaults applied.
func (g *Graph) Config() Config { return g.cfg }

// Len is the number of nodes in the graph.
func (g *Graph) Len() int { return g.count }

// Has reports whether id is in the graph.
func (g *Graph) Has(id uint32) bool {
	return int(id) < len(g.nodes) && g.nodes[id] != nil
}

func (g *Graph) maxLinks(layer int) int {
	if layer == 0 {
		return 2 * g.cfg.M
	}
	return g.cfg.M
}

func (g *Graph) randomLevel() int {
	// 1-Float64 is in (0, 1], so the log is finite.
	l := int(math.Floor(-math.Log(1-g.rng.Float64()) * g.ml))
	return min(l, maxLevel)
}

// Add inserts id. sim must already know id. Adding an id that is in the
// graph returns ErrExists.
func (g *Graph) Add(id uint32, sim Sim) error {
	if id > MaxID {
		return fmt.Errorf("hnsw: id %d above MaxID %d", id, MaxID)
	}
	if g.Has(id) {
		return fmt.Errorf("%w: %d", ErrExists, id)
	}
	if int(id) >= len(g.nodes) {
		g.nodes = append(g.nodes, make([][][]uint32, int(id)+1-len(g.nodes))...)
	}
	level := g.randomLevel()
	links := make([][]uint32, level+1)
	g.nodes[id] = links
	g.count++
	if g.count == 1 {
		g.entry, g.top = id, level
		return nil
	}

	q := func(x uint32) float32 { return sim(id, x) }
	ep := Neighbor{g.entry, q(g.entry)}
	for l := g.top; l > level; l-- {
		ep = g.greedy(q, ep, l)
	}
	s := g.getScratch()
	defer g.scratch.Put(s)
	eps := []Neighbor{ep}
	for l := min(level, g.top); l >= 0; l-- {
		w := g.searchLayer(q, eps, g.cfg.EfConstruction, l, s, id)
		// The paper gives a new node M links on every layer; layer 0 may
		// grow to 2M later through back-links.
		// s.picked, not s.sel: link below reuses s.sel.
		sel := selectHeuristic(w, g.cfg.M, sim, s.picked[:0])
		s.picked = sel
		own := make([]uint32, len(sel), min(len(sel)+len(sel)/2+1, g.maxLinks(l)))
		for i, n := range sel {
			own[i] = n.ID
		}
		links[l] = own
		for _, n := range sel {
			g.link(n.ID, id, n.Score, l, sim, s)
		}
		eps = w
	}
	if level > g.top {
		g.entry, g.top = id, level
	}
	return nil
}

// link adds a back-link from n to id on layer l, pruning n's list with the
// heuristic when it is full.
func (g *Graph) link(n, id uint32, score float32, l int, sim Sim, s *scratch) {
	lst := g.nodes[n][l]
	mmax := g.maxLinks(l)
	if len(lst) < mmax {
		if len(lst) == cap(lst) {
			// Grow by hand: append's doubling would overshoot mmax.
			grown := make([]uint32, len(lst), min(max(2*cap(lst), 4), mmax))
			copy(grown, lst)
			lst = grown
		}
		g.nodes[n][l] = append(lst, id)
		return
	}
	c := s.cands[:0]
	for _, x := range lst {
		c = append(c, Neighbor{x, sim(n, x)})
	}
	c = append(c, Neighbor{id, score})
	sortBest(c)
	sel := selectHeuristic(c, mmax, sim, s.sel[:0])
	lst = lst[:len(sel)]
	for i, x := range sel {
		lst[i] = x.ID
	}
	g.nodes[n][l] = lst
	s.cands, s.sel = c, sel
}

// selectHeuristic is algorithm 4 of Malkov & Yashunin without the
// extendCandidates and keepPrunedConnections options: a candidate is kept
// only if it is closer to the base than to every neighbour kept so far. On
// clustered data this keeps links that leave the cluster, which "keep the
// closest M" drops — the reason that variant reaches so few neighbours.
// cands must be sorted best first.
func selectHeuristic(cands []Neighbor, m int, sim Sim, out []Neighbor) []Neighbor {
	for _, c := range cands {
		if len(out) >= m {
			break
		}
		keep := true
		for _, r := range out {
			if sim(c.ID, r.ID) > c.Score {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, c)
		}
	}
	return out
}

func sortBest(c []Neighbor) {
	slices.SortFunc(c, func(a, b Neighbor) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return int(a.ID) - int(b.ID)
	})
}

// greedy walks layer l from ep to a local best for q.
func (g *Graph) greedy(q func(uint32) float32, ep Neighbor, l int) Neighbor {
	for changed := true; changed; {
		changed = false
		for _, x := range g.nodes[ep.ID][l] {
			if s := q(x); s > ep.Score {
				ep, changed = Neighbor{x, s}, true
			}
		}
	}
	return ep
}

// scratch is per-search working memory. marks is a visited set stamped with
// gen, so starting a search costs an increment, not a clear.
type scratch struct {
	marks  []uint32
	gen    uint32
	cand   maxHeap
	res    minHeap
	cands  []Neighbor
	sel    []Neighbor
	picked []Neighbor
}

func (g *Graph) getScratch() *scratch {
	s, _ := g.scratch.Get().(*scratch)
	if s == nil {
		s = &scratch{}
	}
	if len(s.marks) < len(g.nodes) {
		s.marks = make([]uint32, len(g.nodes)+len(g.nodes)/8)
		s.gen = 0
	}
	return s
}

func (s *scratch) reset() {
	s.gen++
	if s.gen == 0 {
		clear(s.marks)
		s.gen = 1
	}
}

// visit marks x and reports whether it was already marked.
func (s *scratch) visit(x uint32) bool {
	if s.marks[x] == s.gen {
		return true
	}
	s.marks[x] = s.gen
	return false
}

// searchLayer is algorithm 2 of the paper: the ef best nodes for q reachable
// on layer l from eps, best first. skip (the node being inserted) is never
// returned.
func (g *Graph) searchLayer(q func(uint32) float32, eps []Neighbor, ef, l int, s *scratch, skip uint32) []Neighbor {
	s.reset()
	if int(skip) < len(s.marks) {
		s.marks[skip] = s.gen
	}
	cand, res := s.cand[:0], s.res[:0]
	for _, e := range eps {
		if s.visit(e.ID) {
			continue
		}
		cand.push(e)
		res.push(e)
		if len(res) > ef {
			res.pop()
		}
	}
	for len(cand) > 0 {
		c := cand.pop()
		if len(res) >= ef && c.Score < res[0].Score {
			break
		}
		for _, x := range g.nodes[c.ID][l] {
			if s.visit(x) {
				continue
			}
			sc := q(x)
			if len(res) < ef || sc > res[0].Score {
				cand.push(Neighbor{x, sc})
				res.push(Neighbor{x, sc})
				if len(res) > ef {
					res.pop()
				}
			}
		}
	}
	out := make([]Neighbor, len(res))
	copy(out, res)
	sortBest(out)
	s.cand, s.res = cand, res
	return out
}

// Search returns at most k neighbours of the query, best first. q(id) is the
// query's similarity to node id. The search list holds max(ef, k) candidates;
// ef <= 0 means the config's EfSearch.
func (g *Graph) Search(q func(id uint32) float32, k, ef int) []Neighbor {
	if k <= 0 || g.count == 0 {
		return nil
	}
	if ef <= 0 {
		ef = g.cfg.EfSearch
	}
	ef = max(ef, k)
	ep := Neighbor{g.entry, q(g.entry)}
	for l := g.top; l > 0; l-- {
		ep = g.greedy(q, ep, l)
	}
	s := g.getScratch()
	res := g.searchLayer(q, []Neighbor{ep}, ef, 0, s, math.MaxUint32)
	g.scratch.Put(s)
	if len(res) > k {
		res = slices.Clip(res[:k])
	}
	return res
}

// Delete removes id; an unknown id is a no-op. Every node that linked to id
// is relinked, with the heuristic, among its remaining neighbours and id's
// neighbours, so paths through id survive. Finding those nodes scans the
// graph (no reverse links are stored, to save memory): O(n·M) per Delete.
func (g *Graph) Delete(id uint32, sim Sim) {
	if !g.Has(id) {
		return
	}
	dl := g.nodes[id]
	g.nodes[id] = nil
	g.count--
	if g.count == 0 {
		g.entry, g.top = 0, -1
		return
	}
	s := g.getScratch()
	defer g.scratch.Put(s)
	for u, ul := range g.nodes {
		for l := 0; l < len(ul) && l < len(dl); l++ {
			i := slices.Index(ul[l], id)
			if i < 0 {
				continue
			}
			ul[l] = slices.Delete(ul[l], i, i+1)
			g.repair(uint32(u), l, dl[l], sim, s)
		}
	}
	// A former neighbour of id whose only in-link was id's is now cut off
	// (the relinking above may have preferred others). Give it one back.
	for l, lst := range dl {
		s.reset()
		for _, x := range lst {
			s.marks[x] = s.gen
		}
		for _, ul := range g.nodes {
			if len(ul) > l {
				for _, v := range ul[l] {
					s.marks[v] = s.gen - 1 // has an in-link
				}
			}
		}
		for _, x := range lst {
			if s.marks[x] == s.gen && (x != g.entry || l > 0) {
				g.adopt(x, l, sim)
			}
		}
	}
	if g.entry == id {
		// The new entry is a node of the highest remaining level, preferring
		// a former neighbour of id so searches start in the same region.
		g.entry, g.top = 0, -1
		for l := len(dl) - 1; l >= 0 && g.top < 0; l-- {
			for _, x := range dl[l] {
				if g.Has(x) && len(g.nodes[x])-1 == l {
					g.entry, g.top = x, l
					break
				}
			}
		}
		for x, xl := range g.nodes {
			if len(xl)-1 > g.top {
				g.entry, g.top = uint32(x), len(xl)-1
			}
		}
	}
}

// adopt links x, which nothing links to on layer l, from its most similar
// neighbour there, displacing that node's least similar link if it is full.
func (g *Graph) adopt(x uint32, l int, sim Sim) {
	best, bestS := x, float32(math.Inf(-1))
	for _, y := range g.nodes[x][l] {
		if s := sim(x, y); s > bestS {
			best, bestS = y, s
		}
	}
	if best == x {
		return
	}
	lst := g.nodes[best][l]
	if len(lst) < g.maxLinks(l) {
		g.nodes[best][l] = append(lst, x)
		return
	}
	worst, worstS := 0, float32(math.Inf(1))
	for i, y := range lst {
		if s := sim(best, y); s < worstS {
			worst, worstS = i, s
		}
	}
	lst[worst] = x
}

// repair refills u's list on layer l from its remaining neighbours and extra
// (the deleted node's neighbours there).
func (g *Graph) repair(u uint32, l int, extra []uint32, sim Sim, s *scratch) {
	cur := g.nodes[u][l]
	c := s.cands[:0]
	for _, x := range cur {
		c = append(c, Neighbor{x, sim(u, x)})
	}
	for _, x := range extra {
		if x == u || !g.Has(x) || slices.Contains(cur, x) {
			continue
		}
		c = append(c, Neighbor{x, sim(u, x)})
	}
	sortBest(c)
	sel := selectHeuristic(c, g.maxLinks(l), sim, s.sel[:0])
	// keepPrunedConnections: fill the list with the best of the rest. A
	// repair has only local candidates, and dropping any of them risks
	// cutting a node off.
	for _, x := range c {
		if len(sel) >= g.maxLinks(l) {
			break
		}
		if !slices.Contains(sel, x) {
			sel = append(sel, x)
		}
	}
	if len(sel) > cap(cur) {
		cur = make([]uint32, 0, len(sel))
	}
	cur = cur[:len(sel)]
	for i, x := range sel {
		cur[i] = x.ID
	}
	g.nodes[u][l] = cur
	s.cands, s.sel = c, sel
}

// maxHeap keeps the best candidate on top.
type maxHeap []Neighbor

func (h *maxHeap) push(n Neighbor) {
	*h = append(*h, n)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].Score >= a[i].Score {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *maxHeap) pop() Neighbor {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		b, l, r := i, 2*i+1, 2*i+2
		if l < len(a) && a[l].Score > a[b].Score {
			b = l
		}
		if r < len(a) && a[r].Score > a[b].Score {
			b = r
		}
		if b == i {
			break
		}
		a[i], a[b] = a[b], a[i]
		i = b
	}
	*h = a
	return top
}

// minHeap keeps the worst result on top, so it can be dropped.
type minHeap []Neighbor

func (h *minHeap) push(n Neighbor) {
	*h = append(*h, n)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].Score <= a[i].Score {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *minHeap) pop() Neighbor {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		b, l, r := i, 2*i+1, 2*i+2
		if l < len(a) && a[l].Score < a[b].Score {
			b = l
		}
		if r < len(a) && a[r].Score < a[b].Score {
			b = r
		}
		if b == i {
			break
		}
		a[i], a[b] = a[b], a[i]
		i = b
	}
	*h = a
	return top
}
