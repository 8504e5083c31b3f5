package runner

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func logitsOf(vals ...float32) []float32 { return slices.Clone(vals) }

// TestSamplerRules: each rule of the chain, as llama.cpp's common sampler
// applies it for the parameters the gateway sends.
func TestSamplerRules(t *testing.T) {
	// Greedy: the argmax, after the repeat penalty.
	s := newSampler(40, 0.9, 0.05, 0, 1, 1)
	if got := s.sample(logitsOf(1, 5, 3)); got != 1 {
		t.Fatalf("greedy: %d", got)
	}
	s = newSampler(40, 0.9, 0.05, 0, 2, 1)
	s.accept(1)
	s.accept(1)                                       // counted once
	if got := s.sample(logitsOf(1, 5, 3)); got != 2 { // 5/2 < 3
		t.Fatalf("greedy with penalty: %d", got)
	}
	l := logitsOf(-1, -4)
	s = newSampler(40, 0.9, 0.05, 0, 2, 1)
	s.accept(0)
	if s.sample(l); l[0] != -2 || l[1] != -4 { // a negative logit is multiplied
		t.Fatalf("negative logit penalised to %v", l)
	}

	// top-k 1 is greedy whatever the temperature.
	s = newSampler(1, 1, 0, 5, 1, 7)
	for range 50 {
		if got := s.sample(logitsOf(0, 0.1, 0.2, 0.15)); got != 2 {
			t.Fatalf("top-k 1: %d", got)
		}
	}
	// top-p: p(0)=0.88 ≥ 0.8 keeps only token 0.
	s = newSampler(40, 0.8, 0, 1, 1, 3)
	for range 50 {
		if got := s.sample(logitsOf(4, 2, 0)); got != 0 {
			t.Fatalf("top-p: %d", got)
		}
	}
	// min-p 0.5 drops tokens under half the top probability: e^-1 ≈ 0.37.
	s = newSampler(40, 1, 0.5, 1, 1, 3)
	for range 50 {
		if got := s.sample(logitsOf(1, 0, 1, -3)); got != 0 && got != 2 {
			t.Fatalf("min-p: %d", got)
		}
	}
	// NaN logits are never chosen; all-NaN still returns a token.
	s = newSampler(2, 1, 0, 1, 1, 3)
	for range 50 {
		if got := s.sample(logitsOf(float32(math.NaN()), 1, float32(math.NaN()), 1)); got != 1 && got != 3 {
			t.Fatalf("NaN: %d", got)
		}
	}
	_ = s.sample(logitsOf(float32(math.NaN()), float32(math.NaN())))
	// -Inf everywhere but one.
	inf := float32(math.Inf(-1))
	if got := newSampler(40, 0.9, 0.05, 0.7, 1, 3).sample(logitsOf(inf, inf, 2, inf)); got != 2 {
		t.Fatalf("-Inf: %d", got)
	}
	if got := newSampler(40, 0.9, 0.05, 0.7, 1, 3).sample(logitsOf(inf, inf)); got != 0 && got != 1 {
		t.Fatalf("all -Inf: %d", got)
	}
}

// TestSamplerDistribution: with no truncation, tokens are drawn in
// proportion to softmax(logit/temp); the same seed draws the same tokens.
func TestSamplerDistribution(t *testing.T) {
	logits := []float32{2, 1, 0, -1}
	const temp = 0.8
	var want [4]float64
	var sum float64
	for i, v := range logits {
		want[i] = math.Exp(float64(v) / temp)
		sum += want[i]
	}
	s := newSampler(4, 1, 0, temp, 1, 42)
	const n = 40000
	var got [4]int
	var seq []int
	for i := range n {
		tok := s.sample(slices.Clone(logits))
		got[tok]++
		if i < 20 {
			seq = append(seq, tok)
		}
	}
	for i := range want {
		p := float64(got[i]) / n
		if math.Abs(p-want[i]/sum) > 0.01 {
			t.Errorf("token %d: drawn %.3f, softmax %.3f", i, p, want[i]/sum)
		}
	}
	s2 := newSampler(4, 1, 0, temp, 1, 42)
	for i, tok := range seq {
		if got := s2.sample(slices.Clone(logits)); got != tok {
			t.Fatalf("seed 42, draw %d: %d then %d", i, tok, got)
		}
	}
}

