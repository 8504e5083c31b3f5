package runner

import (
	"math"
	"math/rand/v2"
	"time"
)

// sampler chooses the next token from a model's logits for a completion
// without a grammar. It does in Go, on llama.cpp's own logits buffer, what
// llama.cpp's common sampler chain does for the parameters the gateway
// sends — repeat penalty over the last generated tokens, top-k, top-p,
// min-p, temperature, then a seeded draw — in that order, so top-p and
// min-p see the untempered distribution as they do in llama.cpp. Why not
// llama.cpp's: its chain copies the whole vocabulary into a candidate array
// and partially sorts it for every token, which on a 150k-token vocabulary
// (Qwen's) costs about a third of a small model's decode; here top-k is one
// pass with a k-element heap and nothing is allocated per token. A
// completion with a grammar (tool-call arguments) still uses llama.cpp's
// sampler, which owns the grammar. Edge values follow llama.cpp: top-k ≤ 0
// is off (bounded here by maxTopK), min-p ≥ 1 keeps the likeliest token
// only; top-p 0 is off (the protocol's unset value), where llama.cpp would
// keep one token.
type sampler struct {
	topK    int
	topP    float32
	minP    float32
	temp    float32
	penalty float32 // ≤ 1: off
	rng     *rand.Rand

	recent []int // the last penaltyWindow tokens accepted, oldest first
	heap   []cand
}

type cand struct {
	id    int
	logit float32
	p     float64
}

// penaltyWindow is how many of the last generated tokens the repeat
// penalty looks at (llama.cpp's penalty_last_n as the runner set it).
const penaltyWindow = 64

// maxTopK bounds the heap whatever a request asks (the caller also caps
// it at the vocabulary size): top-k beyond a few hundred changes nothing
// that top-p and min-p do not cut anyway.
const maxTopK = 1 << 16

func newSampler(topK int, topP, minP, temp, penalty float32, seed uint32) *sampler {
	if topK <= 0 {
		topK = maxTopK // llama.cpp: top-k off
	}
	topK = min(topK, maxTopK) // a request's top-k sizes the heap
	s64 := uint64(seed)
	if seed == 0 || seed == math.MaxUint32 {
		s64 = uint64(time.Now().UnixNano())
	}
	return &sampler{
		topK: topK, topP: topP, minP: minP, temp: temp, penalty: penalty,
		rng:    rand.New(rand.NewPCG(s64, s64^0x9e3779b97f4a7c15)),
		recent: make([]int, 0, penaltyWindow),
		heap:   make([]cand, 0, topK),
	}
}

// accept records a generated token for the repeat penalty.
func (s *sampler) accept(tok int) {
	if len(s.recent) == penaltyWindow {
		copy(s.recent, s.recent[1:])
		s.recent = s.recent[:penaltyWindow-1]
	}
	s.recent = append(s.recent, tok)
}

// sample picks a token from logits, which it may change (the repeat
// penalty is applied in place: the buffer is llama.cpp's, rewritten by the
// next decode). It allocates nothing.
func (s *sampler) sample(logits []float32) int {
	if s.penalty > 1 {
		// llama.cpp's rule: a positive logit is divided, a negative one
		// multiplied, once per distinct token in the window.
		for i, t := range s.recent {
			if t < 0 || t >= len(logits) || seenBefore(s.recent[:i], t) {
				continue
			}
			if logits[t] > 0 {
				logits[t] /= s.penalty
			} else {
				logits[t] *= s.penalty
			}
		}
	}
	if s.temp <= 0 {
		return argmax(logits)
	}
	c := s.topk(logits)
	if len(c) == 0 {
		return argmax(logits) // every logit NaN: any token will do
	}
	// Softmax over the candidates, untempered (top-p and min-p see the
	// model's own distribution, as in llama.cpp's chain).
	softmax(c, 1)
	keep := len(c)
	if s.topP > 0 && s.topP < 1 {
		var cum float64
		for i := range c {
			cum += c[i].p
			if cum >= float64(s.topP) {
				keep = i + 1
				break
			}
		}
	}
	if s.minP >= 1 {
		keep = 1 // llama.cpp: only the likeliest passes
	} else if s.minP > 0 {
		floor := c[0].p * float64(s.minP)
		for i := 1; i < keep; i++ {
			if c[i].p < floor {
				keep = i
				break
			}
		}
	}
	c = c[:keep]
	softmax(c, s.temp)
	r := s.rng.Float64()
	for i := range c {
		r -= c[i].p
		if r < 0 {
			return c[i].id
		}
	}
	return c[len(c)-1].id
}

