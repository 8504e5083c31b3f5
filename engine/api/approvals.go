package api

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Decisions an owner may give a pending approval (the values of
// tool.Decision; api does not import the tools).
const (
	DecisionAllowOnce   = "allow-once"   // run it once, in the sandbox
	DecisionAllowAlways = "allow-always" // run it and add it to the agent's allowlist
	DecisionElevated    = "elevated"     // run it once outside the sandbox
	DecisionDeny        = "deny"
)

// Decisions lists the valid decisions, for messages and completion.
var Decisions = []string{DecisionAllowOnce, DecisionAllowAlways, DecisionElevated, DecisionDeny}

// ApprovalDecision is the body of POST /v1/approvals/{id}.
type ApprovalDecision struct {
	Decision string `json:"decision"` // one of Decisions
}

// ApprovalResult answers POST /v1/approvals/{id}: the approval that was
// decided and the decision it got.
type ApprovalResult struct {
	Decision string   `json:"decision"`
	Approval Approval `json:"approval"`
}

// AllowEntry is one command of an agent's exec allowlist (GET, POST and
// DELETE /v1/approvals/allowlist). It matches exactly: Path (argv[0]
// resolved, symlinks followed) and the whole Argv, or, for a command that
// is not one simple command, its exact Command text.
//
// On POST, an entry with Argv but no Path has argv[0] resolved on the
// gateway's machine (its PATH, then symlinks), so the entry matches what the
// exec tool will see there.
type AllowEntry struct {
	AgentID string    `json:"agent"`
	Path    string    `json:"path,omitempty"`
	Argv    []string  `json:"argv,omitempty"`
	Command string    `json:"command,omitempty"`
	AddedAt time.Time `json:"addedAt,omitzero"`
}

// AllowRemoved answers DELETE /v1/approvals/allowlist.
type AllowRemoved struct {
	Removed AllowEntry `json:"removed"`
}

// EscapeControl makes s safe to show on a terminal or in a chat: every
// character that could hide or rewrite text — C0 and C1 controls (\r, \b,
// ESC starting ANSI sequences…), DEL, bidirectional overrides and isolates
// (U+202E…), zero-width and other format characters, line and paragraph
// separators, non-ASCII spaces, and bytes that are not UTF-8 — is written as
// a visible Go-style escape (\r, \x1b, \u202e, \xff). Printable text,
// including non-Latin scripts, stays as it is. A backslash is doubled, so
// the escaped text is unambiguous: "\x1b" on screen always means one ESC
// character, never the four characters a command could contain literally.
//
// Every display of an approval (CLI, slash-command replies, /status) goes
// through this one function; the JSON keeps the raw strings so scripts see
// exactly what runs.
func EscapeControl(s string) string {
	if isPlain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			fmt.Fprintf(&b, `\x%02x`, s[i])
			i++
			continue
		}
		i += size
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\a':
			b.WriteString(`\a`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\v':
			b.WriteString(`\v`)
		case r < 0x80 && (r < 0x20 || r == 0x7f):
			fmt.Fprintf(&b, `\x%02x`, r)
		case visible(r):
			b.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	return b.String()
}

// isPlain reports whether s is printable ASCII without a backslash, the
// common case, which needs no copy.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

// visible reports whether r shows as itself: graphic characters and the
// ASCII space. unicode.IsPrint already excludes controls, format characters
// (Cf: bidi overrides, zero-width joiners, U+FEFF), separators other than
// U+0020, private-use and unassigned code points; the explicit list guards
// the ones that must never pass even if a Unicode update recategorises them.
//
// Default-ignorable code points that are not format characters (Hangul
// fillers U+115F, U+3164, U+FFA0, the combining grapheme joiner U+034F,
// variation selectors) and the blank Braille pattern U+2800 show as
// nothing or as a blank: they are escaped too, so "rm\u3164-rf" cannot
// pass for one word or "rm -rf".
func visible(r rune) bool {
	switch {
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c,
		r >= 0x200b && r <= 0x200d, r == 0x2060, r == 0xfeff, r == 0x2028, r == 0x2029, r == 0x2800:
		return false
	case r >= 0x80 && (unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Variation_Selector, r)):
		return false
	}
	return unicode.IsPrint(r)
}

// EscapeLimit is EscapeControl with the escaped text cut to at most n
// bytes where it would be longer, the cut said in words: "… (N more
// bytes)", N counting the bytes of s left out. It never folds or drops a
// character silently: for places with little room (a chat notice), where
// the full text stays available elsewhere (the CLI, --json).
func EscapeLimit(s string, n int) string {
	e := EscapeControl(s)
	if len(e) <= n {
		return e
	}
	var b strings.Builder
	i := 0
	for i < len(s) {
		_, size := utf8.DecodeRuneInString(s[i:])
		piece := EscapeControl(s[i : i+size]) // one character, or one bad byte
		if b.Len()+len(piece) > n {
			break
		}
		b.WriteString(piece)
		i += size
	}
	return fmt.Sprintf("%s… (%d more bytes)", b.String(), len(s)-i)
}

// EscapeArgv shows argv as one line: each argument escaped, and quoted when
// it is empty or holds a space or a quote, so argument boundaries stay
// visible ("printf" "a b" shows as printf 'a b').
func EscapeArgv(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		e := EscapeControl(a)
		if e == "" || strings.ContainsAny(e, " '\"") {
			e = "'" + strings.ReplaceAll(e, "'", `'\''`) + "'"
		}
		parts[i] = e
	}
	return strings.Join(parts, " ")
}
