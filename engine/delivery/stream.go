package delivery

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// StreamFilter turns raw model text deltas into text that may be shown live.
// It holds back text while the reply could still turn out silent (a prefix
// of NO_REPLY or __SILENT__), shows nothing once it is silent, and holds back
// directives until they are complete so that they can be dropped. What it
// shows, concatenated, is exactly what Parse would deliver before trimming,
// however the text is split into deltas. It never returns half a UTF-8
// sequence. A StreamFilter serves one stream and is not safe for concurrent
// use.
type StreamFilter struct {
	// Lines, for fence tracking.
	raw   []byte // the current raw line so far
	fence *fence // fence open at the start of the current line

	// Directive stripping (outside fences).
	held   []byte // from a '[' that may start a directive
	skipWS bool   // drop spaces and tabs after a directive

	// Line assembly: leading blanks and a possible "MEDIA:" are held.
	line      []byte
	lineLead  int // leading blanks of line already seen
	lineState int
	had       bool // the current line had a directive

	// Silence detection at the start of the visible text.
	acc     []byte
	accLead int // leading space of acc already seen
	decided bool
	silent  bool

	// Output of the current call, and an incomplete rune kept for the next.
	out     []byte
	partial []byte
}

const (
	lineHold  = iota // blanks so far, or a proper prefix of "MEDIA:"
	lineMedia        // a MEDIA: line, dropped at its end
	linePass         // anything else: passes through
)

// NewStreamFilter returns a filter for one reply stream.
func NewStreamFilter() *StreamFilter { return &StreamFilter{} }

// Write takes the next delta and returns the text that is safe to show now.
func (f *StreamFilter) Write(delta string) string {
	if f.silent {
		return ""
	}
	for i := 0; i < len(delta); i++ {
		f.feed(delta[i])
	}
	return f.take(false)
}

// Flush ends the stream and returns whatever was held back and turned out
// to be neither silent nor a directive.
func (f *StreamFilter) Flush() string {
	if f.silent {
		return ""
	}
	f.drain(true)
	f.endLine(false)
	if !f.decided && !f.silent {
		if IsSilent(string(f.acc)) {
			f.silent = true
		} else {
			f.out = append(f.out, f.acc...)
		}
		f.acc = nil
		f.decided = true
	}
	return f.take(true)
}

// Silent reports whether the reply turned out silent: nothing was and nothing
// will be shown.
func (f *StreamFilter) Silent() bool { return f.silent }

// take returns the output gathered since the last call, keeping back an
// incomplete trailing rune unless final.
func (f *StreamFilter) take(final bool) string {
	if f.silent {
		f.out, f.partial = f.out[:0], nil
		return ""
	}
	buf := append(f.partial, f.out...)
	f.out, f.partial = f.out[:0], nil
	if !final {
		// Find where the last rune starts; keep it if it is incomplete.
		for k := len(buf) - 1; k >= 0 && k >= len(buf)-utf8.UTFMax; k-- {
			if utf8.RuneStart(buf[k]) {
				if !utf8.FullRune(buf[k:]) {
					f.partial = append([]byte(nil), buf[k:]...)
					buf = buf[:k]
				}
				break
			}
		}
	}
	return string(buf)
}

// feed routes one raw byte.
func (f *StreamFilter) feed(c byte) {
	if f.fence != nil {
		f.emit(c) // inside a code fence nothing is touched
	} else {
		f.held = append(f.held, c)
		f.drain(false)
	}
	if c == '\n' {
		f.fence = nextFence(f.fence, string(f.raw))
		f.raw = f.raw[:0]
	} else {
		f.raw = append(f.raw, c)
	}
}

// drain passes on the held bytes that are decided: a complete directive is
// dropped, anything that cannot start one goes on to line assembly.
func (f *StreamFilter) drain(atEOF bool) {
	for len(f.held) > 0 {
		if f.held[0] == '[' {
			// Directives are acted on by Parse on the complete reply; the
			// stream only hides them.
			_, n, st := matchDirective(string(f.held), atEOF)
			switch st {
			case needMore:
				return
			case matched:
				f.held = f.held[n:]
				f.had, f.skipWS = true, true
				continue
			}
		}
		c := f.held[0]
		f.held = f.held[1:]
		if f.skipWS {
			if isHSpace(c) {
				continue
			}
			f.skipWS = false
		}
		f.assemble(c)
	}
}

