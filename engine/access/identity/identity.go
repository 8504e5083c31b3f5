// Package identity is the pure half of package access: the one identity
// canonicalization that sender and chat ids from the wire and the ids the
// owner types in the config go through, and the check of the config keys
// that list those ids (commands.ownerAllowFrom and every channel account's
// dmPolicy, allowFrom, groupPolicy, groupAllowFrom and groups). It imports
// only the standard library, so that package config (and with it
// `openclaw config validate`, in the CLI and in the gateway) applies
// exactly the rules the gateway applies at start (access.Policy.Validate),
// without linking the channel vocabulary: one rule, never two copies.
//
// # Identity
//
// Canonical is the one place sender and chat ids are made comparable.
// Adapters hand the platform's id over untouched; Canonical, applied by
// package access (owners, allowFrom, groupAllowFrom, groups.<id>.allowFrom,
// the groups map, pairing requests and approvals) and by package routing
// (session keys, binding peers), either yields an ID or refuses. The rules
// are deliberately few, so that an attacker who controls every byte of an
// id can only ever equal an owner by sending the owner's id:
//
//   - Refused: the empty id, invalid UTF-8, more than MaxIDBytes bytes.
//     A refused sender is nobody: never an owner, never listed, never
//     approved, never given a pairing code.
//   - Verbatim: an id with any byte outside printable ASCII (non-ASCII
//     letters, look-alikes such as U+212A KELVIN SIGN or Cyrillic "а",
//     full-width or Arabic-Indic digits, control characters, bidi and
//     zero-width format characters, U+00AD soft hyphen, non-ASCII spaces).
//     Its key is the id byte for byte: nothing is folded, normalized
//     (no NFC/NFKC) or stripped, so it can never equal an ASCII id.
//   - Phone: "+" and 7 to 15 ASCII digits, the first not "0" (E.164:
//     country codes never start with 0, at most 15 digits; 7 is the
//     shortest real number, e.g. Niue's). Key: the id itself. Anything
//     else that starts with "+" ("+15550001111x", "+1555…;ext=2",
//     "+1 555 000 1111", "+015550001111") is not a phone number and is
//     compared as an opaque id: never cleaned into one.
//   - Every other printable-ASCII id (addresses with "@", JIDs, chat ids,
//     chat GUIDs, short codes, the "00"-prefixed or national numbers
//     some SMS senders show) is compared with its ASCII letters folded to
//     lower case, and nothing else changed: e-mail addresses and
//     iMessage's e-mail handles are case-insensitive in practice, and
//     every other id form our platforms send is digits or case-insensitive
//     (Apple's chat GUIDs, WhatsApp JIDs). OpenClaw lower-cases the same
//     ids in session keys.
//   - On Telegram, ids are decimal numbers; a config entry must be one
//     (or, in a sender list, "@username": Handle), and an owner must be
//     an id, never a username, which its holder can give up and
//     anyone can then take.
//   - On WhatsApp, a phone-number JID "<E.164 digits>@s.whatsapp.net" (or
//     the legacy "@c.us") is the phone number "+<digits>": the adapter
//     reports senders that way already, and an owner may list either form.
//     A JID with a device part, a LID ("…@lid") or a group ("…@g.us") is
//     an opaque id.
//
// Config entries (ownerAllowFrom, allowFrom, groupAllowFrom, the keys of
// groups) are typed by the owner and are tidied first (ConfigID): outer
// ASCII white space trimmed, a "mailto:"/"tel:" scheme dropped, and a
// phone number written "+1 (555) 000-1111" (ASCII spaces, dashes, dots
// and parentheses only) read as "+15550001111"; on WhatsApp digits without
// the "+" too. An entry that starts with "+" and is not a phone number
// after that, or that has control, format or non-ASCII white-space
// characters, is a config error (Owner, Keys.Check), not an id that
// silently never matches. Ids from the wire are never tidied.
//
// Ids are shown to people (logs, pairing lists, the owner's pairing note)
// through Display: plain printable ASCII as it is, anything else Go-quoted
// with every non-ASCII character escaped ("\u212aate@example.com").
//
// # Access keys
//
// Owner reads one commands.ownerAllowFrom entry and Keys.Check one channel
// account's access keys; both say what is wrong and leave naming the key's
// full path (and line) to the caller. The checks: dmPolicy and groupPolicy
// values, dmPolicy "allowlist" with no allowFrom entry (it would answer
// nobody but the owners, silently), every entry through ConfigID ("*"
// aside, and a "<channel>:" prefix as access accepts it), and no two keys
// of groups naming the same group in canonical form (which one applied
// would depend on map order).
package identity

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxIDBytes bounds an id: longer ones are refused (no platform sends
// them; imsg's own bound on a field is the same).
const MaxIDBytes = 1024

// Kind is what Canonical recognised an id as.
type Kind int

// Kinds of id.
const (
	// Opaque: printable ASCII, compared with ASCII letters folded.
	Opaque Kind = iota
	// Phone: E.164, "+" and 7 to 15 digits.
	Phone
	// Verbatim: has a byte outside printable ASCII; compared byte for byte.
	Verbatim
)

func (k Kind) String() string { return [...]string{"opaque", "phone", "verbatim"}[k] }

// ID is a canonical id. Two ids of one channel are the same sender (or
// chat) exactly when their Keys are equal.
type ID struct {
	Kind Kind
	// Key is the comparison form. A Verbatim key may hold any bytes: show
	// it with Display, never raw.
	Key string
}

// String shows the id for logs and people: Display of its key.
func (id ID) String() string { return Display(id.Key) }

// ErrUnusableID is wrapped by Canonical's refusals.
var ErrUnusableID = errors.New("unusable id")

// Canonical is the canonical form of raw, an id as the platform of channel
// ch sent it (a sender or a chat id), or a refusal wrapping ErrUnusableID.
// See the rules above; raw is never trimmed or cleaned.
func Canonical(ch, raw string) (ID, error) {
	switch {
	case raw == "":
		return ID{}, fmt.Errorf("%w: empty", ErrUnusableID)
	case len(raw) > MaxIDBytes:
		return ID{}, fmt.Errorf("%w: %d bytes, more than %d", ErrUnusableID, len(raw), MaxIDBytes)
	case !utf8.ValidString(raw):
		return ID{}, fmt.Errorf("%w: %s is not valid UTF-8", ErrUnusableID, Display(raw))
	}
	if !printableASCII(raw) {
		return ID{Kind: Verbatim, Key: raw}, nil
	}
	if isE164(raw) {
		return ID{Kind: Phone, Key: raw}, nil
	}
	if ch == "whatsapp" {
		if user, server, ok := strings.Cut(raw, "@"); ok && isE164("+"+user) {
			switch FoldASCII(server) {
			case "s.whatsapp.net", "c.us":
				return ID{Kind: Phone, Key: "+" + user}, nil
			}
		}
	}
	return ID{Kind: Opaque, Key: FoldASCII(raw)}, nil
}

// Handle is the canonical form of a sender's username on channel ch as
// an allowFrom entry names it: "@" and the name, ASCII letters folded
// (Telegram's usernames are 5 to 32 of [A-Za-z0-9_] and case-insensitive).
// Only Telegram has them here; anything else, or a name outside that
// alphabet, is refused and so matches no entry.
func Handle(ch, username string) (ID, error) {
	if ch != "telegram" || !telegramUsername(username) {
		return ID{}, fmt.Errorf("%w: no usable username", ErrUnusableID)
	}
	return ID{Kind: Opaque, Key: "@" + FoldASCII(username)}, nil
}

// telegramUsername reports whether s is a Telegram username without its
// "@": 4 to 32 of [A-Za-z0-9_] (bots' and some old names are shorter
// than the 5 new ones need).
func telegramUsername(s string) bool {
	if len(s) < 4 || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// ConfigID is the canonical form of a config entry the owner typed for
// channel ch (an ownerAllowFrom id without its "<channel>:", an allowFrom
// entry, a groups key): tidied as the package doc says, then Canonical.
// It refuses what is surely a typing mistake rather than let it match
// nothing (or, worse, something) silently.
func ConfigID(ch, entry string) (ID, error) {
	e := strings.Trim(entry, " \t\r\n")
	if i := strings.IndexFunc(e, invisible); i >= 0 {
		r, _ := utf8.DecodeRuneInString(e[i:])
		return ID{}, fmt.Errorf("%s has the invisible character U+%04X at byte %d", strconv.QuoteToASCII(entry), r, i)
	}
	for _, scheme := range []string{"mailto:", "tel:"} {
		if len(e) > len(scheme) && FoldASCII(e[:len(scheme)]) == scheme {
			e = e[len(scheme):]
		}
	}
	// "Kate <kate@example.com>" would be an opaque id no sender ever has:
	// the owner would get pairing codes instead of answers.
	if strings.Contains(e, "@") && strings.ContainsAny(e, "<>\" \t,") {
		return ID{}, fmt.Errorf("%s: write the bare address (kate@example.com), without a display name, quotes, angle brackets or spaces", strconv.QuoteToASCII(entry))
	}
	if strings.HasPrefix(e, "+") || ch == "whatsapp" && e != "" && strings.Trim(e, "0123456789 -.()") == "" {
		digits := strings.Map(func(r rune) rune {
			switch r {
			case ' ', '-', '.', '(', ')':
				return -1
			}
			return r
		}, strings.TrimPrefix(e, "+"))
		if !isE164("+" + digits) {
			return ID{}, fmt.Errorf("%s is not a phone number in international form: \"+\", then 7 to 15 ASCII digits, the first not 0 (spaces, dashes, dots and parentheses may separate them; no letters or extensions)", strconv.QuoteToASCII(entry))
		}
		e = "+" + digits
	}
	if ch == "telegram" {
		if name, ok := strings.CutPrefix(e, "@"); ok {
			if !telegramUsername(name) {
				return ID{}, fmt.Errorf("%s is not a Telegram username: \"@\" and 4 to 32 letters, digits or _", strconv.QuoteToASCII(entry))
			}
		} else if _, err := strconv.ParseInt(e, 10, 64); err != nil {
			return ID{}, fmt.Errorf("%s is not a Telegram id: write the numeric user or chat id (123456789, -1001234567890) or, in allowFrom, @username", strconv.QuoteToASCII(entry))
		}
	}
	id, err := Canonical(ch, e)
	if err != nil {
		return ID{}, fmt.Errorf("%s: %w", strconv.QuoteToASCII(entry), err)
	}
	return id, nil
}

// Same reports whether raw ids a and b of channel ch are the same; a
// refused id is nobody, not even itself.
func Same(ch, a, b string) bool {
	x, err := Canonical(ch, a)
	if err != nil {
		return false
	}
	y, err := Canonical(ch, b)
	return err == nil && x.Key == y.Key
}

// isE164 reports whether s is "+" and 7 to 15 ASCII digits, the first
// not 0.
func isE164(s string) bool {
	d, ok := strings.CutPrefix(s, "+")
	if !ok || len(d) < 7 || len(d) > 15 || d[0] == '0' {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// printableASCII reports whether every byte of s is printable ASCII
// (the space included).
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// invisible reports whether r is a character a person cannot see or
// tell from a space: controls (C0, DEL, C1), format characters that
// matter in text (bidi controls, zero-width characters, U+FEFF, soft
// hyphen, word joiner, Mongolian vowel separator), and non-ASCII spaces.
func invisible(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x00a0, r == 0x00ad, r == 0x034f, r == 0x061c, r == 0x115f, r == 0x1160, r == 0x1680, r == 0x180e,
		r >= 0x2000 && r <= 0x200f, r >= 0x2028 && r <= 0x202f, r >= 0x205f && r <= 0x206f,
		r == 0x3000, r == 0x3164, r >= 0xfe00 && r <= 0xfe0f, r == 0xfeff, r == 0xffa0, r >= 0xfff9 && r <= 0xfffb,
		r >= 0xe0000 && r <= 0xe0fff:
		return true
	}
	return false
}

// Display shows an id (raw or a key) for logs, pairing lists and notices:
// as it is when it is printable ASCII without spaces, quotes or
// backslashes, else Go-quoted with every non-ASCII character escaped
// ("\u212aate@example.com"), so a look-alike never reads as the owner and
// a bidi or zero-width character cannot hide.
func Display(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return strconv.QuoteToASCII(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

// FoldASCII lower-cases ASCII letters only: strings.ToLower folds U+212A
// (Kelvin sign) to "k" and "İ" to "i", and strings.EqualFold matches
// U+017F (long s) with "s", which would let a look-alike compare equal to
// an owner's id or channel name.
func FoldASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
