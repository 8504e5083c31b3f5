package bolt

import (
	"container/list"
	"maps"
	"slices"
	"sync"

	"go.etcd.io/bbolt"

	"github.com/openclaw-edge/edge/engine/transcript"
)

// cache keeps decoded transcripts, least recently used evicted first.
// Transcript buckets are append-only and their sequence counts appends, so
// a cached copy is current exactly when its sequence equals the bucket's;
// when it is behind, only the newer entries are decoded. Decoding JSON is
// what a turn's context rebuild costs (docs/design.md §11: 1,000 entries within
// the per-message budget).
type cache struct {
	max int // bytes; < 0 disables

	mu    sync.Mutex
	items map[string]*list.Element // of *cached
	lru   list.List                // front = most recent
	size  int
}

type cached struct {
	id      string
	seq     uint64
	entries []transcript.Entry
	size    int
}

func newCache(max int) *cache {
	return &cache{max: max, items: map[string]*list.Element{}}
}

// read returns a copy of the entries of transcript bucket b of id, decoding
// what the cache lacks. It runs inside the caller's read transaction.
func (c *cache) read(id string, b *bbolt.Bucket) ([]transcript.Entry, error) {
	entries, shared, err := c.snapshot(id, b)
	if err != nil || !shared {
		return entries, err
	}
	return copyEntries(entries), nil
}

// snapshot returns the entries of transcript bucket b of id, and whether
// they are the cache's own (shared: read-only). Cached slices are only ever
// appended to past every snapshot's length, so a snapshot stays valid
// without the lock.
func (c *cache) snapshot(id string, b *bbolt.Bucket) (entries []transcript.Entry, shared bool, err error) {
	seq := b.Sequence()
	if c.max < 0 {
		entries, _, err := decodeAfter(b, 0)
		return entries, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var it *cached
	if el, ok := c.items[id]; ok {
		it = el.Value.(*cached)
		c.lru.MoveToFront(el)
		if it.seq > seq {
			// A reader on an older snapshot than the cache. Sequences are
			// contiguous (one per entry, rolled back with their
			// transaction), so the first seq entries are its transcript.
			if uint64(len(it.entries)) == it.seq {
				return it.entries[:seq:seq], true, nil
			}
			entries, _, err := decodeAfter(b, 0)
			return entries, false, err
		}
	}
	if it == nil {
		it = &cached{id: id}
		c.items[id] = c.lru.PushFront(it)
	}
	if it.seq < seq {
		more, size, err := decodeAfter(b, it.seq)
		if err != nil {
			c.remove(c.items[id])
			return nil, false, err
		}
		it.entries = append(it.entries, more...)
		it.seq = seq
		it.size += size
		c.size += size
	}
	n := len(it.entries)
	entries = it.entries[:n:n]
	c.evict()
	return entries, true, nil
}

// evict drops least recently used transcripts until the cache fits.
func (c *cache) evict() {
	for c.size > c.max && c.lru.Len() > 0 {
		c.remove(c.lru.Back())
	}
}

func (c *cache) remove(el *list.Element) {
	it := el.Value.(*cached)
	c.lru.Remove(el)
	delete(c.items, it.id)
	c.size -= it.size
}

// drop forgets id.
func (c *cache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[id]; ok {
		c.remove(el)
	}
}

// copyEntries copies entries deep enough that a caller editing a message's
// content or usage cannot change the cache. JSON raw values are shared:
// they are replaced, never edited in place.
func copyEntries(in []transcript.Entry) []transcript.Entry {
	out := slices.Clone(in)
	for i := range out {
		if out[i].Extra != nil {
			out[i].Extra = maps.Clone(out[i].Extra)
		}
		if m := out[i].Message; m != nil {
			cp := *m
			cp.Content = slices.Clone(m.Content)
			if m.Usage != nil {
				u := *m.Usage
				cp.Usage = &u
			}
			out[i].Message = &cp
		}
	}
	return out
}
