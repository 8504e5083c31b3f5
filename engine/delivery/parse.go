package delivery

import (
	"strings"

	"github.com/openclaw-edge/edge/engine"
)

// Reply is a model reply made ready for delivery.
type Reply struct {
	// Text is the reply with directives stripped, trimmed. Empty when Silent.
	Text string
	// Media are the attachments named by MEDIA: lines, in order. Empty when
	// Silent.
	Media []string
	// AudioAsVoice asks for attached audio to be sent as a voice note.
	AudioAsVoice bool
	// ReplyToCurrent asks for a native reply to the message being answered.
	ReplyToCurrent bool
	// ReplyTo asks for a native reply to the message with this id (the first
	// [[reply_to:<id>]] wins).
	ReplyTo string
	// Silent means nothing is delivered.
	Silent bool
	// Buttons go under the last chunk where the channel has inline
	// buttons (channel.Outbound.Buttons). Never parsed from model output:
	// only the gateway's own notices carry them.
	Buttons []engine.Button
	// Replace is the id of a streamed preview to edit into the first
	// chunk (channel.Outbound.Replace). Set by the channel side, never
	// parsed.
	Replace string
}

// Parse strips the directives from a complete reply and records what they
// ask for. Text inside code fences is left alone.
func Parse(text string) Reply {
	out, r := parse(text)
	r.Text = strings.TrimSpace(out)
	r.Silent = IsSilent(out) || IsSilent(text)
	if r.Silent {
		r.Text, r.Media = "", nil
	}
	return r
}

// parse returns text with directives stripped but not trimmed: exactly what
// a StreamFilter fed the same text shows.
func parse(text string) (string, Reply) {
	var (
		r   Reply
		b   strings.Builder
		cur *fence
	)
	b.Grow(len(text))
	rest := text
	for {
		line, after, nl := strings.Cut(rest, "\n")
		if cur != nil {
			b.WriteString(line)
			if nl {
				b.WriteByte('\n')
			}
		} else {
			out, had := stripDirectives(line, &r)
			switch {
			case isMediaLine(out):
				if m := mediaTarget(out); m != "" {
					r.Media = append(r.Media, m)
				}
			case had && isBlank(out):
			default:
				b.WriteString(out)
				if nl {
					b.WriteByte('\n')
				}
			}
		}
		cur = nextFence(cur, line)
		if !nl {
			break
		}
		rest = after
	}
	return b.String(), r
}

// stripDirectives removes the directives of one line (no newline in it),
// applying them to r, and reports whether there was any.
func stripDirectives(line string, r *Reply) (string, bool) {
	if !strings.Contains(line, "[[") {
		return line, false
	}
	var b strings.Builder
	had := false
	for i := 0; i < len(line); {
		if line[i] == '[' {
			if d, n, st := matchDirective(line[i:], true); st == matched {
				d.apply(r)
				had = true
				i += n
				for i < len(line) && isHSpace(line[i]) {
					i++
				}
				continue
			}
		}
		b.WriteByte(line[i])
		i++
	}
	return b.String(), had
}

const mediaPrefix = "MEDIA:"

func isMediaLine(s string) bool {
	return strings.HasPrefix(strings.TrimLeft(s, blanks), mediaPrefix)
}

// mediaTarget returns the path or URL of a MEDIA: line, without the quotes
// or backticks a model may have put around it.
func mediaTarget(s string) string {
	t := strings.TrimSpace(strings.TrimPrefix(strings.TrimLeft(s, blanks), mediaPrefix))
	if len(t) >= 2 && strings.ContainsRune(`"'`+"`", rune(t[0])) && t[len(t)-1] == t[0] {
		t = strings.TrimSpace(t[1 : len(t)-1])
	}
	return t
}

// blanks are what a line may hold and still count as empty.
const blanks = " \t\r"

func isBlank(s string) bool { return strings.Trim(s, blanks) == "" }

func isHSpace(c byte) bool { return c == ' ' || c == '\t' }

// directive is one recognized [[…]] directive.
type directive struct {
	kind string // "audio_as_voice", "reply_to_current" or "reply_to"
	id   string
}

func (d directive) apply(r *Reply) {
	switch d.kind {
	case "audio_as_voice":
		r.AudioAsVoice = true
	case "reply_to_current":
		r.ReplyToCurrent = true
	case "reply_to":
		if r.ReplyTo == "" {
			r.ReplyTo = d.id
		}
	}
}

