package access

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
)

// confusables maps ASCII characters to look-alikes, a small set written
// from Unicode's confusables.txt (UTS #39) and the compatibility
// characters NFKC would fold: Cyrillic and Greek letters, letter-like
// symbols (KELVIN SIGN, ANGSTROM SIGN), full-width forms, mathematical
// alphanumerics, dotless i, long s, and digits of other scripts.
var confusables = map[byte][]rune{
	'a': {0x0430, 0x03b1, 0xff41, 0x1d41a, 0x00e0},
	'c': {0x0441, 0x03f2, 0xff43, 0x217d},
	'e': {0x0435, 0xff45, 0x212e, 0x1d41e},
	'i': {0x0456, 0x0131, 0x2170, 0x1d422, 0x0130},
	'k': {0x212a, 0x043a, 0x03ba, 0xff4b},
	'K': {0x212a, 0x041a, 0x039a, 0xff2b, 0x1d40a},
	'l': {0x04cf, 0x2113, 0x217c, 0xff4c},
	'm': {0x217f, 0xff4d},
	'o': {0x043e, 0x03bf, 0x0585, 0xff4f, 0x1d428, 0x2134},
	'p': {0x0440, 0x03c1, 0xff50},
	's': {0x0455, 0x017f, 0xff53},
	't': {0xff54, 0x1d42d},
	'x': {0x0445, 0x00d7, 0xff58},
	'A': {0x0391, 0x0410, 0x212b, 0xff21},
	'.': {0x2024, 0xff0e, 0x0701},
	'@': {0xff20, 0xfe6b},
	'+': {0xff0b, 0x2795, 0x16ed},
	'0': {0xff10, 0x0660, 0x06f0, 0x1d7ce, 0x2070, 0x2080},
	'1': {0xff11, 0x0661, 0x06f1, 0x1d7cf, 0x00b9, 0x2081, 0x2460},
	'5': {0xff15, 0x0665, 0x06f5, 0x1d7d3, 0x2075},
}

// invisibles are control and format characters (bidi controls, zero-width
// characters, BOM, soft hyphen, word joiner, non-ASCII spaces).
var invisibles = []rune{
	0x0000, 0x0009, 0x000a, 0x000d, 0x001b, 0x007f, 0x0085, 0x00a0, 0x00ad, 0x034f, 0x061c, 0x180e,
	0x200b, 0x200c, 0x200d, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
	0x202f, 0x205f, 0x2060, 0x2061, 0x2066, 0x2067, 0x2068, 0x2069, 0x3000, 0xfe0f, 0xfeff, 0xe0041,
}

// owner ids per channel, as an owner writes them in ownerAllowFrom, and the
// forms the platform really sends for that owner (which must match).
var ownerForms = []struct {
	ch, entry string
	real      []string
}{
	{"imessage", "kate@example.com", []string{"kate@example.com", "Kate@example.com", "KATE@EXAMPLE.COM"}},
	{"imessage", "+15550001111", []string{"+15550001111"}},
	{"imessage", "+1 (555) 000-1111", []string{"+15550001111"}},
	{"imessage", "tel:+15550001111", []string{"+15550001111"}},
	{"imessage", "mailto:Kate@Example.com", []string{"kate@example.com"}},
	{"whatsapp", "+15550001111", []string{"+15550001111", "15550001111@s.whatsapp.net", "15550001111@c.us"}},
	{"whatsapp", "15550001111", []string{"+15550001111", "15550001111@s.whatsapp.net"}},
	{"whatsapp", "15550001111@s.whatsapp.net", []string{"+15550001111"}},
	{"whatsapp", "123456789012345@lid", []string{"123456789012345@lid"}},
	{"email", "Ann@Example.test", []string{"ann@example.test", "Ann@Example.TEST"}},
}

