package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// Search defaults (OpenClaw's).
const (
	DefaultMaxResults          = 6
	DefaultMinScore            = 0.35
	DefaultCandidateMultiplier = 4
	DefaultVectorWeight        = 0.7
	DefaultTextWeight          = 0.3
	DefaultRRFK                = 60
	DefaultMMRLambda           = 0.7
	DefaultHalfLifeDays        = 30
	// SnippetChars bounds a result's text (docs/design.md §6).
	SnippetChars = 700
	// maxQueryBytes bounds what is embedded and searched for.
	maxQueryBytes = 4096
)

// Fusion names how keyword and vector ranks are merged.
const (
	FusionWeighted = "weighted" // normalized scores, vectorWeight·v + textWeight·t (the default)
	FusionRRF      = "rrf"      // reciprocal-rank fusion, Σ 1/(k + rank)
)

// Mode restricts a search to one side (the evaluation compares them).
const (
	ModeHybrid = ""
	ModeText   = "bm25"
	ModeVector = "vector"
)

// QueryConfig is memorySearch.query resolved.
type QueryConfig struct {
	MaxResults          int
	MinScore            float64 // negative: no floor
	Hybrid              bool    // false: vectors only when there are vectors, else keywords
	VectorWeight        float64
	TextWeight          float64
	CandidateMultiplier int
	Fusion              string
	RRFK                int
	MMR                 bool
	MMRLambda           float64
	TemporalDecay       bool
	HalfLifeDays        float64
}

// DefaultQuery is the configuration with OpenClaw's defaults.
func DefaultQuery() QueryConfig {
	q := QueryConfig{Hybrid: true, MinScore: DefaultMinScore}
	q.defaults()
	return q
}

func (q *QueryConfig) defaults() {
	if q.MaxResults <= 0 {
		q.MaxResults = DefaultMaxResults
	}
	if q.CandidateMultiplier <= 0 {
		q.CandidateMultiplier = DefaultCandidateMultiplier
	}
	if q.VectorWeight < 0 || q.TextWeight < 0 || q.VectorWeight+q.TextWeight == 0 {
		q.VectorWeight, q.TextWeight = DefaultVectorWeight, DefaultTextWeight
	}
	sum := q.VectorWeight + q.TextWeight // weights behave as shares
	q.VectorWeight, q.TextWeight = q.VectorWeight/sum, q.TextWeight/sum
	if q.Fusion == "" {
		q.Fusion = FusionWeighted
	}
	if q.RRFK <= 0 {
		q.RRFK = DefaultRRFK
	}
	if q.MMRLambda <= 0 || q.MMRLambda > 1 {
		q.MMRLambda = DefaultMMRLambda
	}
	if q.HalfLifeDays <= 0 {
		q.HalfLifeDays = DefaultHalfLifeDays
	}
}

// Options are one search's settings; zero values take the index's
// configuration.
type Options struct {
	MaxResults int
	MinScore   *float64
	Mode       string // ModeHybrid, ModeText, ModeVector
	Fusion     string // overrides the configured fusion
	// NoSync searches what is indexed without syncing first.
	NoSync bool
}

// Result is one memory_search result (the same fields the tool and
// `openclaw memory search --json` return).
type Result struct {
	Path      string  `json:"path"`
	StartLine int     `json:"startLine"`
	EndLine   int     `json:"endLine"`
	Score     float64 `json:"score"`
	Snippet   string  `json:"snippet"`
	Source    string  `json:"source"` // "memory"
}

// Response is a search's results and how they were found.
type Response struct {
	Results  []Result `json:"results"`
	Mode     string   `json:"mode"` // hybrid | bm25 | vector | none
	Provider string   `json:"provider,omitempty"`
	Model    string   `json:"model,omitempty"`
	Fallback bool     `json:"fallback"`
	// Warning says why a side was missing (no embedding model, a provider
	// down): the search still answered with the other.
	Warning string `json:"warning,omitempty"`
}

type cand struct {
	ref       *chunkRef
	text, vec float64 // raw scores
	tRank     int     // 1-based rank on each side; 0: absent
	vRank     int
	score     float64
	side      float64 // the best of the normalized sides alone
	snippet   string
}

