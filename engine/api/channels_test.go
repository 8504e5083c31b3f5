package api

import "testing"

// TestEscapeID: ids show as themselves only when plain printable ASCII;
// look-alikes, invisible characters and spaces are quoted and escaped, so
// no two different ids ever show alike.
func TestEscapeID(t *testing.T) {
	for in, want := range map[string]string{
		"+15550001111":          "+15550001111",
		"kate@example.com":      "kate@example.com",
		"iMessage;-;+1555":      "iMessage;-;+1555",
		"\u212aate@example.com": `"\u212aate@example.com"`,
		"+1555000111\uff11":     `"+1555000111\uff11"`,
		"+1555\u200b0001111":    `"+1555\u200b0001111"`,
		"\u202e1111":            `"\u202e1111"`,
		"+1 555":                `"+1 555"`,
		"a\x1b[2Jb":             `"a\x1b[2Jb"`,
		`"quoted"`:              `"\"quoted\""`,
		"":                      `""`,
		"\xff":                  `"\xff"`,
	} {
		if got := EscapeID(in); got != want {
			t.Errorf("EscapeID(%q) = %s, want %s", in, got, want)
		}
	}
}

func FuzzEscapeID(f *testing.F) {
	f.Add("kate@example.com", "\u212aate@example.com")
	f.Add("+1 555", `"+1 555"`)
	f.Fuzz(func(t *testing.T, a, b string) {
		d := EscapeID(a)
		for i := 0; i < len(d); i++ {
			if d[i] < 0x20 || d[i] > 0x7e {
				t.Fatalf("EscapeID(%q) = %q", a, d)
			}
		}
		if a != b && d == EscapeID(b) {
			t.Fatalf("%q and %q both show as %s", a, b, d)
		}
	})
}
