package memory

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"unicode/utf8"
)

// Chunking defaults (docs/design.md §6, OpenClaw's): ~400 tokens per chunk, 80
// tokens of overlap. Tokens are estimated as 4 bytes each, as OpenClaw
// does; the index never needs the exact count, only similar-sized chunks.
const (
	DefaultChunkTokens   = 400
	DefaultOverlapTokens = 80
	bytesPerToken        = 4
)

// Chunk is a run of whole lines of one file.
type Chunk struct {
	Path      string // slash path as shown to the model
	StartLine int    // 1-based, inclusive
	EndLine   int    // inclusive
	Text      string
	Hash      string // sha256 of Text, hex: the embedding cache key
}

// ID names the chunk in the keyword index: the same path, lines and text
// give the same id, so an unchanged chunk is never re-indexed.
func (c Chunk) ID() string {
	h := sha256.New()
	h.Write([]byte(c.Path))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(c.StartLine) + ":" + strconv.Itoa(c.EndLine)))
	h.Write([]byte{0})
	h.Write([]byte(c.Hash))
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// ChunkText cuts content into chunks of about tokens tokens that overlap by
// overlap tokens, on line boundaries (a line longer than a chunk is cut into
// pieces that all carry its line number, on UTF-8 boundaries). Blank-only
// chunks are dropped.
func ChunkText(path string, content []byte, tokens, overlap int) []Chunk {
	if tokens <= 0 {
		tokens = DefaultChunkTokens
	}
	if overlap < 0 || overlap >= tokens {
		overlap = 0
	}
	maxBytes, overlapBytes := tokens*bytesPerToken, overlap*bytesPerToken

	// One pass over content: only the lines of the chunk being built are
	// held (a file of millions of empty lines costs no more than one chunk).
	type line struct {
		n    int
		text []byte
	}
	var out []Chunk
	var cur []line
	size, fresh := 0, 0 // fresh: lines in cur that no chunk holds yet
	seen := map[[2]int]string{}
	var b bytes.Buffer // reused: a chunk's text is copied out by String
	flush := func() {
		blank := true
		for _, l := range cur {
			if len(bytes.TrimSpace(l.text)) > 0 {
				blank = false
				break
			}
		}
		b.Reset()
		for i, l := range cur {
			if blank {
				break
			}
			if i > 0 {
				b.WriteByte('\n')
			}
			b.Write(l.text)
		}
		if !blank {
			sum := sha256.Sum256(b.Bytes())
			c := Chunk{Path: path, StartLine: cur[0].n, EndLine: cur[len(cur)-1].n, Text: b.String(), Hash: hex.EncodeToString(sum[:])}
			// Identical pieces of one long line would share an id: one is enough.
			if k := [2]int{c.StartLine, c.EndLine}; seen[k] != c.Hash {
				seen[k] = c.Hash
				out = append(out, c)
			}
		}
		// Keep the tail lines that make up the overlap.
		keep, kept := len(cur), 0
		for keep > 0 && kept+len(cur[keep-1].text)+1 <= overlapBytes {
			keep--
			kept += len(cur[keep].text) + 1
		}
		if keep == 0 { // the whole chunk would be overlap: progress first
			keep, kept = len(cur), 0
		}
		cur = cur[:copy(cur, cur[keep:])] // in place: no allocation per chunk
		size, fresh = kept, 0
	}
	push := func(l line) {
		if fresh > 0 && size+len(l.text)+1 > maxBytes {
			flush()
		}
		cur = append(cur, l)
		size += len(l.text) + 1
		fresh++
	}
	n := 0
	for len(content) > 0 {
		n++
		i := bytes.IndexByte(content, '\n')
		var l []byte
		if i < 0 {
			l, content = content, nil
		} else {
			l, content = content[:i], content[i+1:]
		}
		l = bytes.TrimSuffix(l, []byte("\r"))
		for len(l) > maxBytes {
			cut := maxBytes
			for cut > 0 && !utf8.RuneStart(l[cut]) {
				cut--
			}
			if cut == 0 {
				cut = maxBytes
			}
			push(line{n, l[:cut]})
			l = l[cut:]
		}
		push(line{n, l})
	}
	if fresh > 0 {
		flush()
	}
	return out
}