func seenBefore(ts []int, t int) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

func argmax(logits []float32) int {
	best, bi := float32(math.Inf(-1)), 0
	i := 0
	// Four at a time: almost every block holds nothing above the best so
	// far, and four predictable comparisons beat four loop turns (1.75×
	// on 151,936 logits here). A NaN compares false and sends its block
	// to the one-by-one loop, which never picks it.
	for ; i+4 <= len(logits); i += 4 {
		c := logits[i : i+4 : i+4]
		if c[0] <= best && c[1] <= best && c[2] <= best && c[3] <= best {
			continue
		}
		for j, v := range c {
			if v > best {
				best, bi = v, i+j
			}
		}
	}
	for ; i < len(logits); i++ {
		if v := logits[i]; v > best {
			best, bi = v, i
		}
	}
	return bi
}

// topk returns the topK highest logits, highest first: one pass keeping a
// min-heap of topK candidates, so a logit below the heap's least (nearly
// all of a large vocabulary) costs one comparison.
func (s *sampler) topk(logits []float32) []cand {
	h := s.heap[:0]
	k := s.topK
	i := 0
	for ; i < len(logits) && len(h) < k; i++ {
		if v := logits[i]; v == v { // not NaN
			h = append(h, cand{id: i, logit: v})
			siftUp(h, len(h)-1)
		}
	}
	if len(h) == k {
		least := h[0].logit
		for ; i+4 <= len(logits); i += 4 { // four at a time, as in argmax
			c := logits[i : i+4 : i+4]
			if c[0] <= least && c[1] <= least && c[2] <= least && c[3] <= least {
				continue
			}
			for j, v := range c {
				if v > least {
					h[0] = cand{id: i + j, logit: v}
					siftDown(h, 0)
					least = h[0].logit
				}
			}
		}
		for ; i < len(logits); i++ {
			if v := logits[i]; v > least {
				h[0] = cand{id: i, logit: v}
				siftDown(h, 0)
				least = h[0].logit
			}
		}
	}
	// Heap order to descending order: pop the least to the end.
	for n := len(h); n > 1; n-- {
		h[0], h[n-1] = h[n-1], h[0]
		siftDown(h[:n-1], 0)
	}
	s.heap = h
	return h
}

func siftUp(h []cand, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h[p].logit <= h[i].logit {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func siftDown(h []cand, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].logit < h[l].logit {
			m = r
		}
		if h[i].logit <= h[m].logit {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// softmax sets c[i].p from c[i].logit/temp; c is sorted highest first.
func softmax(c []cand, temp float32) {
	maxL := float64(c[0].logit) / float64(temp)
	if math.IsInf(maxL, 0) {
		// -Inf everywhere (or +Inf at the top): no usable differences;
		// share evenly among the +Inf ones, or all.
		n := 0
		for i := range c {
			if c[i].logit == c[0].logit {
				n++
			}
		}
		for i := range c {
			c[i].p = 0
			if c[i].logit == c[0].logit {
				c[i].p = 1 / float64(n)
			}
		}
		return
	}
	var sum float64
	for i := range c {
		e := math.Exp(float64(c[i].logit)/float64(temp) - maxL)
		c[i].p = e
		sum += e
	}
	for i := range c {
		c[i].p /= sum
	}
}
