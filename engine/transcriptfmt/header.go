package transcriptfmt

import (
	"encoding/json"
	"errors"
)

// MaxLineBytes is the longest line transcript.Parse accepts.
const MaxLineBytes = 16 << 20

// Header is the first line of a transcript.
type Header struct {
	Type          string // always "session"
	Version       int
	ID            string // the session id
	Timestamp     string
	Cwd           string
	ParentSession string
	// Extra holds fields this package does not know, kept for export.
	Extra map[string]json.RawMessage
}

var headerKeys = []string{"type", "version", "id", "timestamp", "cwd", "parentSession"}

// MarshalJSON writes the header with its known fields first, then Extra.
func (h Header) MarshalJSON() ([]byte, error) {
	var o Object
	typ := h.Type
	if typ == "" {
		typ = "session"
	}
	o.Add("type", typ)
	o.Add("version", h.Version)
	o.Add("id", h.ID)
	o.Add("timestamp", h.Timestamp)
	o.Add("cwd", h.Cwd)
	if h.ParentSession != "" {
		o.Add("parentSession", h.ParentSession)
	}
	o.Extra(h.Extra, headerKeys)
	return o.Bytes()
}

// UnmarshalJSON reads a header, keeping unknown fields in Extra. A missing
// version reads as 1.
func (h *Header) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if m == nil {
		return errors.New("header is null")
	}
	var out Header
	if err := TakeFields(m, map[string]any{
		"type": &out.Type, "version": &out.Version, "id": &out.ID,
		"timestamp": &out.Timestamp, "cwd": &out.Cwd, "parentSession": &out.ParentSession,
	}); err != nil {
		return err
	}
	if _, ok := m["version"]; !ok {
		out.Version = 1
	}
	out.Extra = Rest(m, headerKeys)
	*h = out
	return nil
}
