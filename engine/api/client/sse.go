package client

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/openclaw-edge/edge/engine/api"
)

// MaxEventBytes bounds one Server-Sent Event (all its lines together), so a
// broken gateway cannot make the CLI buffer without end.
const MaxEventBytes = 8 << 20

// ReadStream reads a message stream (Server-Sent Events whose data is an
// api.Event as JSON) from r until a done or error event, calling on (if not
// nil) for every event. It returns the done event's Result, the error
// event's *api.Error, or ErrStreamEnded when r ends first.
//
// Lines starting with ':' are comments; fields other than "event" and
// "data" are ignored; several data lines join with "\n". When the JSON
// carries no type, the "event:" field names it. Events of unknown types are
// passed to on and otherwise skipped, so a newer gateway can add some.
func ReadStream(r io.Reader, on func(api.Event)) (*api.Result, error) {
	sr := &sseReader{r: bufio.NewReaderSize(r, 16<<10)}
	for {
		name, data, err := sr.next()
		if err == io.EOF {
			return nil, ErrStreamEnded
		}
		if err != nil {
			return nil, err
		}
		var ev api.Event
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, fmt.Errorf("gateway sent a malformed %q event: %w", name, err)
		}
		if ev.Type == "" {
			ev.Type = api.EventType(name)
		}
		if on != nil {
			on(ev)
		}
		switch ev.Type {
		case api.EventDone:
			if ev.Result == nil {
				return nil, errors.New("gateway sent a done event without a result")
			}
			return ev.Result, nil
		case api.EventError:
			if ev.Error == nil || ev.Error.Message == "" {
				return nil, &api.Error{Code: api.CodeInternal, Message: "the gateway reported an error without details"}
			}
			return nil, ev.Error
		}
	}
}

// sseReader splits a text/event-stream into events.
type sseReader struct {
	r *bufio.Reader
}

// next returns the next event that carries data: its "event:" name and its
// data lines joined with "\n". It returns io.EOF at the end of the stream; a
// last event without its closing blank line is dropped, as the SSE
// specification says.
func (s *sseReader) next() (name string, data []byte, err error) {
	var (
		buf     []byte
		hasData bool
		size    int
	)
	for {
		line, err := s.line(MaxEventBytes - size)
		if err != nil {
			return "", nil, err
		}
		size += len(line) + 1
		if len(line) == 0 {
			if hasData {
				return name, buf, nil
			}
			name = "" // an event without data is not dispatched
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			if hasData {
				buf = append(buf, '\n')
			}
			buf = append(buf, value...)
			hasData = true
		}
	}
}

// errEventTooLarge is returned when one event exceeds MaxEventBytes.
var errEventTooLarge = fmt.Errorf("gateway sent an event larger than %d bytes", MaxEventBytes)

// line returns the next line without its "\n" or "\r\n", reading at most
// max bytes.
func (s *sseReader) line(max int) ([]byte, error) {
	var out []byte
	for {
		chunk, err := s.r.ReadSlice('\n')
		if len(out)+len(chunk) > max {
			return nil, errEventTooLarge
		}
		out = append(out, chunk...)
		switch {
		case err == nil:
			out = out[:len(out)-1]
			if n := len(out); n > 0 && out[n-1] == '\r' {
				out = out[:n-1]
			}
			return out, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF, errors.Is(err, io.ErrUnexpectedEOF):
			// A stream must end with a blank line; a partial line is an
			// incomplete event, and a cut connection ends the stream too.
			return nil, io.EOF
		default:
			return nil, fmt.Errorf("read the gateway's stream: %w: %w", ErrConnectionLost, err)
		}
	}
}