// TestSamplerTopKMatchesSort: the heap's top-k is the k highest logits in
// descending order, for random vocabularies, ties and all.
func TestSamplerTopKMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 1 + r.IntN(3000)
		k := 1 + r.IntN(64)
		logits := make([]float32, n)
		for i := range logits {
			logits[i] = float32(r.IntN(50)) // many ties
		}
		s := newSampler(k, 1, 0, 1, 1, 1)
		got := s.topk(logits)
		sorted := slices.Clone(logits)
		slices.SortFunc(sorted, func(a, b float32) int { return int(b - a) })
		if len(got) != min(k, n) {
			t.Fatalf("trial %d: %d candidates for k=%d n=%d", trial, len(got), k, n)
		}
		for i, c := range got {
			if c.logit != sorted[i] || logits[c.id] != c.logit {
				t.Fatalf("trial %d: candidate %d = %+v, want logit %v", trial, i, c, sorted[i])
			}
		}
	}
}

// TestSamplerNoAllocs: a token costs no allocation, greedy or sampled.
func TestSamplerNoAllocs(t *testing.T) {
	logits := randomLogits(151936)
	for _, temp := range []float32{0, 0.7} {
		s := newSampler(40, 0.9, 0.05, temp, 1.1, 1)
		tok := 0
		if n := testing.AllocsPerRun(50, func() { tok = s.sample(logits); s.accept(tok) }); n != 0 {
			t.Errorf("temp %v: %.1f allocations per token", temp, n)
		}
	}
}

func randomLogits(n int) []float32 {
	r := rand.New(rand.NewPCG(7, 8))
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(r.NormFloat64() * 3)
	}
	return l
}

// BenchmarkSampler: one token on Qwen's 151,936-token vocabulary with the
// gateway's default chain (top-k 40, top-p 0.9, min-p 0.05, temperature
// 0.7, repeat penalty 1.1 over 64 tokens) and greedy.
func BenchmarkSampler(b *testing.B) {
	logits := randomLogits(151936)
	for _, tc := range []struct {
		name string
		temp float32
	}{{"default", 0.7}, {"greedy", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			s := newSampler(40, 0.9, 0.05, tc.temp, 1.1, 1)
			b.ReportAllocs()
			for b.Loop() {
				s.accept(s.sample(logits))
			}
		})
	}
}

// TestSamplerHugeTopK: a request's top-k does not size memory without
// bound, and a top-k beyond the vocabulary keeps every token.
func TestSamplerHugeTopK(t *testing.T) {
	s := newSampler(1<<30, 1, 0, 1, 1, 1)
	if cap(s.heap) > maxTopK {
		t.Fatalf("heap capacity %d", cap(s.heap))
	}
	if got := len(s.topk(logitsOf(1, 2, 3))); got != 3 {
		t.Fatalf("%d candidates from 3 logits", got)
	}
}

// TestSamplerEdges: top-k ≤ 0 is off (every token can be drawn), min-p ≥ 1
// keeps only the likeliest, as in llama.cpp.
func TestSamplerEdges(t *testing.T) {
	s := newSampler(0, 1, 0, 1, 1, 5)
	seen := map[int]bool{}
	for range 2000 {
		seen[s.sample(logitsOf(1, 1, 1, 1, 1))] = true
	}
	if len(seen) != 5 {
		t.Fatalf("top-k 0: drew %d of 5 equal tokens", len(seen))
	}
	s = newSampler(40, 1, 1, 1, 1, 5)
	for range 100 {
		if got := s.sample(logitsOf(1, 3, 2.9)); got != 1 {
			t.Fatalf("min-p 1: %d", got)
		}
	}
}

// TestArgmaxBlocks: the four-at-a-time scans find the highest logit
// wherever it is, with a NaN beside it or not.
func TestArgmaxBlocks(t *testing.T) {
	nan := float32(math.NaN())
	for n := 1; n < 24; n++ {
		for at := range n {
			l := make([]float32, n)
			for i := range l {
				l[i] = -float32(i % 5)
			}
			l[at] = 7
			if at > 0 {
				l[at-1] = nan
			}
			if got := argmax(l); got != at {
				t.Fatalf("n=%d, max at %d: argmax %d", n, at, got)
			}
			if c := newSampler(3, 1, 0, 1, 1, 1).topk(l); c[0].id != at {
				t.Fatalf("n=%d, max at %d: topk first %+v", n, at, c[0])
			}
		}
	}
}