type matchStatus int

const (
	noMatch matchStatus = iota
	needMore
	matched
)

// maxReplyToID bounds a [[reply_to:<id>]] id, which also bounds what a
// StreamFilter holds back while it waits for the closing brackets.
const maxReplyToID = 256

// matchDirective matches a directive at the start of s:
//
//	"[[" ws* ( "audio_as_voice" | "reply_to_current" | "reply_to" ws* ":" ws* id ) ws* "]]"
//
// It returns needMore when s is a proper prefix of a possible directive and
// more input may follow (atEOF false); the answer for any longer s that
// starts with the same bytes is then still open, while matched and noMatch
// never change as s grows.
func matchDirective(s string, atEOF bool) (directive, int, matchStatus) {
	var d directive
	i := 0
	fail := func(st matchStatus) (directive, int, matchStatus) {
		if st == needMore && atEOF {
			st = noMatch
		}
		return directive{}, 0, st
	}
	eat := func(lit string) matchStatus {
		for j := 0; j < len(lit); j++ {
			if i+j >= len(s) {
				return needMore
			}
			if s[i+j] != lit[j] {
				return noMatch
			}
		}
		i += len(lit)
		return matched
	}
	spaces := func() bool { // false when s ran out
		for i < len(s) && isHSpace(s[i]) {
			i++
		}
		return i < len(s)
	}
	if st := eat("[["); st != matched {
		return fail(st)
	}
	if !spaces() {
		return fail(needMore)
	}
	start := i
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] == '_') {
		i++
	}
	name := s[start:i]
	if i == len(s) {
		for _, k := range []string{"audio_as_voice", "reply_to_current", "reply_to"} {
			if strings.HasPrefix(k, name) {
				return fail(needMore)
			}
		}
		return fail(noMatch)
	}
	switch name {
	case "audio_as_voice", "reply_to_current":
		d.kind = name
	case "reply_to":
		d.kind = name
		if !spaces() {
			return fail(needMore)
		}
		if s[i] != ':' {
			return fail(noMatch)
		}
		i++
		idStart := i
		for i < len(s) && s[i] != ']' && s[i] != '[' && s[i] != '\n' {
			if i-idStart >= maxReplyToID {
				return fail(noMatch)
			}
			i++
		}
		if i == len(s) {
			return fail(needMore)
		}
		if s[i] != ']' {
			return fail(noMatch)
		}
		d.id = strings.Trim(s[idStart:i], " \t")
		if d.id == "" {
			return fail(noMatch)
		}
	default:
		return fail(noMatch)
	}
	if !spaces() {
		return fail(needMore)
	}
	if st := eat("]]"); st != matched {
		return fail(st)
	}
	return d, i, matched
}

// fence is an open code fence.
type fence struct {
	char   byte   // '`' or '~'
	n      int    // length of the marker run
	indent string // leading blanks of the opening line
	open   string // the opening line as written, without trailing blanks
}

// openFence reports whether line opens a code fence.
func openFence(line string) (*fence, bool) {
	t := strings.TrimLeft(line, " \t")
	if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return nil, false
	}
	c := t[0]
	n := 0
	for n < len(t) && t[n] == c {
		n++
	}
	if n < 3 || (c == '`' && strings.IndexByte(t[n:], '`') >= 0) {
		return nil, false
	}
	return &fence{char: c, n: n, indent: line[:len(line)-len(t)], open: strings.TrimRight(line, blanks)}, true
}

// closedBy reports whether line closes f: the same marker character, at
// least as many of them, nothing but blanks after.
func (f *fence) closedBy(line string) bool {
	t := strings.TrimLeft(line, " \t")
	n := 0
	for n < len(t) && t[n] == f.char {
		n++
	}
	return n >= f.n && isBlank(t[n:])
}

// closer is the line that closes f.
func (f *fence) closer() string { return f.indent + strings.Repeat(string(f.char), f.n) }

// nextFence returns the fence open after line, given the one open before it.
func nextFence(cur *fence, line string) *fence {
	if cur != nil {
		if cur.closedBy(line) {
			return nil
		}
		return cur
	}
	if f, ok := openFence(line); ok {
		return f
	}
	return nil
}
