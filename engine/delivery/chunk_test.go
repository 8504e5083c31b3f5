package delivery

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestChunk(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		limit int
		mode  ChunkMode
		want  []string
	}{
		{"fits", "hello world", 20, ChunkLength, []string{"hello world"}},
		{"blank", " \n\t\n", 20, ChunkLength, nil},
		{"no limit", "\n\nhello\nworld  \n", 0, ChunkLength, []string{"hello\nworld"}},
		{"words", "aaaa bbbb cccc dddd", 10, ChunkLength, []string{"aaaa bbbb", "cccc dddd"}},
		{"hard", "abcdefghij", 4, ChunkLength, []string{"abcd", "efgh", "ij"}},
		{"line break preferred", "one two\nthree four five", 16, ChunkLength, []string{"one two", "three four five"}},
		{"runes not bytes", "ééééé ééééé", 5, ChunkLength, []string{"ééééé", "ééééé"}},
		{"paragraphs in newline mode", "para one\nstill one\n\npara two is here", 30, ChunkNewline,
			[]string{"para one\nstill one", "para two is here"}},
		{"length mode packs lines", "para one\n\nline two\nline three", 25, ChunkLength,
			[]string{"para one\n\nline two", "line three"}},
		{"newline mode breaks at the paragraph", "para one\n\nline two\nline three", 25, ChunkNewline,
			[]string{"para one", "line two\nline three"}},
		{"fence reopened", "Intro\n```go\nline1\nline2\nline3\nline4\n```\nOutro", 30, ChunkLength,
			[]string{"Intro\n```go\nline1\nline2\n```", "```go\nline3\nline4\n```\nOutro"}},
		{"break before fence preferred", "Some intro text here.\n```\ncode\n```", 30, ChunkLength,
			[]string{"Some intro text here.", "```\ncode\n```"}},
		{"tilde fence keeps its marker and indent", "  ~~~~ sh\n  a\n  b\n  c\n  d\n  e\n  ~~~~", 34, ChunkLength,
			[]string{"  ~~~~ sh\n  a\n  b\n  c\n  d\n  ~~~~", "  ~~~~ sh\n  e\n  ~~~~"}},
		{"tiny limit splits fence as is", "```\nabc\n```", 4, ChunkLength, []string{"```", "abc", "```"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Chunk(tt.text, tt.limit, tt.mode)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Chunk(%q, %d, %s)\n got  %q\n want %q", tt.text, tt.limit, tt.mode, got, tt.want)
			}
			checkChunks(t, tt.text, tt.limit, tt.mode)
		})
	}
}

// checkChunks checks the properties every split must have: each chunk fits
// the limit, and the chunk bodies (fence fixes removed) give back the text
// except for whitespace at the boundaries.
func checkChunks(t *testing.T, text string, limit int, mode ChunkMode) []part {
	t.Helper()
	parts := split(text, limit, mode)
	chunks := Chunk(text, limit, mode)
	if len(chunks) != len(parts) {
		t.Fatalf("Chunk gave %d chunks, split %d parts", len(chunks), len(parts))
	}
	rest := string([]rune(text)) // invalid UTF-8 comes back as U+FFFD
	for i, p := range parts {
		c := chunks[i]
		if c != p.pre+p.body+p.suf {
			t.Fatalf("chunk %d = %q, want %q", i, c, p.pre+p.body+p.suf)
		}
		if limit > 0 && utf8.RuneCountInString(c) > limit {
			t.Fatalf("chunk %d has %d runes, limit %d: %q", i, utf8.RuneCountInString(c), limit, c)
		}
		if p.body == "" {
			t.Fatalf("chunk %d has an empty body", i)
		}
		k := strings.Index(rest, p.body)
		if k < 0 || strings.TrimSpace(rest[:k]) != "" {
			t.Fatalf("chunk %d body %q is not next in the text %q", i, p.body, rest)
		}
		rest = rest[k+len(p.body):]
	}
	if strings.TrimSpace(rest) != "" {
		t.Fatalf("text left over after the last chunk: %q", rest)
	}
	return parts
}

// balanced reports whether s closes every fence it opens.
func balanced(s string) bool {
	var cur *fence
	for _, line := range strings.Split(s, "\n") {
		cur = nextFence(cur, line)
	}
	return cur == nil
}

// TestChunkProperties splits generated Markdown at many limits: chunks fit,
// give back the text, and each chunk's fences are balanced when the text's
// are and the limit leaves room to repair them.
func TestChunkProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "beta", "gamma", "δέλτα", "🙂", "x", "longerwordhere", "[[reply_to_current]]"}
	for round := 0; round < 200; round++ {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			switch rng.IntN(4) {
			case 0:
				b.WriteString("```" + []string{"", "go", "python title=x"}[rng.IntN(3)] + "\n")
				for range 1 + rng.IntN(8) {
					b.WriteString(strings.Repeat("  ", rng.IntN(3)) + words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))] + "\n")
				}
				b.WriteString("```\n")
			case 1:
				b.WriteString("\n")
			default:
				for range 1 + rng.IntN(20) {
					b.WriteString(words[rng.IntN(len(words))] + " ")
				}
				b.WriteString("\n")
			}
		}
		text := b.String()
		for _, mode := range []ChunkMode{ChunkLength, ChunkNewline} {
			for _, limit := range []int{1, 3, 8, 20, 40, 64, 100, 333, 4000} {
				parts := checkChunks(t, text, limit, mode)
				if limit < 64 { // the longest fence here needs 22 runes to repair
					continue
				}
				for i, p := range parts {
					c := p.pre + p.body + p.suf
					if !balanced(c) {
						t.Fatalf("round %d limit %d %s: chunk %d has an open fence: %q\ntext %q", round, limit, mode, i, c, text)
					}
				}
			}
		}
	}
}

func FuzzChunk(f *testing.F) {
	f.Add("Intro\n```go\nline1\nline2\n```\nOutro", 12, false)
	f.Add("a b c\n\nd e f", 3, true)
	f.Add("~~~\n```\n~~~", 5, false)
	f.Add("\u00e9\u00e9\n\r\n\t", 1, true)
	f.Fuzz(func(t *testing.T, text string, limit int, newline bool) {
		if limit > 1000 || limit < -10 {
			limit %= 1000
		}
		mode := ChunkLength
		if newline {
			mode = ChunkNewline
		}
		checkChunks(t, text, limit, mode)
	})
}
