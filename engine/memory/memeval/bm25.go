package memeval

import (
	"math"
	"sort"
	"strings"
)

// StopWords is the floor's tiny stop list: articles, auxiliaries,
// prepositions, pronouns and question words.
var StopWords = stopSet(`a an the is are was were be been being of to in on at and or for with
from by as about what when who where which how did do does have has had that this would will
there any some s t i me my we us our you your he his she her it they them their`)

func stopSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// Tokenize lowercases s and returns its runs of ASCII letters and digits
// that are not stop words.
func Tokenize(s string) []string {
	var out []string
	s = strings.ToLower(s)
	start := -1
	flush := func(end int) {
		if start >= 0 {
			if w := s[start:end]; !StopWords[w] {
				out = append(out, w)
			}
			start = -1
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
	}
	flush(len(s))
	return out
}

// BM25 is plain Okapi BM25 over a fixed list of documents (k1 1.2, b 0.75,
// idf ln(1 + (N - df + 0.5)/(df + 0.5)), [Tokenize]d text): the floor
// every method has to beat, at whatever granularity the documents are cut.
type BM25 struct {
	K1, B float64
	tf    []map[string]int
	lens  []float64
	avg   float64
	df    map[string]int
}

// NewBM25 indexes docs; a document is known by its index.
func NewBM25(docs []string) *BM25 {
	b := &BM25{K1: 1.2, B: 0.75, df: map[string]int{}}
	total := 0.0
	for _, d := range docs {
		toks := Tokenize(d)
		tf := map[string]int{}
		for _, t := range toks {
			if tf[t] == 0 {
				b.df[t]++
			}
			tf[t]++
		}
		b.tf = append(b.tf, tf)
		b.lens = append(b.lens, float64(len(toks)))
		total += float64(len(toks))
	}
	if len(docs) > 0 {
		b.avg = total / float64(len(docs))
	}
	return b
}

// Rank returns the indices of the documents that match any query term,
// best first; equal scores keep document order.
func (b *BM25) Rank(query string) []int {
	n := float64(len(b.tf))
	scores := make([]float64, len(b.tf))
	var hit []int
	for _, w := range Tokenize(query) {
		df := b.df[w]
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
		for i, tf := range b.tf {
			f := float64(tf[w])
			if f == 0 {
				continue
			}
			if scores[i] == 0 {
				hit = append(hit, i)
			}
			norm := 1 - b.B + b.B*b.lens[i]/b.avg
			scores[i] += idf * f * (b.K1 + 1) / (f + b.K1*norm)
		}
	}
	sort.SliceStable(hit, func(x, y int) bool {
		if scores[hit[x]] != scores[hit[y]] {
			return scores[hit[x]] > scores[hit[y]]
		}
		return hit[x] < hit[y]
	})
	return hit
}

// TurnPassages returns, for each turn of a rendered sample in note order,
// its note line and its one-line passage: the per-turn documents of the
// floor.
func TurnPassages(notes []Note) (texts []string, passages []Passage) {
	for _, n := range notes {
		for i, l := range n.Lines {
			if strings.HasPrefix(l, "- [") {
				texts = append(texts, l)
				passages = append(passages, Passage{Path: n.Path, StartLine: i + 1, EndLine: i + 1})
			}
		}
	}
	return texts, passages
}

// FloorBM25 is the README's per-turn floor: for each sample, plain BM25 over
// one document per turn (its note line), each scored question searched
// within its own conversation and counted by [Evaluate].
func FloorBM25(samples []Sample) Metrics {
	var acc Accumulator
	for _, s := range samples {
		notes, locs := Render(s)
		texts, passages := TurnPassages(notes)
		idx := NewBM25(texts)
		for _, q := range Scored(s.Questions) {
			order := idx.Rank(q.Text)
			ranked := make([]Passage, len(order))
			for i, d := range order {
				ranked[i] = passages[d]
			}
			acc.Add(Evaluate(locs, q, ranked))
		}
	}
	return acc.Metrics()
}
