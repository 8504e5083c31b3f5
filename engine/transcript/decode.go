package transcript

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// LineError is a transcript that does not parse, with the 1-based line
// where reading stopped.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Decoder reads a transcript one line at a time, so a transcript of any
// size is read in memory bounded by its longest line (MaxLineBytes) plus
// the set of entry ids seen. It checks what Parse checks: the header
// first, unique ids, parents that name earlier entries. Every error is a
// *LineError.
type Decoder struct {
	r       *bufio.Reader
	buf     []byte
	line    int
	n       int64 // bytes read, whole lines
	h       Header
	gotHead bool
	seen    map[string]bool
	last    string   // id of the previous entry, for version 1 chaining
	byIndex []string // version 1: entry id by index in the file (header 0), for firstKeptEntryIndex
	err     error    // sticky
}

// NewDecoder returns a Decoder reading from r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, 64<<10), seen: map[string]bool{}}
}

// Line returns the number of the last line read.
func (d *Decoder) Line() int { return d.line }

// BytesRead returns how many bytes of whole lines have been read, for
// batching writes by size.
func (d *Decoder) BytesRead() int64 { return d.n }

// Header reads up to and including the session header and returns it.
func (d *Decoder) Header() (Header, error) {
	if d.gotHead {
		return d.h, nil
	}
	if d.err != nil {
		return Header{}, d.err
	}
	for {
		b, err := d.readLine()
		if err == io.EOF {
			return Header{}, d.fail(&LineError{Line: 1, Err: errors.New("empty transcript: no session header")})
		}
		if err != nil {
			return Header{}, d.fail(err)
		}
		if len(b) == 0 {
			continue
		}
		if err := d.header(b); err != nil {
			return Header{}, d.fail(&LineError{Line: d.line, Err: err})
		}
		d.gotHead = true
		return d.h, nil
	}
}

func (d *Decoder) header(b []byte) error {
	var h Header
	if err := json.Unmarshal(b, &h); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if h.Type != "session" {
		return fmt.Errorf("first line must be the session header (type \"session\"), got type %q", h.Type)
	}
	if h.Version < 1 || h.Version > Version {
		if h.Version > Version {
			return fmt.Errorf("unsupported transcript version %d (want 1..%d): a newer OpenClaw wrote it; update openclaw-edge to read it", h.Version, Version)
		}
		return fmt.Errorf("unsupported transcript version %d (want 1..%d)", h.Version, Version)
	}
	if h.ID == "" {
		return errors.New("header has no session id")
	}
	if err := ValidSessionID(h.ID); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	d.h = h
	if h.Version == 1 {
		d.byIndex = []string{""}
	}
	return nil
}

// Next returns the next entry, io.EOF after the last one.
func (d *Decoder) Next() (Entry, error) {
	if _, err := d.Header(); err != nil {
		return Entry{}, err
	}
	if d.err != nil {
		return Entry{}, d.err
	}
	for {
		b, err := d.readLine()
		if err != nil {
			return Entry{}, d.fail(err)
		}
		if len(b) == 0 {
			continue
		}
		e, err := d.entry(b)
		if err != nil {
			return Entry{}, d.fail(&LineError{Line: d.line, Err: err})
		}
		return e, nil
	}
}

func (d *Decoder) entry(b []byte) (Entry, error) {
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return Entry{}, err
	}
	if e.Type == "" {
		return Entry{}, errors.New("entry has no type")
	}
	if e.Type == "session" {
		return Entry{}, errors.New("a second session header")
	}
	if d.h.Version == 1 {
		if e.ID == "" {
			// Version 1 had no tree: chain entries in file order. The id
			// is derived from the session id and the entry's place, so
			// reading the file twice gives the same ids and a second
			// import is recognized as the same transcript.
			e.ID = d.v1ID(len(d.byIndex))
			e.ParentID = d.last
		}
		if err := d.firstKeptIndex(&e); err != nil {
			return Entry{}, err
		}
	}
	if d.h.Version < 3 {
		if err := migrateHookMessage(&e); err != nil {
			return Entry{}, err
		}
	}
	if err := checkEntry(e, d.seen); err != nil {
		return Entry{}, err
	}
	d.seen[e.ID] = true
	d.last = e.ID
	if d.byIndex != nil {
		d.byIndex = append(d.byIndex, e.ID)
	}
	return e, nil
}