// attacks derives ids that must never be the owner written as entry: every
// ASCII character replaced by each of its look-alikes, every invisible
// character inserted everywhere, and for phone numbers letters,
// separators, extensions and other prefixes.
func attacks(real string) []string {
	var out []string
	for i := 0; i < len(real); i++ {
		for _, r := range confusables[real[i]] {
			out = append(out, real[:i]+string(r)+real[i+1:])
		}
		for _, r := range invisibles {
			out = append(out, real[:i]+string(r)+real[i:])
		}
	}
	for _, r := range invisibles {
		out = append(out, real+string(r))
	}
	out = append(out, " "+real, real+" ", real+"x", real+".", real+"\x00", strings.ToUpper(real)+"\u0301")
	if d, ok := strings.CutPrefix(real, "+"); ok {
		out = append(out,
			d, "00"+d, "011"+d, "+0"+d, "+00"+d, "++"+d, "tel:"+real, "+"+d[:1]+" "+d[1:],
			real+";ext=2", real+"x123", real+" ext 1", real+";x", real+"#", real+"p1", real+",1", real+"w",
			"+"+d[:1]+"-"+d[1:], "+"+d[:1]+"("+d[1:4]+")"+d[4:], "+"+d[:1]+"."+d[1:], "+ "+d, real[:len(real)-1], real+"1",
		)
		for i := 1; i < len(d); i++ {
			out = append(out, "+"+d[:i]+"a"+d[i:], "+"+d[:i]+"O"+d[i:], "+"+d[:i]+"l"+d[i:])
		}
	}
	return out
}

func TestCanonical(t *testing.T) {
	long := strings.Repeat("a", MaxIDBytes) + "@example.com"
	cases := []struct {
		ch, raw string
		kind    Kind
		key     string // "" = refused
	}{
		// iMessage handles and chat ids (imsg, BlueBubbles).
		{"imessage", "+15550001111", Phone, "+15550001111"},
		{"imessage", "Kate@Example.com", Opaque, "kate@example.com"},
		{"imessage", "\u212aate@example.com", Verbatim, "\u212aate@example.com"},
		{"imessage", "+15550001111x", Opaque, "+15550001111x"},
		{"imessage", "+15550001111;x", Opaque, "+15550001111;x"},
		{"imessage", "+1555000111\uff11", Verbatim, "+1555000111\uff11"},
		{"imessage", "+1 555 000 1111", Opaque, "+1 555 000 1111"},
		{"imessage", "+1\u200b5550001111", Verbatim, "+1\u200b5550001111"},
		{"imessage", "+015550001111", Opaque, "+015550001111"},
		{"imessage", "+1234567890123456", Opaque, "+1234567890123456"},
		{"imessage", "+123456", Opaque, "+123456"},
		{"imessage", "+1234567", Phone, "+1234567"},
		{"imessage", "262966", Opaque, "262966"},
		{"imessage", "AMAZON", Opaque, "amazon"},
		{"imessage", "urn:biz:4f8c1e2a-0000-4000-8000-000000000000", Opaque, "urn:biz:4f8c1e2a-0000-4000-8000-000000000000"},
		{"imessage", "42", Opaque, "42"},
		{"imessage", "chat_guid:iMessage;+;chat123456", Opaque, "chat_guid:imessage;+;chat123456"},
		{"imessage", "iMessage;-;+15550001111", Opaque, "imessage;-;+15550001111"},
		{"imessage", "any;-;Kate@example.com", Opaque, "any;-;kate@example.com"},
		{"imessage", "", Opaque, ""},
		{"imessage", "\xff\xfe", Opaque, ""},
		{"imessage", long, Opaque, ""},
		// WhatsApp JIDs.
		{"whatsapp", "15550001111@s.whatsapp.net", Phone, "+15550001111"},
		{"whatsapp", "15550001111@S.WHATSAPP.NET", Phone, "+15550001111"},
		{"whatsapp", "15550001111@c.us", Phone, "+15550001111"},
		{"whatsapp", "015550001111@s.whatsapp.net", Opaque, "015550001111@s.whatsapp.net"},
		{"whatsapp", "15550001111:3@s.whatsapp.net", Opaque, "15550001111:3@s.whatsapp.net"},
		{"whatsapp", "+15550001111@s.whatsapp.net", Opaque, "+15550001111@s.whatsapp.net"},
		{"whatsapp", "15550001111@s.whatsapp.net.example", Opaque, "15550001111@s.whatsapp.net.example"},
		{"whatsapp", "123456789012345@lid", Opaque, "123456789012345@lid"},
		{"whatsapp", "120363012345678901@g.us", Opaque, "120363012345678901@g.us"},
		{"whatsapp", "15550001111-1600000000@g.us", Opaque, "15550001111-1600000000@g.us"},
		{"whatsapp", "\u0661\u0665\u0665\u0665\u0660\u0660\u0660\u0661\u0661\u0661\u0661@s.whatsapp.net", Verbatim, "\u0661\u0665\u0665\u0665\u0660\u0660\u0660\u0661\u0661\u0661\u0661@s.whatsapp.net"},
		// E-mail.
		{"email", "Ann@Example.TEST", Opaque, "ann@example.test"},
		{"email", "ann@ex\u0430mple.test", Verbatim, "ann@ex\u0430mple.test"},
		{"email", "J\u00fcrgen@Example.de", Verbatim, "J\u00fcrgen@Example.de"},
		{"email", "ann+tag@example.test", Opaque, "ann+tag@example.test"},
		{"email", "\u017fam@example.test", Verbatim, "\u017fam@example.test"},
	}
	for _, c := range cases {
		got, err := Canonical(c.ch, c.raw)
		if c.key == "" {
			if err == nil || !errors.Is(err, ErrUnusableID) {
				t.Errorf("Canonical(%s, %q) = %+v, %v; want refused", c.ch, c.raw, got, err)
			}
			continue
		}
		if err != nil || got.Kind != c.kind || got.Key != c.key {
			t.Errorf("Canonical(%s, %q) = %v %q, %v; want %v %q", c.ch, c.raw, got.Kind, got.Key, err, c.kind, c.key)
		}
	}
}

