// Package delivery turns a model's reply into what a channel may send: it
// recognizes silent replies (NO_REPLY, __SILENT__) and heartbeat acks, strips
// and acts on reply directives (MEDIA: lines, [[audio_as_voice]],
// [[reply_to_current]], [[reply_to:<id>]]), splits long text into chunks that
// fit a channel's limit without breaking code fences, and filters a live
// stream of deltas so that silent replies and directives never flash on
// screen (docs/design.md §3.8).
//
// Choices made where the spec was silent:
//   - Parse and StreamFilter share one grammar and one scanner, so the text a
//     stream shows is exactly the text Parse delivers (before Parse trims it).
//     A directive is removed together with the spaces and tabs that follow it;
//     a line left blank by directive removal is dropped with its newline. A
//     line whose first visible text (after leading blanks and directives) is
//     "MEDIA:" is a media directive and is dropped whole.
//   - Directives are case-sensitive and a reply_to id is at most 256 bytes of
//     anything but ']', '[' and newline; anything else is left as text.
//   - Text inside ``` or ~~~ fences (any indentation, CommonMark closing
//     rules) is never touched. An unclosed fence runs to the end of the text.
//   - A silent reply carries no Text and no Media: nothing is delivered.
//   - Chunks are trimmed: leading blank lines and trailing whitespace at a
//     split are dropped. Fences are closed and reopened across a split only
//     when the fence lines take at most half of the limit; with a tinier
//     limit the size bound wins and the fence is split as is.
package delivery

import (
	"strings"
	"unicode/utf8"
)

// Tokens the model uses to say that nothing should be delivered.
const (
	SilentToken       = "NO_REPLY"
	SilentAltToken    = "__SILENT__"
	HeartbeatOKToken  = "HEARTBEAT_OK"
	HeartbeatMaxExtra = 300 // characters allowed next to HEARTBEAT_OK for the ack to be dropped
)

// Chunk limits in runes (docs/design.md §3.8, §8).
const (
	DefaultChunkLimit = 4000
	CLIChunkLimit     = 20000
)

// IsSilent reports whether a reply must not be delivered: after trimming
// whitespace it is exactly __SILENT__ or it starts with NO_REPLY.
func IsSilent(text string) bool {
	t := strings.TrimSpace(text)
	return t == SilentAltToken || strings.HasPrefix(t, SilentToken)
}

// IsHeartbeatOK reports whether a heartbeat reply is a plain ack that should
// be dropped: HEARTBEAT_OK at the start or the end (Markdown emphasis or
// code marks around the whole reply are ignored) with at most maxExtra other
// characters, not counting surrounding whitespace. A negative maxExtra means
// HeartbeatMaxExtra.
func IsHeartbeatOK(text string, maxExtra int) bool {
	if maxExtra < 0 {
		maxExtra = HeartbeatMaxExtra
	}
	t := strings.Trim(strings.TrimSpace(text), "*_`~")
	var rest string
	switch {
	case strings.HasPrefix(t, HeartbeatOKToken):
		rest = t[len(HeartbeatOKToken):]
	case strings.HasSuffix(t, HeartbeatOKToken):
		rest = t[:len(t)-len(HeartbeatOKToken)]
	default:
		return false
	}
	rest = strings.TrimSpace(strings.Trim(strings.TrimSpace(rest), "*_`~"))
	return utf8.RuneCountInString(rest) <= maxExtra
}
