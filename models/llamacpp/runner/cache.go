package runner

// prefixCache decides which KV-cache slot (llama.cpp sequence) serves a
// prompt and how much of it is already decoded there.
//
// Each slot is its own KV stream (llama.cpp's non-unified cache), and
// llama.cpp copies between streams only whole and lazily (at the next
// decode), so a new session does not borrow another slot's prefix: it
// decodes its own system prompt once, and its follow-ups hit the cache.
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

// plan picks the slot for session: its own, else an empty one, else the
// least recently used; keep is how many prompt tokens the slot already
// holds. At least one prompt token is always left to decode so the model
// produces logits for the next token.
func (c *prefixCache) plan(session string, prompt []int) (dst, keep int) {
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
	if keep >= len(prompt) {
		keep = len(prompt) - 1
	}
	return dst, max(keep, 0)
}

// commit records what slot dst holds after a request.
func (c *prefixCache) commit(dst int, session string, tokens []int) {
	c.clock++
	c.slots[dst] = slot{session: session, tokens: tokens, used: c.clock}
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
