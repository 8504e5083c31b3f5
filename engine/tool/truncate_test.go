package tool

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMaxResultChars(t *testing.T) {
	tests := []struct {
		window, want int
	}{
		{0, 16_000},
		{-5, 16_000},
		{8_192, 9_830},   // 30% of 8192 tokens × 4 chars
		{32_768, 16_000}, // 30% share (39,321) is above the default
		{128_000, 32_000},
		{200_000, 32_000},
		{1_000_000, 64_000},
		{2_000_000, 64_000},
		{1, 1},
	}
	for _, tt := range tests {
		if got := MaxResultChars(tt.window); got != tt.want {
			t.Errorf("MaxResultChars(%d) = %d, want %d", tt.window, got, tt.want)
		}
	}
}

// lines returns n numbered lines.
func lines(n int, format func(i int) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(format(i))
		b.WriteByte('\n')
	}
	return b.String()
}

func TestTruncate(t *testing.T) {
	plain := lines(2000, func(i int) string { return "line " + strings.Repeat("x", i%50) })
	withError := plain + "panic: runtime error: index out of range\n"
	json := "[\n" + lines(2000, func(i int) string { return `  {"item": 1},` }) + "]\n"
	tests := []struct {
		name      string
		text      string
		max       int
		headTail  bool   // expect the middle marker
		wantStart string // prefix of the result
		wantEnd   string // substring expected in the kept tail, if headTail
	}{
		{"fits", "short", 100, false, "short", ""},
		{"plain head only", plain, 1000, false, "line \nline x\n", ""},
		{"error tail kept", withError, 1000, true, "line \n", "panic: runtime error"},
		{"closing JSON kept", json, 1000, true, "[\n", "]\n"},
		{"too small to split keeps head", withError, 300, false, "line \n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Truncate(tt.text, tt.max)
			if tt.text == got {
				if utf8.RuneCountInString(tt.text) > tt.max {
					t.Fatal("text longer than max returned unchanged")
				}
				return
			}
			if n := utf8.RuneCountInString(got); n > tt.max {
				t.Errorf("result has %d chars, max %d", n, tt.max)
			}
			if !strings.HasPrefix(got, tt.wantStart) {
				t.Errorf("result does not start with %q: %.80q", tt.wantStart, got)
			}
			if !strings.HasSuffix(got, " chars truncated; narrow args]") {
				t.Errorf("no truncation note: …%q", got[max(0, len(got)-80):])
			}
			if has := strings.Contains(got, MiddleMarker); has != tt.headTail {
				t.Errorf("middle marker present = %v, want %v", has, tt.headTail)
			}
			if tt.headTail {
				_, tail, _ := strings.Cut(got, MiddleMarker)
				if !strings.Contains(tail, tt.wantEnd) {
					t.Errorf("tail %q does not keep %q", tail, tt.wantEnd)
				}
				// Head ~70%, tail ~30%.
				head, _, _ := strings.Cut(got, MiddleMarker)
				if len(head) < 2*len(tail)-200 {
					t.Errorf("head %d bytes, tail %d bytes: want about 70/30", len(head), len(tail))
				}
			}
		})
	}
}

func TestTruncateCountsCut(t *testing.T) {
	text := strings.Repeat("a", 5000)
	got := Truncate(text, 1000)
	head, note, _ := strings.Cut(got, "\n[... ")
	want := groupDigits(5000-len(head)) + " chars truncated; narrow args]"
	if note != want {
		t.Fatalf("note %q, want %q", note, want)
	}
}

func TestTruncateLineBoundary(t *testing.T) {
	text := lines(100, func(i int) string { return strings.Repeat("y", 39) }) // 40 bytes a line
	got := Truncate(text, 500)
	head, _, _ := strings.Cut(got, "\n[... ")
	if !strings.HasSuffix(head, "\n") {
		t.Errorf("head does not end on a line boundary: %q", head[max(0, len(head)-50):])
	}
}

func TestTruncateUTF8(t *testing.T) {
	for _, text := range []string{
		strings.Repeat("日本語のテキスト", 1000),
		strings.Repeat("🙂", 3000) + " error",
		strings.Repeat("é", 5000) + "}",
	} {
		for _, max := range []int{0, 10, 57, 100, 401, 999, 1000, 4096} {
			got := Truncate(text, max)
			if !utf8.ValidString(got) {
				t.Fatalf("Truncate(%.10q…, %d) is not valid UTF-8", text, max)
			}
			if n := utf8.RuneCountInString(got); max >= 100 && n > max {
				t.Fatalf("Truncate(%.10q…, %d) has %d chars", text, max, n)
			}
		}
	}
	// The budget is in characters, not bytes: 3-byte runes count once.
	got := Truncate(strings.Repeat("語", 2000), 1000)
	if n := strings.Count(got, "語"); n < 900 {
		t.Errorf("kept %d of a 1000-char budget", n)
	}
}

func TestGroupDigits(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 125400: "125,400", 1234567: "1,234,567"} {
		if got := groupDigits(n); got != want {
			t.Errorf("groupDigits(%d) = %q, want %q", n, got, want)
		}
	}
}

func FuzzTruncate(f *testing.F) {
	f.Add("hello\nworld\n", 5)
	f.Add(strings.Repeat("x\n", 500)+"error: boom", 400)
	f.Add(strings.Repeat("日本", 300)+"}", 450)
	f.Add("\xff\xfe broken utf8 \xc3", 3)
	f.Fuzz(func(t *testing.T, text string, max int) {
		if max < 0 || max > 1<<20 {
			return
		}
		got := Truncate(text, max)
		n := utf8.RuneCountInString(text)
		if n <= max {
			if got != text {
				t.Fatalf("fitting text changed")
			}
			return
		}
		if !strings.HasSuffix(got, " chars truncated; narrow args]") {
			t.Fatalf("no note in %q", got)
		}
		if utf8.ValidString(text) && !utf8.ValidString(got) {
			t.Fatalf("valid input gave invalid UTF-8 %q", got)
		}
		if max >= 100 && utf8.RuneCountInString(got) > max {
			t.Fatalf("result %d chars > max %d", utf8.RuneCountInString(got), max)
		}
	})
}
