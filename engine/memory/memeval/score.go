package memeval

import (
	"path"
	"strings"
)

// Passage is a retrieved passage as the memory search returns it: a slash
// path relative to the notes directory and an inclusive 1-based line range.
type Passage struct {
	Path               string
	StartLine, EndLine int
}

// Contains reports whether the passage covers loc.
func (p Passage) Contains(l Loc) bool {
	return cleanPath(p.Path) == cleanPath(l.Path) && p.StartLine <= l.Line && l.Line <= p.EndLine
}

func cleanPath(p string) string {
	p = path.Clean(strings.ReplaceAll(p, `\`, "/"))
	return strings.TrimPrefix(p, "./")
}

// Scored keeps the questions retrieval is scored on: not category 5
// (adversarial) and with at least one evidence id.
func Scored(qs []Question) []Question {
	var out []Question
	for _, q := range qs {
		if q.Category == Adversarial || len(q.Evidence) == 0 {
			continue
		}
		out = append(out, q)
	}
	return out
}

// QuestionScore is one question's result.
type QuestionScore struct {
	Category int
	// Evidence is the number of evidence turns counted (those with a
	// location); Missing the evidence ids with none, left out.
	Evidence int
	Missing  []string
	// FoundAt is, per counted evidence turn in the question's order, the
	// 1-based rank of the first passage that covers it, or 0.
	FoundAt []int
	// FirstRank is the rank of the first passage that covers any evidence
	// turn, or 0.
	FirstRank int
}

// Recall is the share of evidence turns found in the top k (0 when there
// is no counted evidence).
func (s QuestionScore) Recall(k int) float64 {
	if s.Evidence == 0 {
		return 0
	}
	n := 0
	for _, r := range s.FoundAt {
		if r > 0 && r <= k {
			n++
		}
	}
	return float64(n) / float64(s.Evidence)
}

// Hit reports whether any evidence turn is found in the top k.
func (s QuestionScore) Hit(k int) bool { return s.FirstRank > 0 && s.FirstRank <= k }

// RR is the reciprocal rank of the first passage covering any evidence.
func (s QuestionScore) RR() float64 {
	if s.FirstRank == 0 {
		return 0
	}
	return 1 / float64(s.FirstRank)
}

// Evaluate scores one question against the ranked passages, best first.
// locs maps dia ids to where the turns landed ([WriteNotes]).
func Evaluate(locs map[string]Loc, q Question, ranked []Passage) QuestionScore {
	s := QuestionScore{Category: q.Category}
	var want []Loc
	for _, id := range q.Evidence {
		l, ok := locs[id]
		if !ok {
			s.Missing = append(s.Missing, id)
			continue
		}
		want = append(want, l)
	}
	s.Evidence = len(want)
	s.FoundAt = make([]int, len(want))
	for r, p := range ranked {
		for i, l := range want {
			if s.FoundAt[i] == 0 && p.Contains(l) {
				s.FoundAt[i] = r + 1
				if s.FirstRank == 0 {
					s.FirstRank = r + 1
				}
			}
		}
	}
	return s
}

// Metrics are averages over questions (each question weighs the same).
type Metrics struct {
	N                                    int
	Recall1, Recall5, Recall10, Recall20 float64
	Hit5, MRR                            float64
	// Skipped counts scores added with no counted evidence (not in N).
	Skipped int
	// ByCategory holds the same per category; its entries have no
	// ByCategory of their own.
	ByCategory map[int]Metrics
}

type sums struct {
	n, skipped                  int
	r1, r5, r10, r20, hit5, mrr float64
}

func (s *sums) add(q QuestionScore) {
	if q.Evidence == 0 {
		s.skipped++
		return
	}
	s.n++
	s.r1 += q.Recall(1)
	s.r5 += q.Recall(5)
	s.r10 += q.Recall(10)
	s.r20 += q.Recall(20)
	if q.Hit(5) {
		s.hit5++
	}
	s.mrr += q.RR()
}

func (s sums) metrics() Metrics {
	m := Metrics{N: s.n, Skipped: s.skipped}
	if s.n == 0 {
		return m
	}
	n := float64(s.n)
	m.Recall1, m.Recall5, m.Recall10, m.Recall20 = s.r1/n, s.r5/n, s.r10/n, s.r20/n
	m.Hit5, m.MRR = s.hit5/n, s.mrr/n
	return m
}

// Accumulator sums question scores into Metrics, overall and per category.
// The zero value is ready to use.
type Accumulator struct {
	all   sums
	byCat map[int]*sums
}

// Add counts one question. A score with no counted evidence is counted as
// skipped, not in N.
func (a *Accumulator) Add(s QuestionScore) {
	a.all.add(s)
	if a.byCat == nil {
		a.byCat = map[int]*sums{}
	}
	c := a.byCat[s.Category]
	if c == nil {
		c = &sums{}
		a.byCat[s.Category] = c
	}
	c.add(s)
}

// Metrics is the average so far.
func (a *Accumulator) Metrics() Metrics {
	m := a.all.metrics()
	m.ByCategory = map[int]Metrics{}
	for c, s := range a.byCat {
		m.ByCategory[c] = s.metrics()
	}
	return m
}
