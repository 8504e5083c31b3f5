package delivery

import (
	"sort"
	"strings"
)

// ChunkMode chooses where Chunk prefers to split.
type ChunkMode string

// Chunk modes (chunkMode in the channel config).
const (
	// ChunkLength fills chunks up to the limit, splitting at the last line
	// break (else space) in the second half of the window.
	ChunkLength ChunkMode = "length"
	// ChunkNewline prefers paragraph breaks, then line breaks, anywhere in
	// the window.
	ChunkNewline ChunkMode = "newline"
)

// Chunk splits text into chunks of at most limit runes. It prefers breaks
// outside code fences; a split inside a fence closes it at the end of the
// chunk and reopens it, with the same info string, at the start of the next.
// A limit ≤ 0 means one chunk. Blank text gives no chunks. Invalid UTF-8
// comes back as U+FFFD.
func Chunk(text string, limit int, mode ChunkMode) []string {
	parts := split(text, limit, mode)
	if len(parts) == 0 {
		return nil
	}
	chunks := make([]string, len(parts))
	for i, p := range parts {
		chunks[i] = p.pre + p.body + p.suf
	}
	return chunks
}

// part is one chunk: a reopened fence, a piece of the text, a fence closer.
type part struct{ pre, body, suf string }

// chunker holds the text as runes with its lines and fence states.
type chunker struct {
	rs     []rune
	starts []int    // rune offset of each line
	before []*fence // fence open at the start of each line
	fenced []bool   // the line opens or closes a fence
	limit  int
}

func split(text string, limit int, mode ChunkMode) []part {
	c := newChunker(text, limit)
	n := len(c.rs)
	s := c.skipBlank(0)
	end := c.trimEnd(s, n)
	if s >= end {
		return nil
	}
	if limit <= 0 {
		return []part{{body: string(c.rs[s:end])}}
	}
	var parts []part
	for s < end {
		f0 := c.stateAt(s)
		pre := ""
		if c.repairable(f0) {
			pre = f0.open + "\n"
		}
		preN := runeLen(pre)
		if preN+end-s <= limit {
			parts = append(parts, part{pre: pre, body: string(c.rs[s:end])})
			break
		}
		w := limit - preN
		var p int
		var suf string
		for {
			if w < 1 { // cannot happen with repairable fences; keep the bound anyway
				p, suf = s+1, ""
				break
			}
			p = c.choose(s, w, mode)
			suf = ""
			if f1 := c.stateAt(p); c.repairable(f1) {
				suf = "\n" + f1.closer()
			}
			sufN := runeLen(suf)
			if preN+c.trimEnd(s, p)-s+sufN <= limit {
				break
			}
			w2 := limit - preN - sufN
			if w2 >= w {
				w2 = w - 1
			}
			w = w2
		}
		if e := c.trimEnd(s, p); e > s {
			parts = append(parts, part{pre: pre, body: string(c.rs[s:e]), suf: suf})
		}
		s = c.skipBlank(p)
	}
	return parts
}

func newChunker(text string, limit int) *chunker {
	c := &chunker{rs: []rune(text), limit: limit}
	var cur *fence
	for i := 0; ; {
		j := i
		for j < len(c.rs) && c.rs[j] != '\n' {
			j++
		}
		next := nextFence(cur, string(c.rs[i:j]))
		c.starts = append(c.starts, i)
		c.before = append(c.before, cur)
		c.fenced = append(c.fenced, next != cur)
		cur = next
		if j == len(c.rs) {
			break
		}
		i = j + 1
	}
	return c
}

func (c *chunker) line(p int) int {
	return sort.Search(len(c.starts), func(k int) bool { return c.starts[k] > p }) - 1
}

// stateAt is the fence open at a break before rune p. A break inside a
// fence's own line counts as before that line.
func (c *chunker) stateAt(p int) *fence { return c.before[c.line(p)] }

// repairable reports whether f is open and its fence lines fit in half the
// limit, so that closing and reopening it still leaves room for text.
func (c *chunker) repairable(f *fence) bool {
	return f != nil && runeLen(f.open)+runeLen(f.closer())+2 <= c.limit/2
}

// skipBlank moves p past blank lines when it is at the start of a line.
func (c *chunker) skipBlank(p int) int {
	for p < len(c.rs) && (p == 0 || c.rs[p-1] == '\n') {
		j := p
		for j < len(c.rs) && c.rs[j] != '\n' && strings.ContainsRune(blanks, c.rs[j]) {
			j++
		}
		switch {
		case j == len(c.rs):
			return j
		case c.rs[j] == '\n':
			p = j + 1
		default:
			return p
		}
	}
	return p
}

// trimEnd returns e ≤ p such that rs[s:e] is rs[s:p] without trailing
// whitespace.
func (c *chunker) trimEnd(s, p int) int {
	for p > s && isSpaceRune(c.rs[p-1]) {
		p--
	}
	return p
}

// choose picks where a chunk that starts at s and may hold w runes ends.
func (c *chunker) choose(s, w int, mode ChunkMode) int {
	hi := min(s+w, len(c.rs))
	paraOut, para, lineOut, line, space := -1, -1, -1, -1, -1
	for p := hi; p > s; p-- {
		r := c.rs[p-1]
		switch {
		case r == '\n':
			l := c.line(p)
			out := c.before[l] == nil
			if line < 0 {
				line = p
			}
			if out && lineOut < 0 {
				lineOut = p
			}
			if l >= 1 && isBlankRunes(c.rs[c.starts[l-1]:p-1]) {
				if para < 0 {
					para = p
				}
				if out && paraOut < 0 {
					paraOut = p
				}
			}
		case (r == ' ' || r == '\t') && space < 0 && p < len(c.rs) && !isSpaceRune(c.rs[p]):
			if !c.fenced[c.line(p)] {
				space = p
			}
		}
		if paraOut >= 0 && lineOut >= 0 && space >= 0 {
			break
		}
	}
	if mode == ChunkNewline {
		for _, p := range []int{paraOut, lineOut, para, line, space} {
			if p > s {
				return p
			}
		}
		return hi
	}
	half := s + w/2
	for _, p := range []int{lineOut, line, space} {
		if p >= half && p > s {
			return p
		}
	}
	for _, p := range []int{line, space} {
		if p > s {
			return p
		}
	}
	return hi
}

func isBlankRunes(rs []rune) bool {
	for _, r := range rs {
		if !strings.ContainsRune(blanks, r) {
			return false
		}
	}
	return true
}

func isSpaceRune(r rune) bool { return r == ' ' || r == '\t' || r == '\r' || r == '\n' }

func runeLen(s string) int { return len([]rune(s)) }
