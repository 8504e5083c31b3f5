package transcriptfmt

import (
	"errors"
	"fmt"
)

// MaxIDBytes is the longest session or entry id accepted. OpenClaw writes
// UUIDs (36 bytes) for sessions and 8 hex digits for entries; the bound
// keeps a hostile file from making huge database keys.
const MaxIDBytes = 128

// ValidSessionID checks a session id: 1 to MaxIDBytes bytes of
// [A-Za-z0-9._:-]. OpenClaw's ids are UUIDs; the charset also admits the
// ids older pi versions and hand-made files use, and nothing that could
// escape a file name or a key (no '/', no spaces, no control bytes).
func ValidSessionID(id string) error {
	if id == "" {
		return errors.New("session id is empty")
	}
	if len(id) > MaxIDBytes {
		return fmt.Errorf("session id is %d bytes long, the limit is %d", len(id), MaxIDBytes)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return fmt.Errorf("session id %s has the byte %q at offset %d; allowed are letters, digits and . _ : -", QuoteShort(id), c, i)
		}
	}
	return nil
}

// QuoteShort quotes s, cut to 40 bytes, for an error message.
func QuoteShort(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%q…", s[:40])
	}
	return fmt.Sprintf("%q", s)
}
