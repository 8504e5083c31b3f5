package transcriptfmt

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzHeader: whatever the first line of a foreign transcript holds, the
// header reader returns an error or a header that writes back to a line
// which reads as the same header (unknown fields kept), and checking its
// id never panics.
func FuzzHeader(f *testing.F) {
	for _, s := range []string{
		`{"type":"session","version":3,"id":"0b6c3f52-8d2e-4c43-9a51-2f1c6a7e9d10","timestamp":"2026-01-02T03:04:05.000Z","cwd":"/w"}`,
		`{"type":"session","id":"s","parentSession":"p","x":{"b":[1,2]},"a":null}`,
		`{"type":"session","version":"4"}`,
		`{"Type":"session","ID":"s"}`,
		`{"type":null,"id":null}`,
		`null`, `[]`, `{}`, `{"type":"session","id":"a/b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var h Header
		if err := json.Unmarshal(line, &h); err != nil {
			return
		}
		_ = ValidSessionID(h.ID)
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatalf("header read from %q does not write: %v", line, err)
		}
		var h2 Header
		if err := json.Unmarshal(b, &h2); err != nil {
			t.Fatalf("written header %s does not read: %v", b, err)
		}
		b2, err := json.Marshal(h2)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("header changes when written again:\n%s\n%s (%v)", b, b2, err)
		}
	})
}