// Search finds the chunks that best match query. It syncs first when the
// index is dirty (unless another sync is running: then it answers from
// what is indexed now). A missing side (no embeddings, no keyword index)
// leaves the other; it fails only on a cancelled context or when neither
// side exists.
func (ix *Index) Search(ctx context.Context, query string, opt Options) (*Response, error) {
	ix.acquire() // a released index is read back from disk first
	defer ix.done()
	query = strings.TrimSpace(query)
	if len(query) > maxQueryBytes {
		query = query[:maxQueryBytes]
		for !utf8.ValidString(query) {
			query = query[:len(query)-1]
		}
	}
	// Without a watcher (none started, or it failed) every search checks
	// the files: a walk and a stat each when nothing changed.
	// A deleted index directory is noticed here too (one stat): it is
	// rebuilt from the files rather than served from unlinked files.
	if !opt.NoSync && !ix.cfg.NoSyncOnSearch && (ix.dirty.Load() || !ix.watching.Load() || ix.dirGone()) && ix.syncMu.TryLock() {
		ix.syncMu.Unlock() // Sync takes it again; another caller may win the race, which is fine
		if _, err := ix.Sync(ctx, false, nil); err != nil && ctx.Err() == nil {
			ix.log.Warn("memory index: sync before search failed; searching what is indexed", "err", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q := ix.cfg.Query
	if opt.MaxResults > 0 {
		q.MaxResults = min(opt.MaxResults, 50)
	}
	if opt.MinScore != nil {
		q.MinScore = *opt.MinScore
	}
	if opt.Fusion != "" {
		q.Fusion = opt.Fusion
	}
	resp := &Response{Results: []Result{}}
	if query == "" {
		resp.Mode = "none"
		return resp, nil
	}
	nCand := q.MaxResults * q.CandidateMultiplier

	ix.mu.RLock()
	text, vec, graph := ix.text, ix.vec, ix.graph
	provider := ix.activeProvider()
	fallback, textBroken := ix.meta.Fallback, ix.textBroken
	vecN := 0
	if vec != nil {
		vecN = vec.n
	}
	ix.mu.RUnlock()

	useText := text != nil && opt.Mode != ModeVector
	useVec := vecN > 0 && provider != nil && opt.Mode != ModeText
	if useText && useVec && !q.Hybrid && opt.Mode == ModeHybrid {
		useText = false
	}
	var warns []string
	if opt.Mode != ModeText && !useVec {
		switch {
		case len(ix.cfg.Providers) == 0:
			if opt.Mode == ModeVector {
				warns = append(warns, "no embedding model is configured")
			}
		case provider == nil || vec == nil:
			warns = append(warns, "no vectors yet: the embedding model has not indexed these notes")
		}
	}
	cands := map[string]*cand{}
	get := func(r *chunkRef) *cand {
		c := cands[r.ID]
		if c == nil {
			c = &cand{ref: r}
			cands[r.ID] = c
		}
		return c
	}
	if useText {
		hits, err := text.Search(ctx, query, nCand)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			warns = append(warns, "keyword search failed: "+err.Error())
			useText = false
		}
		ix.mu.RLock()
		for i, h := range hits {
			if r := ix.byID[h.ID]; r != nil {
				c := get(r)
				c.text, c.tRank = h.Score, i+1
			}
		}
		ix.mu.RUnlock()
	}
	if useVec {
		qv, err := provider.Embedder.Embed(ctx, []string{provider.QueryPrefix + query})
		if err == nil && (len(qv) != 1 || len(qv[0]) != vec.dim || !normalize(qv[0])) {
			err = fmt.Errorf("%s/%s returned an unusable query vector", provider.Name, provider.Model)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			warns = append(warns, "query embedding failed, keyword search only: "+err.Error())
			useVec = false
		} else {
			ix.vectorCandidates(qv[0], vec, graph, nCand, provider, func(r *chunkRef, s float64, rank int) {
				c := get(r)
				c.vec, c.vRank = s, rank
			})
		}
	}
	switch {
	case useText && useVec:
		resp.Mode = "hybrid"
	case useText:
		resp.Mode = ModeText
	case useVec:
		resp.Mode = ModeVector
	default:
		resp.Mode = "none"
		if text == nil && textBroken != "" {
			warns = append(warns, "no keyword index: "+textBroken)
		}
	}
	if provider != nil && useVec {
		resp.Provider, resp.Model, resp.Fallback = provider.Name, provider.Model, fallback
	}
	resp.Warning = strings.Join(warns, "; ")

	list := make([]*cand, 0, len(cands))
	for _, c := range cands {
		list = append(list, c)
	}
	fuse(list, q, useText, useVec)
	if q.TemporalDecay {
		decay(list, q.HalfLifeDays, ix.cfg.Now())
	}
	slices.SortFunc(list, func(a, b *cand) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ref.ID, b.ref.ID)
	})
	if q.MinScore > 0 {
		// The floor applies to the better of the fused score and each side
		// alone: an exact keyword hit the vectors missed (an id, a code)
		// would otherwise never pass 0.35 with textWeight 0.3.
		list = slices.DeleteFunc(list, func(c *cand) bool { return max(c.score, c.side) < q.MinScore })
	}
	snippet := func(c *cand) string {
		if c.snippet == "" {
			c.snippet = ix.snippet(c.ref)
		}
		return c.snippet
	}
	if q.MMR && len(list) > 1 {
		list = mmr(list, q.MaxResults, q.MMRLambda, snippet)
	}
	seen := map[[3]any]bool{} // pieces of one long line share its range and snippet
	for _, c := range list {
		if len(resp.Results) == q.MaxResults {
			break
		}
		k := [3]any{c.ref.Path, c.ref.StartLine, c.ref.EndLine}
		if seen[k] {
			continue
		}
		seen[k] = true
		resp.Results = append(resp.Results, Result{
			Path: c.ref.Path, StartLine: c.ref.StartLine, EndLine: c.ref.EndLine,
			Score: math.Round(c.score*1e4) / 1e4, Snippet: snippet(c), Source: "memory",
		})
	}
	if resp.Mode == "none" && len(ix.cfg.Providers) == 0 && text == nil {
		return resp, errors.New("memory search has no index: " + textBroken)
	}
	return resp, nil
}