// assemble handles one byte of a line outside fences, after directives.
func (f *StreamFilter) assemble(c byte) {
	if c == '\n' {
		f.endLine(true)
		return
	}
	switch f.lineState {
	case linePass:
		f.emit(c)
	case lineMedia:
	case lineHold:
		f.line = append(f.line, c)
		t := bytes.TrimLeft(f.line[f.lineLead:], blanks)
		f.lineLead = len(f.line) - len(t)
		switch {
		case len(t) == 0, len(t) < len(mediaPrefix) && bytes.HasPrefix([]byte(mediaPrefix), t):
		case bytes.HasPrefix(t, []byte(mediaPrefix)):
			f.lineState = lineMedia
			f.line = f.line[:0]
		default:
			f.lineState = linePass
			for _, b := range f.line {
				f.emit(b)
			}
			f.line = f.line[:0]
		}
	}
}

// endLine finishes a line outside fences: a MEDIA: line, or one that held
// only directives and blanks, is dropped with its newline.
func (f *StreamFilter) endLine(nl bool) {
	drop := f.lineState == lineMedia || (f.lineState == lineHold && f.had && isBlank(string(f.line)))
	if !drop {
		for _, b := range f.line {
			f.emit(b)
		}
		if nl {
			f.emit('\n')
		}
	}
	f.line, f.lineLead = f.line[:0], 0
	f.lineState = lineHold
	f.had, f.skipWS = false, false
}

// emit passes one visible byte through silence detection.
func (f *StreamFilter) emit(c byte) {
	switch {
	case f.silent:
	case f.decided:
		f.out = append(f.out, c)
	default:
		f.acc = append(f.acc, c)
		f.accLead = len(f.acc) - len(bytes.TrimLeftFunc(f.acc[f.accLead:], unicode.IsSpace))
		switch silentState(f.acc[f.accLead:]) {
		case needMore:
		case matched:
			f.silent = true
			f.acc = nil
		default:
			f.decided = true
			f.out = append(f.out, f.acc...)
			f.acc = nil
		}
	}
}

// silentState says whether text that starts a reply is silent already
// (matched), cannot be (noMatch), or could still be (needMore): it agrees
// with IsSilent on the complete reply whatever follows. Leading space has
// been cut from t already.
func silentState(t []byte) matchStatus {
	t = trimLeftSpace(t)
	if t == nil {
		return needMore
	}
	if bytes.HasPrefix(t, []byte(SilentToken)) {
		return matched
	}
	if bytes.HasPrefix([]byte(SilentToken), t) {
		return needMore
	}
	if rest, ok := bytes.CutPrefix(t, []byte(SilentAltToken)); ok {
		// Exactly __SILENT__ once trailing space is trimmed: wait for the
		// end. Only the last rune is new, so look at the tail alone.
		if len(rest) == 0 || trimLeftSpace(rest[lastRuneStart(rest):]) == nil {
			return needMore
		}
		return noMatch
	}
	if bytes.HasPrefix([]byte(SilentAltToken), t) {
		return needMore
	}
	return noMatch
}

// lastRuneStart returns where the last (possibly incomplete) rune of b
// starts.
func lastRuneStart(b []byte) int {
	for k := len(b) - 1; k >= 0 && k >= len(b)-utf8.UTFMax; k-- {
		if utf8.RuneStart(b[k]) {
			return k
		}
	}
	return max(0, len(b)-1)
}

// trimLeftSpace trims leading Unicode space as strings.TrimSpace does. It
// returns nil when nothing but space is left, or when what is left starts
// with an incomplete rune that might still turn out to be space.
func trimLeftSpace(b []byte) []byte {
	t := bytes.TrimLeftFunc(b, unicode.IsSpace)
	if len(t) == 0 || (t[0] >= utf8.RuneSelf && !utf8.FullRune(t)) {
		return nil
	}
	return t
}
