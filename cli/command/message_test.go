package command

import "testing"

func TestTermSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain text\nline 2\tx":    "plain text\nline 2\tx",
		"héllo 👋 日本":               "héllo 👋 日本",
		"\x1b]52;c;ZXZpbA==\x07ok": "]52;c;ZXZpbA==ok",
		"\x1b[8mhidden\x1b[0m":     "[8mhidden[0m",
		"a\x9b31mb\x7fc\x00d":      "a31mbcd",
		"crlf\r\n":                 "crlf\r\n",
	} {
		if got := termSafe(in); got != want {
			t.Errorf("termSafe(%q) = %q, want %q", in, got, want)
		}
	}
}