// activeProvider is the provider whose vectors are stored (mu held).
func (ix *Index) activeProvider() *Provider {
	if ix.meta.VectorFingerprint == "" {
		return nil
	}
	for i := range ix.cfg.Providers {
		if ix.cfg.Providers[i].fingerprint() == ix.meta.VectorFingerprint {
			return &ix.cfg.Providers[i]
		}
	}
	return nil
}

// vectorCandidates finds the n nearest chunks: exact int8 scan, or the
// graph above the threshold; then the candidates are re-ranked with the
// exact float32 vectors from the cache.
func (ix *Index) vectorCandidates(qv []float32, vec *vectors, graph Graph, n int, p *Provider, emit func(*chunkRef, float64, int)) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.vec != vec {
		return // swapped by a sync meanwhile
	}
	qq := vec.quantizeQuery(qv)
	var top []scored
	if graph != nil && ix.graph == graph {
		ef := 0
		if ix.cfg.Graph != nil {
			ef = ix.cfg.Graph.Ef
		}
		for _, nb := range graph.Search(func(id uint32) float32 { return vec.simQuery(qq, id) }, n, max(ef, n)) {
			top = append(top, scored{nb.ID, nb.Score})
		}
	} else {
		top = vec.scan(qq, n)
	}
	if ix.cfg.Cache != nil && len(top) > 0 {
		hashes := make([]string, 0, len(top))
		for _, s := range top {
			if r := ix.bySlot[s.id]; r != nil {
				hashes = append(hashes, r.Hash)
			}
		}
		if exact, err := ix.cfg.Cache.Get(p.Name, p.fingerprint(), hashes); err == nil {
			for i, s := range top {
				if r := ix.bySlot[s.id]; r != nil {
					if v := exact[r.Hash]; len(v) == len(qv) {
						top[i].score = dotF32(qv, v)
					}
				}
			}
			sortScored(top)
		}
	}
	for i, s := range top {
		if r := ix.bySlot[s.id]; r != nil {
			emit(r, float64(s.score), i+1)
		}
	}
}