// v1ID returns the id of the i-th line of a version 1 transcript: 8 hex
// digits of a hash of the session id and i, or a random one if taken.
func (d *Decoder) v1ID(i int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", d.h.ID, i))
	if id := hex.EncodeToString(sum[:4]); !d.seen[id] {
		return id
	}
	return uniqueID(d.seen)
}

// firstKeptIndex turns a version 1 compaction's firstKeptEntryIndex (an
// index into the file's lines, the header being 0) into firstKeptEntryId,
// as OpenClaw's migration does. An index naming no earlier entry is left
// as it is.
func (d *Decoder) firstKeptIndex(e *Entry) error {
	raw, ok := e.Extra["firstKeptEntryIndex"]
	if e.Type != EntryCompaction || !ok {
		return nil
	}
	var i int
	if err := json.Unmarshal(raw, &i); err != nil {
		return nil // not a number: OpenClaw leaves it too
	}
	if i <= 0 || i >= len(d.byIndex) {
		return nil
	}
	e.FirstKeptEntryID = d.byIndex[i]
	delete(e.Extra, "firstKeptEntryIndex")
	return nil
}

// migrateHookMessage renames a version 1–2 "hookMessage" to a "custom"
// message with customType "hook" unless it has one, in the raw JSON too.
func migrateHookMessage(e *Entry) error {
	if e.Type != EntryMessage || e.Message == nil || e.Message.Role != roleHookMessage {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(e.rawMessage, &m); err != nil {
		return fmt.Errorf("message: %w", err)
	}
	m["role"] = json.RawMessage(`"custom"`)
	var ct string
	if raw, ok := m["customType"]; ok {
		_ = json.Unmarshal(raw, &ct) // a non-string reads as none
	}
	if ct == "" {
		m["customType"] = json.RawMessage(`"hook"`)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("message: %w", err)
	}
	e.rawMessage = b
	e.Message.Role = RoleCustom
	return nil
}

func (d *Decoder) fail(err error) error {
	d.err = err
	return err
}

// readLine returns the next line without surrounding white space, io.EOF
// at the end. The slice is valid until the next call.
func (d *Decoder) readLine() ([]byte, error) {
	if cap(d.buf) > 1<<20 {
		d.buf = nil // do not keep the buffer of one huge line for the rest
	}
	d.buf = d.buf[:0]
	for {
		frag, err := d.r.ReadSlice('\n')
		if len(d.buf)+len(frag) > MaxLineBytes+2 { // + "\r\n"
			return nil, &LineError{Line: d.line + 1, Err: fmt.Errorf("longer than %d bytes (a single transcript line is limited to %d MiB)", MaxLineBytes, MaxLineBytes>>20)}
		}
		d.buf = append(d.buf, frag...)
		switch {
		case err == nil:
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(d.buf) > 0:
			// The last line may lack its newline.
		case err == io.EOF:
			return nil, io.EOF
		default:
			return nil, &LineError{Line: d.line + 1, Err: fmt.Errorf("read: %w", err)}
		}
		d.line++
		d.n += int64(len(d.buf))
		b := bytes.TrimSpace(d.buf)
		if len(b) > MaxLineBytes {
			return nil, &LineError{Line: d.line, Err: fmt.Errorf("longer than %d bytes (a single transcript line is limited to %d MiB)", MaxLineBytes, MaxLineBytes>>20)}
		}
		return b, nil
	}
}