func TestConfigID(t *testing.T) {
	good := []struct{ ch, entry, key string }{
		{"imessage", " +1 (555) 000-1111 ", "+15550001111"},
		{"imessage", "+1.555.000.1111", "+15550001111"},
		{"imessage", "TEL:+15550001111", "+15550001111"},
		{"imessage", "mailto:Kate@Example.com", "kate@example.com"},
		{"imessage", "42", "42"},
		{"imessage", "iMessage;+;chat123", "imessage;+;chat123"},
		{"whatsapp", "1 555 000 1111", "+15550001111"},
		{"whatsapp", "15550001111@s.whatsapp.net", "+15550001111"},
		{"whatsapp", "120363012345678901@g.us", "120363012345678901@g.us"},
		{"email", "J\u00fcrgen@example.de", "J\u00fcrgen@example.de"},
	}
	for _, c := range good {
		if id, err := ConfigID(c.ch, c.entry); err != nil || id.Key != c.key {
			t.Errorf("ConfigID(%s, %q) = %q, %v; want %q", c.ch, c.entry, id.Key, err, c.key)
		}
	}
	bad := []struct{ ch, entry, want string }{
		{"imessage", "+1555000111\uff11", "not a phone number"},
		{"imessage", "+15550001111x", "not a phone number"},
		{"imessage", "+1 555 000 1111 ext. 2", "not a phone number"},
		{"imessage", "+1555-000-1111;ext=2", "not a phone number"},
		{"imessage", "+015550001111", "not a phone number"},
		{"imessage", "+1555", "not a phone number"},
		{"imessage", "+1\u00a0555\u00a0000\u00a01111", "invisible character U+00A0 at byte 2"},
		{"imessage", "kate@example.com\u200b", "invisible character U+200B"},
		{"imessage", "\u202ekate@example.com", "invisible character U+202E at byte 0"},
		{"imessage", "kate\u00ad@example.com", "invisible character U+00AD"},
		{"whatsapp", "555", "not a phone number"},
		{"email", "", "unusable id: empty"},
		{"email", "   ", "unusable id: empty"},
	}
	for _, c := range bad {
		if id, err := ConfigID(c.ch, c.entry); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ConfigID(%s, %q) = %q, %v; want an error with %q", c.ch, c.entry, id.Key, err, c.want)
		}
	}
}

// TestLookAlikesNeverOwners: for every channel's owner forms, each derived
// attack is not the owner, not listed where the owner is, not the owner's
// group, while each form the platform really sends is.
func TestLookAlikesNeverOwners(t *testing.T) {
	n := 0
	for _, o := range ownerForms {
		owners := []string{o.ch + ":" + o.entry}
		p := &Policy{Channel: o.ch, Common: channel.Common{DMPolicy: DMAllowlist, AllowFrom: []string{o.entry}, GroupPolicy: GroupAllowlist,
			Groups: map[string]channel.Group{o.entry: {}}}, Owners: owners}
		if err := p.Validate(); err != nil {
			t.Fatalf("%s %q: %v", o.ch, o.entry, err)
		}
		for _, r := range o.real {
			if !IsOwner(owners, o.ch, r) || !listed(p.AllowFrom, o.ch, r, "") {
				t.Errorf("%s: %q is the owner %q", o.ch, r, o.entry)
			}
			if _, ok := p.Group(r); !ok {
				t.Errorf("%s: %q is the group %q", o.ch, r, o.entry)
			}
			for _, a := range attacks(r) {
				n++
				if ra, err := Canonical(o.ch, a); err == nil && ra.Key == mustCanon(t, o.ch, r).Key {
					continue // an ASCII case variant of a real form: the same id by the rules
				}
				if IsOwner(owners, o.ch, a) {
					t.Errorf("%s: %s is the owner %q", o.ch, Display(a), o.entry)
				}
				if listed(p.AllowFrom, o.ch, a, "") {
					t.Errorf("%s: %s is listed as %q", o.ch, Display(a), o.entry)
				}
				if _, ok := p.Group(a); ok {
					t.Errorf("%s: %s is the group %q", o.ch, Display(a), o.entry)
				}
				v := p.Decide(engine.Inbound{Channel: o.ch, ChatType: engine.ChatDirect, SenderID: a, ChatID: a}, false)
				if v.Owner || v.Action != Drop {
					t.Errorf("%s: %s decided %v owner=%v (%s)", o.ch, Display(a), v.Action, v.Owner, v.Reason)
				}
			}
		}
	}
	t.Logf("%d look-alikes refused", n)
}

