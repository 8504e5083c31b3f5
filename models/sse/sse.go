// Package sse reads Server-Sent Events, the text/event-stream format that the
// OpenAI-compatible and Anthropic APIs stream their replies in (WHATWG HTML
// §9.2). It only parses; what an event means is the provider's business.
//
// Choices where the spec is silent or where servers stray from it:
//   - A line is bounded (MaxLine, 16 MiB by default): a server that never
//     sends a newline cannot make us buffer without end.
//   - At the end of the body a pending event whose last line was complete is
//     still delivered (the spec drops it); some servers close right after
//     "data: [DONE]\n" without the blank line. A final line cut off without
//     its newline is io.ErrUnexpectedEOF: it may be a truncated chunk.
//   - llama-server writes stream errors as an "error: {…}" field instead of
//     "event: error\ndata: {…}"; such a field becomes an event of Type
//     "error" with the value as Data, so callers handle both alike.
//   - id and retry fields are ignored: model streams are never resumed.
//   - Lines end in "\n" or "\r\n"; a lone "\r" is not treated as a line end.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLine is the longest line a Reader accepts unless told otherwise.
const DefaultMaxLine = 16 << 20

// Event is one dispatched event.
type Event struct {
	// Type is the "event:" field; empty means the default "message".
	Type string
	// Data holds the "data:" lines joined by "\n". It is only valid until
	// the next call to Next.
	Data []byte
}

// Reader reads events from a text/event-stream body.
type Reader struct {
	// MaxLine bounds one line in bytes; zero means DefaultMaxLine.
	MaxLine int

	br       *bufio.Reader
	line     []byte // scratch for lines longer than the bufio buffer
	data     []byte
	typ      string
	lastType string
	hasData  bool
	started  bool
}

// NewReader returns a Reader reading from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 32<<10)}
}

// ErrLineTooLong is returned when a line exceeds MaxLine.
var ErrLineTooLong = errors.New("sse: line too long")

// Next returns the next event. It returns io.EOF when the body ended cleanly
// between events, io.ErrUnexpectedEOF when it ended inside a line, or the
// underlying read error.
func (r *Reader) Next() (Event, error) {
	r.data = r.data[:0]
	r.typ = ""
	r.hasData = false
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				// A final line without its newline: possibly cut off.
				return Event{}, io.ErrUnexpectedEOF
			}
			if err == io.EOF && r.hasData {
				return Event{Type: r.typ, Data: r.data}, nil
			}
			return Event{}, err
		}
		line = trimEOL(line)
		if !r.started {
			r.started = true
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if len(line) == 0 {
			if r.hasData {
				return Event{Type: r.typ, Data: r.data}, nil
			}
			r.typ = "" // an event with no data is dropped, its type too
			continue
		}
		if line[0] == ':' {
			continue // comment, used as keep-alive
		}
		field, value, ok := bytes.Cut(line, []byte(":"))
		if ok && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "data":
			r.appendData(value)
		case "event":
			r.typ = r.intern(value)
		case "error":
			r.typ = "error"
			r.appendData(value)
		}
	}
}

// intern returns v as a string, reusing the last one when equal: event
// names repeat, and a string per event is most of this reader's garbage.
func (r *Reader) intern(v []byte) string {
	if string(v) != r.lastType {
		r.lastType = string(v)
	}
	return r.lastType
}

func (r *Reader) appendData(v []byte) {
	if r.hasData {
		r.data = append(r.data, '\n')
	}
	r.data = append(r.data, v...)
	r.hasData = true
}

// readLine returns the next line including its newline. At the end of the
// body it returns what is left (possibly nothing) with io.EOF.
func (r *Reader) readLine() ([]byte, error) {
	max := r.MaxLine
	if max <= 0 {
		max = DefaultMaxLine
	}
	chunk, err := r.br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		if len(chunk) > max {
			return nil, fmt.Errorf("%w (over %d bytes)", ErrLineTooLong, max)
		}
		return chunk, err
	}
	r.line = append(r.line[:0], chunk...)
	for {
		chunk, err = r.br.ReadSlice('\n')
		if len(r.line)+len(chunk) > max {
			return nil, fmt.Errorf("%w (over %d bytes)", ErrLineTooLong, max)
		}
		r.line = append(r.line, chunk...)
		if err != bufio.ErrBufferFull {
			return r.line, err
		}
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}
