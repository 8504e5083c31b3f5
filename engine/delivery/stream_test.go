package delivery

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// runFilter feeds deltas to a new filter and returns every Write result,
// the Flush result and whether the filter ended silent.
func runFilter(deltas []string) (outs []string, flushed string, silent bool) {
	f := NewStreamFilter()
	for _, d := range deltas {
		outs = append(outs, f.Write(d))
	}
	return outs, f.Flush(), f.Silent()
}

func TestStreamFilterEverySplit(t *testing.T) {
	tests := []struct {
		text   string
		want   string // everything shown, concatenated
		silent bool
	}{
		{"NO_REPLY", "", true},
		{"NO_REPLY: nothing", "", true},
		{"  NO_REPLY", "", true},
		{"__SILENT__", "", true},
		{"__SILENT__ \n", "", true},
		{"__SILENT__!", "__SILENT__!", false},
		{"NO", "NO", false},
		{"Not now", "Not now", false},
		{"MEDIA:/tmp/a.png\nhi", "hi", false},
		{"[[reply_to_current]] Hello\nMEDIA:/tmp/a.png\n", "Hello\n", false},
		{"[[reply_to_current]] NO_REPLY", "", true},
		{"Look [[audio_as_voice]] here", "Look here", false},
		{"MEDIUM rare", "MEDIUM rare", false},
		{"[[nope]] x", "[[nope]] x", false},
		{"```\nMEDIA:/a\n```\nMEDIA:/b\nok", "```\nMEDIA:/a\n```\nok", false},
		{"héllo 🙂", "héllo 🙂", false},
	}
	for _, tt := range tests {
		// Every way of cutting the text in two, and byte by byte.
		splits := [][]string{{tt.text}, strings.Split(tt.text, "")}
		bytewise := make([]string, len(tt.text))
		for i := 0; i < len(tt.text); i++ {
			bytewise[i] = tt.text[i : i+1]
		}
		splits = append(splits, bytewise)
		for i := 0; i <= len(tt.text); i++ {
			splits = append(splits, []string{tt.text[:i], tt.text[i:]})
		}
		for _, deltas := range splits {
			outs, flushed, silent := runFilter(deltas)
			got := strings.Join(outs, "") + flushed
			if got != tt.want || silent != tt.silent {
				t.Errorf("deltas %q: shown %q silent %v, want %q silent %v", deltas, got, silent, tt.want, tt.silent)
			}
			for _, o := range append(outs, flushed) {
				if !utf8.ValidString(o) {
					t.Errorf("deltas %q: returned invalid UTF-8 %q", deltas, o)
				}
			}
		}
	}
}

func TestStreamFilterHoldsOnlyWhatItMust(t *testing.T) {
	f := NewStreamFilter()
	steps := []struct{ delta, want string }{
		{"N", ""},            // could be NO_REPLY
		{"o", "No"},          // cannot
		{" way\n", " way\n"}, // plain text passes at once
		{"MEDIA:", ""},       // a directive line is held…
		{"/tmp/x.png", ""},   // …until it is complete
		{"\n", ""},           // and then dropped
		{"[[reply_to", ""},   // a directive may be starting
		{"_current]]", ""},   // it is one: dropped
		{"  next", "next"},   // with the spaces after it
		{"[x", "[x"},         // not a directive: shown at once
	}
	for _, s := range steps {
		if got := f.Write(s.delta); got != s.want {
			t.Fatalf("Write(%q) = %q, want %q", s.delta, got, s.want)
		}
	}
	if got := f.Flush(); got != "" {
		t.Fatalf("Flush() = %q, want nothing", got)
	}
}

func TestStreamFilterSilentStaysSilent(t *testing.T) {
	f := NewStreamFilter()
	for _, d := range []string{"NO_", "REPLY", "\nBut here is a secret draft"} {
		if got := f.Write(d); got != "" {
			t.Fatalf("Write(%q) = %q after a silent start", d, got)
		}
	}
	if !f.Silent() || f.Flush() != "" {
		t.Fatal("want silent and nothing flushed")
	}
}

// checkStream checks the stream filter against Parse for one text and two
// ways of cutting it: both show the same thing, which is Parse's untrimmed
// text, and agree with Parse on silence.
func checkStream(t *testing.T, text string, cuts []int) {
	t.Helper()
	whole, wf, ws := runFilter([]string{text})
	shownWhole := strings.Join(whole, "") + wf

	var deltas []string
	last := 0
	for _, c := range cuts {
		if c < 0 {
			c = -c
		}
		c %= len(text) + 1
		if c < last {
			continue
		}
		deltas = append(deltas, text[last:c])
		last = c
	}
	deltas = append(deltas, text[last:])
	outs, ff, fs := runFilter(deltas)
	shown := strings.Join(outs, "") + ff

	if shown != shownWhole || fs != ws {
		t.Fatalf("split %q: shown %q silent %v; whole: shown %q silent %v", deltas, shown, fs, shownWhole, ws)
	}
	out, _ := parse(text)
	r := Parse(text)
	if ws != r.Silent {
		t.Fatalf("%q: filter silent %v, Parse silent %v", text, ws, r.Silent)
	}
	if !ws && shownWhole != out {
		t.Fatalf("%q: filter shows %q, Parse delivers %q", text, shownWhole, out)
	}
	if ws && shownWhole != "" {
		t.Fatalf("%q: silent but showed %q", text, shownWhole)
	}
	if utf8.ValidString(text) {
		for _, o := range append(outs, ff) {
			if !utf8.ValidString(o) {
				t.Fatalf("split %q: invalid UTF-8 out %q", deltas, o)
			}
		}
	}
}

func FuzzStreamFilter(f *testing.F) {
	f.Add("NO_REPLY: nothing", 3, 5)
	f.Add("MEDIA:/tmp/a.png\nhi [[reply_to:7]] there", 1, 20)
	f.Add("```\n[[audio_as_voice]]\n```\n[[audio_as_voice]]", 4, 9)
	f.Add(" \u00a0__SILENT__\u00a0", 2, 4)
	f.Add("[[[reply_to_current]]x\r\n  [[ reply_to : a b ]]  \n", 7, 13)
	f.Fuzz(func(t *testing.T, text string, a, b int) {
		checkStream(t, text, []int{a, b})
	})
}

func FuzzParse(f *testing.F) {
	f.Add("[[reply_to_current]] hi\nMEDIA:/a.png")
	f.Add("```\nMEDIA:/x\n```\n[[reply_to: 1 ]]")
	f.Add("NO_REPLY")
	f.Fuzz(func(t *testing.T, text string) {
		r := Parse(text)
		out, _ := parse(text)
		if !isSubsequence(out, text) {
			t.Fatalf("Parse added text: %q from %q", out, text)
		}
		if r.Silent && (r.Text != "" || r.Media != nil) {
			t.Fatalf("silent reply carries content: %+v", r)
		}
		if !r.Silent && r.Text != strings.TrimSpace(out) {
			t.Fatalf("Text %q is not the trimmed output %q", r.Text, out)
		}
		for _, m := range r.Media {
			if m == "" || strings.ContainsRune(m, '\n') {
				t.Fatalf("bad media %q", m)
			}
		}
	})
}

// isSubsequence reports whether sub can be had from s by deleting bytes.
func isSubsequence(sub, s string) bool {
	i := 0
	for j := 0; j < len(s) && i < len(sub); j++ {
		if s[j] == sub[i] {
			i++
		}
	}
	return i == len(sub)
}