// fuse computes each candidate's score. Weighted: BM25 divided by the best
// BM25 of the candidates (0..1), cosine clamped to 0..1, then the weighted
// sum — with one side missing, that side's score alone. RRF: Σ 1/(k+rank)
// over the sides, divided by its best possible value so it is 0..1 too.
func fuse(list []*cand, q QueryConfig, useText, useVec bool) {
	maxText := 0.0
	for _, c := range list {
		maxText = math.Max(maxText, c.text)
	}
	for _, c := range list {
		t := 0.0
		if maxText > 0 {
			t = c.text / maxText
		}
		v := math.Max(0, math.Min(1, c.vec))
		c.side = 0
		if useText {
			c.side = t
		}
		if useVec {
			c.side = math.Max(c.side, v)
		}
		switch {
		case useText && useVec && q.Fusion == FusionRRF:
			s := 0.0
			if c.tRank > 0 {
				s += 1 / float64(q.RRFK+c.tRank)
			}
			if c.vRank > 0 {
				s += 1 / float64(q.RRFK+c.vRank)
			}
			c.score = s / (2 / float64(q.RRFK+1))
		case useText && useVec:
			c.score = q.VectorWeight*v + q.TextWeight*t
		case useVec:
			c.score = v
		default:
			c.score = t
		}
	}
}

var datedNote = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:^|/)(\d{4}-\d{2}-\d{2})[^/]*\.md$`) })

// decay multiplies dated notes' scores by 0.5^(age/halfLife); MEMORY.md
// and undated files are evergreen.
func decay(list []*cand, halfLife float64, now time.Time) {
	for _, c := range list {
		m := datedNote().FindStringSubmatch(c.ref.Path)
		if m == nil || path.Base(c.ref.Path) == "MEMORY.md" {
			continue
		}
		d, err := time.Parse("2006-01-02", m[1])
		if err != nil {
			continue
		}
		age := now.Sub(d).Hours() / 24
		if age > 0 {
			c.score *= math.Pow(0.5, age/halfLife)
		}
	}
}

// mmr re-ranks for diversity (maximal marginal relevance): each pick
// maximizes λ·score − (1−λ)·(largest similarity to what is picked), with
// similarity the Jaccard overlap of the snippets' words.
func mmr(list []*cand, k int, lambda float64, snippet func(*cand) string) []*cand {
	words := make([]map[string]bool, len(list))
	for i, c := range list {
		words[i] = wordSet(snippet(c))
	}
	picked := []int{}
	used := make([]bool, len(list))
	for len(picked) < min(k, len(list)) {
		best, bestVal := -1, math.Inf(-1)
		for i := range list {
			if used[i] {
				continue
			}
			sim := 0.0
			for _, j := range picked {
				sim = math.Max(sim, jaccard(words[i], words[j]))
			}
			if v := lambda*list[i].score - (1-lambda)*sim; v > bestVal {
				best, bestVal = i, v
			}
		}
		used[best] = true
		picked = append(picked, best)
	}
	out := make([]*cand, 0, len(list))
	for _, i := range picked {
		out = append(out, list[i])
	}
	for i, c := range list {
		if !used[i] {
			out = append(out, c)
		}
	}
	return out
}

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		m[w] = true
	}
	return m
}

func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	n := 0
	for w := range a {
		if b[w] {
			n++
		}
	}
	return float64(n) / float64(len(a)+len(b)-n)
}

// snippet is the chunk's current text, at most SnippetChars characters,
// read up to its last line only (never through a link; unreadable: none).
func (ix *Index) snippet(r *chunkRef) string {
	t, _ := ix.readLines(r.Path, r.StartLine, r.EndLine, 4*SnippetChars)
	return Truncate(strings.TrimSpace(t), SnippetChars)
}

// Truncate cuts s to at most n characters, on a rune boundary, marking the
// cut with "…".
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
