package access

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
			switch asciiLower(server) {
			case "s.whatsapp.net", "c.us":
				return ID{Kind: Phone, Key: "+" + user}, nil
			}
		}
	}
	return ID{Kind: Opaque, Key: asciiLower(raw)}, nil
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
		if len(e) > len(scheme) && asciiLower(e[:len(scheme)]) == scheme {
			e = e[len(scheme):]
		}
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

// asciiLower lower-cases ASCII letters only: strings.ToLower folds U+212A
// (Kelvin sign) to "k" and "İ" to "i", which would let a look-alike
// address compare equal to an owner's.
func asciiLower(s string) string {
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

// legacyNormalize is Normalize as it was before Canonical: the key
// pairing approvals were stored under. Only for finding those; see
// Pairing.Approved.
func legacyNormalize(ch, id string) string {
	id = strings.TrimSpace(id)
	if strings.Contains(id, "@") {
		return asciiLower(id)
	}
	if strings.HasPrefix(id, "+") || (ch == "whatsapp" && id != "" && strings.Trim(id, "0123456789 -.()") == "") {
		var b strings.Builder
		b.WriteByte('+')
		for _, r := range id {
			if r >= '0' && r <= '9' {
				b.WriteRune(r)
			}
		}
		if b.Len() > 1 {
			return b.String()
		}
	}
	return id
}
