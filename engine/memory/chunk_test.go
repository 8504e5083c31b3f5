package memory_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openclaw-edge/edge/engine/memory"
)

func TestChunkText(t *testing.T) {
	lines := func(n, width int) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			s := fmt.Sprintf("line %d ", i)
			b.WriteString(s + strings.Repeat("x", max(0, width-len(s))) + "\n")
		}
		return b.String()
	}
	for _, tc := range []struct {
		name            string
		text            string
		tokens, overlap int
		want            [][2]int // line ranges
	}{
		{"one small file", "a\nb\nc\n", 400, 80, [][2]int{{1, 3}}},
		{"no trailing newline", "a\nb", 400, 80, [][2]int{{1, 2}}},
		{"blank only", "\n\n   \n\t\n", 400, 80, nil},
		{"empty", "", 400, 80, nil},
		// 100-byte lines, 400-byte chunks: 3 lines each (the 4th would pass
		// 400 with the newlines); overlap 50 tokens = 200 bytes = 1 line.
		{"overlap one line", lines(7, 100), 100, 50, [][2]int{{1, 3}, {3, 5}, {5, 7}}},
		{"no overlap", lines(7, 100), 100, 0, [][2]int{{1, 3}, {4, 6}, {7, 7}}},
		{"crlf", "a\r\nb\r\n", 400, 0, [][2]int{{1, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := memory.ChunkText("memory/x.md", []byte(tc.text), tc.tokens, tc.overlap)
			var ranges [][2]int
			for _, c := range got {
				ranges = append(ranges, [2]int{c.StartLine, c.EndLine})
				if strings.Contains(c.Text, "\r") || c.Path != "memory/x.md" || len(c.Hash) != 64 {
					t.Errorf("chunk %+v", c)
				}
			}
			if fmt.Sprint(ranges) != fmt.Sprint(tc.want) {
				t.Errorf("ranges %v, want %v", ranges, tc.want)
			}
		})
	}
	// A line longer than a chunk: pieces on rune boundaries, all on its
	// line number; identical pieces once.
	long := strings.Repeat("é", 3000) // 6000 bytes
	got := memory.ChunkText("m.md", []byte("first\n"+long+"\nlast\n"), 100, 0)
	total := 0
	for _, c := range got {
		if !utf8.ValidString(c.Text) {
			t.Errorf("piece cut inside a rune: %q", c.Text[:8])
		}
		if c.StartLine == 2 {
			total++
		}
	}
	if total != 1 { // 15 identical 400-byte pieces of "é" are one chunk
		t.Errorf("%d chunks of the long line, want 1 (identical pieces once)", total)
	}
	ids := map[string]bool{}
	for _, c := range memory.ChunkText("m.md", []byte("a\n"+strings.Repeat("ab", 900)+"c\n"), 100, 20) {
		if ids[c.ID()] {
			t.Errorf("duplicate id %s", c.ID())
		}
		ids[c.ID()] = true
	}
}

func FuzzChunkText(f *testing.F) {
	f.Add([]byte("a\nb\n"), 10, 2)
	f.Add([]byte(strings.Repeat("é\n", 50)), 3, 1)
	f.Fuzz(func(t *testing.T, b []byte, tokens, overlap int) {
		if len(b) > 1<<16 {
			return
		}
		tokens, overlap = tokens%500, overlap%500
		last := 0
		for _, c := range memory.ChunkText("f.md", b, tokens, overlap) {
			if c.StartLine < 1 || c.EndLine < c.StartLine || c.StartLine < last {
				t.Fatalf("bad range %d-%d after %d", c.StartLine, c.EndLine, last)
			}
			last = c.StartLine
			if strings.TrimSpace(c.Text) == "" {
				t.Fatal("blank chunk")
			}
		}
	})
}