func mustCanon(t *testing.T, ch, raw string) ID {
	t.Helper()
	id, err := Canonical(ch, raw)
	if err != nil {
		t.Fatalf("Canonical(%s, %q): %v", ch, raw, err)
	}
	return id
}

// TestOpenDMLookAlike: with dmPolicy open a look-alike is answered, but as
// a stranger, and with pairing it gets a code of its own, never the owner's
// standing.
func TestOpenDMLookAlike(t *testing.T) {
	p := &Policy{Channel: "imessage", Common: channel.Common{DMPolicy: DMOpen}, Owners: []string{"imessage:kate@example.com", "imessage:+15550001111"}}
	for _, id := range []string{"\u212aate@example.com", "+15550001111x", "+15550001111;x", "+1555000111\uff11", "+1 555 000 1111", "+1555\u200b0001111"} {
		v := p.Decide(engine.Inbound{Channel: "imessage", ChatType: engine.ChatDirect, SenderID: id}, false)
		if v.Action != Answer || v.Owner {
			t.Errorf("%s: %v owner=%v", Display(id), v.Action, v.Owner)
		}
	}
	for _, id := range []string{"Kate@example.com", "kate@example.com", "+15550001111"} {
		if v := p.Decide(engine.Inbound{Channel: "imessage", ChatType: engine.ChatDirect, SenderID: id}, false); !v.Owner {
			t.Errorf("%s is the owner", id)
		}
	}
	// A refused id is nobody: no pairing code, never an owner.
	p.DMPolicy = DMPairing
	for _, id := range []string{"", "\xff", strings.Repeat("1", MaxIDBytes+1)} {
		if v := p.Decide(engine.Inbound{Channel: "imessage", ChatType: engine.ChatDirect, SenderID: id}, false); v.Action != Drop || v.Owner {
			t.Errorf("%q: %v owner=%v", id, v.Action, v.Owner)
		}
	}
}

func TestValidateEntries(t *testing.T) {
	for _, c := range []struct {
		p    Policy
		want string
	}{
		{Policy{Channel: "imessage", Owners: []string{"whatsapp:+1 555 x", "imessage:+1555000111\uff11"}}, `commands.ownerAllowFrom[1]: "+1555000111\uff11" is not a phone number`},
		{Policy{Channel: "imessage", Common: channel.Common{AllowFrom: []string{"*", "imessage:kate@example.com\u200b"}}}, `channels.imessage.allowFrom[1]: "kate@example.com\u200b" has the invisible character U+200B at byte 16`},
		{Policy{Channel: "whatsapp", Common: channel.Common{GroupAllowFrom: []string{"+1555-CALL-NOW"}}}, `channels.whatsapp.groupAllowFrom[0]: "+1555-CALL-NOW" is not a phone number`},
		{Policy{Channel: "whatsapp", Common: channel.Common{Groups: map[string]channel.Group{"g@g.us": {AllowFrom: []string{"+1"}}}}}, `channels.whatsapp.groups.g@g.us.allowFrom[0]: "+1" is not a phone number`},
		{Policy{Channel: "imessage", Common: channel.Common{Groups: map[string]channel.Group{"iMessage;+;chat1": {}, "imessage;+;CHAT1": {}}}}, `channels.imessage.groups: iMessage;+;chat1 and imessage;+;CHAT1 name the same group`},
	} {
		if err := c.p.Validate(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("got %v, want %s…", err, c.want)
		}
	}
}

