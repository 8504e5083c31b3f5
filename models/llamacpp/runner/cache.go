package runner

import "sort"

// prefixCache decides which KV-cache slot (llama.cpp sequence) serves a
// prompt and how much of it is already decoded there.
//
// Each slot is its own KV stream (llama.cpp's non-unified cache). A
// session whose prompt shares more with another slot than with its own —
// a new session, whose system prompt and tools another session already
// decoded — borrows that slot's prefix: llama.cpp copies a whole stream
// (the cells' bookkeeping at once, the tensors at the next decode, a
// memory copy far cheaper than evaluating the tokens again: 20–30 ms each
// on a Pi), and the tail past the shared prefix is dropped before the new
// tokens are decoded. The source slot is left as it was.
type prefixCache struct {
	slots []slot
	clock uint64
}

type slot struct {
	session string
	tokens  []int // what the slot's KV cache holds, in order
	used    uint64
}

func newPrefixCache(n int) *prefixCache {
	return &prefixCache{slots: make([]slot, max(n, 1))}
}

// minBorrow is the least gain in cached tokens worth copying another
// slot's stream for.
const minBorrow = 16

// plan picks the slot for session: its own, else an empty one, else the
// least recently used; keep is how many prompt tokens the slot will hold
// before decoding. src, when not -1, is another slot whose common prefix
// with prompt is longer (by minBorrow or more): the caller copies it into
// dst first, then drops dst past keep. At least one prompt token is always
// left to decode so the model produces logits for the next token.
func (c *prefixCache) plan(session string, prompt []int) (dst, keep, src int) {
	dst = -1
	for i, s := range c.slots {
		if s.session == session && session != "" {
			dst = i
			break
		}
	}
	if dst < 0 {
		for i, s := range c.slots {
			if s.session == "" && len(s.tokens) == 0 {
				dst = i
				break
			}
		}
	}
	if dst < 0 {
		dst = 0
		for i, s := range c.slots {
			if s.used < c.slots[dst].used {
				dst = i
			}
		}
	}
	keep = commonPrefix(c.slots[dst].tokens, prompt)
	src = -1
	for i, s := range c.slots {
		if i == dst {
			continue
		}
		if n := commonPrefix(s.tokens, prompt); n >= keep+minBorrow && n > 0 {
			src, keep = i, n
		}
	}
	if keep >= len(prompt) {
		keep = len(prompt) - 1
	}
	return dst, max(keep, 0), src
}

// commit records what slot dst holds after a request.
func (c *prefixCache) commit(dst int, session string, tokens []int) {
	c.clock++
	c.slots[dst] = slot{session: session, tokens: tokens, used: c.clock}
}

// own is session's slot, or -1.
func (c *prefixCache) own(session string) int {
	for i, s := range c.slots {
		if s.session == session && session != "" {
			return i
		}
	}
	return -1
}

// restore records a slot read back from disk (kvstate.go), older than
// any used since.
func (c *prefixCache) restore(dst int, session string, tokens []int) {
	c.slots[dst] = slot{session: session, tokens: tokens}
}

// restored orders the slots read back from disk (the newest first, as
// readKVStates gives them) as used, the newest last, so eviction takes the
// oldest first.
func (c *prefixCache) restored(n int) {
	for i := range n {
		c.slots[i].used = uint64(n - i)
	}
	c.clock = max(c.clock, uint64(n))
}

// byRecency lists the slots, most recently used first.
func (c *prefixCache) byRecency() []int {
	idx := make([]int, len(c.slots))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return c.slots[idx[a]].used > c.slots[idx[b]].used })
	return idx
}

// tokens is what each slot holds, in tokens.
func (c *prefixCache) tokens() []int {
	out := make([]int, len(c.slots))
	for i, s := range c.slots {
		out[i] = len(s.tokens)
	}
	return out
}

// clear forgets slot dst (its KV cache was wiped).
func (c *prefixCache) clear(dst int) { c.slots[dst] = slot{} }

func commonPrefix(a, b []int) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