func TestDisplay(t *testing.T) {
	for in, want := range map[string]string{
		"kate@example.com":       "kate@example.com",
		"+15550001111":           "+15550001111",
		"\u212aate@example.com":  `"\u212aate@example.com"`,
		"+1 555":                 `"+1 555"`,
		"+1555\u200b0001111":     `"+1555\u200b0001111"`,
		"\u202emoc.elpmaxe@etak": `"\u202emoc.elpmaxe@etak"`,
		"a\nb":                   `"a\nb"`,
		"a\"b":                   `"a\"b"`,
		"":                       `""`,
		"\xff":                   `"\xff"`,
	} {
		if got := Display(in); got != want {
			t.Errorf("Display(%q) = %s, want %s", in, got, want)
		}
	}
}

// sameByRules is the documented equality of two raw wire ids of ch,
// written independently of Canonical: equal bytes; or both printable ASCII
// and equal with ASCII letters folded; or, on WhatsApp, a phone-number JID
// and "+" with the same E.164 digits.
func sameByRules(ch, a, b string) bool {
	if a == b {
		return true
	}
	ascii := func(s string) bool {
		for _, r := range []byte(s) {
			if r < 0x20 || r > 0x7e {
				return false
			}
		}
		return true
	}
	if !ascii(a) || !ascii(b) {
		return false
	}
	if strings.EqualFold(a, b) { // both ASCII: EqualFold is ASCII folding here
		return true
	}
	phone := func(s string) string {
		if ch != "whatsapp" {
			return ""
		}
		u, srv, ok := strings.Cut(s, "@")
		srv = strings.ToLower(srv)
		if !ok || (srv != "s.whatsapp.net" && srv != "c.us") || len(u) < 7 || len(u) > 15 || u[0] == '0' || strings.Trim(u, "0123456789") != "" {
			return ""
		}
		return "+" + u
	}
	pa, pb := phone(a), phone(b)
	return pa != "" && (pa == b || pa == pb) || pb != "" && pb == a
}

// FuzzCanonical: two wire ids are the same exactly when the documented
// rules say so — above all, an id equal to an ASCII owner's was ASCII and
// equal under those rules; Display never shows anything but printable
// ASCII, and two different ids never display alike.
func FuzzCanonical(f *testing.F) {
	for _, o := range ownerForms {
		for _, r := range o.real {
			f.Add(o.ch, r, o.entry)
			for i, a := range attacks(r) {
				if i%7 == 0 {
					f.Add(o.ch, a, r)
				}
			}
		}
	}
	f.Add("whatsapp", "15550001111@s.whatsapp.net", "+15550001111")
	f.Add("imessage", "\u212aate@example.com", "kate@example.com")
	f.Fuzz(func(t *testing.T, ch, a, b string) {
		x, errA := Canonical(ch, a)
		y, errB := Canonical(ch, b)
		if errA == nil && errB == nil && (x.Key == y.Key) != sameByRules(ch, a, b) {
			t.Fatalf("Canonical(%s): %s → %q, %s → %q; the rules say same=%v", ch, Display(a), x.Key, Display(b), y.Key, sameByRules(ch, a, b))
		}
		if errA == nil && x.Kind == Verbatim && x.Key != a {
			t.Fatalf("a verbatim id was changed: %q → %q", a, x.Key)
		}
		if errA == nil && x.Kind == Phone && !strings.HasPrefix(x.Key, "+") {
			t.Fatalf("phone %q", x.Key)
		}
		d := Display(a)
		for i := 0; i < len(d); i++ {
			if d[i] < 0x20 || d[i] > 0x7e {
				t.Fatalf("Display(%q) = %q is not printable ASCII", a, d)
			}
		}
		if a != b && d == Display(b) {
			t.Fatalf("%q and %q both display as %s", a, b, d)
		}
		// A config entry equal to an ASCII id came from ASCII (around its
		// outer white space and the scheme and separators it may carry).
		if e, err := ConfigID(ch, b); err == nil && errA == nil && e.Key == x.Key {
			if isPrintableASCII(x.Key) && !isPrintableASCII(strings.Trim(b, " \t\r\n")) {
				t.Fatalf("entry %s matched ASCII id %s", Display(b), Display(a))
			}
			if !utf8.ValidString(b) {
				t.Fatalf("invalid UTF-8 entry %q accepted", b)
			}
		}
	})
}

// isPrintableASCII reports whether every byte of s is printable ASCII.
func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
