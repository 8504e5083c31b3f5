package identity

import (
	"strconv"
	"strings"
	"testing"
)

func TestOwner(t *testing.T) {
	for _, c := range []struct {
		entry, ch, key, err string
	}{
		{"imessage:kate@example.com", "imessage", "kate@example.com", ""},
		{" iMessage : Kate@Example.com ", "imessage", "kate@example.com", ""},
		{"whatsapp:+1 (555) 000-1111", "whatsapp", "+15550001111", ""},
		{"whatsapp:15550001111", "whatsapp", "+15550001111", ""},
		{"email:mailto:kate@example.com", "email", "kate@example.com", ""},
		{"imessage:chat_guid:iMessage;-;+15550001111", "imessage", "chat_guid:imessage;-;+15550001111", ""},
		{"imessage:+1222x", "imessage", "", `"+1222x" is not a phone number`},
		{"email:Kate <kate@example.com>", "email", "", `write the bare address`},
		{"email:<kate@example.com>", "email", "", `write the bare address`},
		{`email:"Kate" <kate@example.com>`, "email", "", `write the bare address`},
		{"email:kate@example.com, bob@example.com", "email", "", `write the bare address`},
		{"imessage:+15550001111;ext=2", "imessage", "", `is not a phone number`},
		{"imessage:+\uff11555000111", "imessage", "", `"+\uff11555000111" is not a phone number`},
		{"imessage:\u212aate@example.com", "imessage", "\u212aate@example.com", ""},
		{"imessage:kate@example.com\u200d", "imessage", "", `invisible character U+200D`},
		{"imessage:*", "imessage", "", `a wildcard never makes an owner`},
		{"imessage:k*", "imessage", "", `a wildcard never makes an owner`},
		{"+15550001111", "", "", `want <channel>:<sender id>`},
		{"imessage:", "", "", `want <channel>:<sender id>`},
		{":kate@example.com", "", "", `want <channel>:<sender id>`},
		{"ime\u017f\u017fage:kate@example.com", "", "", `"ime\u017f\u017fage" is not a channel name`},
		{"i message:kate@example.com", "", "", `is not a channel name`},
	} {
		ch, id, err := Owner(c.entry)
		switch {
		case c.err == "" && (err != nil || id.Key != c.key || ch != c.ch):
			t.Errorf("Owner(%q) = %q, %q, %v; want %q, %q", c.entry, ch, id.Key, err, c.ch, c.key)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || ch != c.ch):
			t.Errorf("Owner(%q) = %q, %v; want %q, an error with %s", c.entry, ch, err, c.ch, c.err)
		}
	}
}

func TestListEntry(t *testing.T) {
	for _, c := range []struct {
		ch, entry string
		anyone    bool
		key, err  string
	}{
		{"imessage", "*", true, "", ""},
		{"imessage", " imessage: * ", true, "", ""},
		{"whatsapp", "WhatsApp:+1 555 000 1111", false, "+15550001111", ""},
		{"imessage", "whatsapp:+15550001111", false, "whatsapp:+15550001111", ""},
		{"imessage", "chat_guid:iMessage;+;chat1", false, "chat_guid:imessage;+;chat1", ""},
		{"whatsapp", "+1555-CALL-NOW", false, "", "is not a phone number"},
		{"email", "\u202ekate@example.com", false, "", "invisible character U+202E"},
	} {
		anyone, id, err := ListEntry(c.ch, c.entry)
		switch {
		case c.err == "" && (err != nil || anyone != c.anyone || id.Key != c.key):
			t.Errorf("ListEntry(%s, %q) = %v, %q, %v", c.ch, c.entry, anyone, id.Key, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ListEntry(%s, %q) = %v, want an error with %s", c.ch, c.entry, err, c.err)
		}
	}
}

func TestKeysCheck(t *testing.T) {
	for _, c := range []struct {
		name string
		ch   string
		k    Keys
		want []string // "path[index]: reason prefix"
	}{
		{"fine", "whatsapp", Keys{DMPolicy: DMAllowlist, AllowFrom: []string{"+15550001111"}, GroupPolicy: GroupOpen,
			Groups: map[string][]string{"120363000000000001@g.us": nil, "*": {"*"}}}, nil},
		{"defaults", "imessage", Keys{}, nil},
		{"values", "email", Keys{DMPolicy: "Pairing", GroupPolicy: "allow\u200blist"}, []string{
			`dmPolicy: "Pairing" is not one of pairing, allowlist, open, disabled`,
			`groupPolicy: "allow\u200blist" is not one of allowlist, open, disabled`,
		}},
		{"allowlist of nobody", "imessage", Keys{DMPolicy: DMAllowlist}, []string{`allowFrom: dmPolicy allowlist needs at least one sender`}},
		{"entries", "imessage", Keys{AllowFrom: []string{"+1222x"}, GroupAllowFrom: []string{"ok@example.com", "a\u00a0b"},
			Groups: map[string][]string{"b": {"+1"}, "a": nil, "A": nil, "\u2067c": nil}}, []string{
			`allowFrom[0]: "+1222x" is not a phone number`,
			`groupAllowFrom[1]: "a\u00a0b" has the invisible character U+00A0`,
			`groups: A and a name the same group`, // keys in byte order: "A" is seen first
			`groups.b.allowFrom[0]: "+1" is not a phone number`,
			`groups: "\u2067c" has the invisible character U+2067`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.k.Check(c.ch)
			if len(got) != len(c.want) {
				t.Fatalf("got %+v, want %d problems", got, len(c.want))
			}
			for i, p := range got {
				s := strings.Join(p.Path, ".")
				if p.Index >= 0 {
					s += "[" + strconv.Itoa(p.Index) + "]"
				}
				s += ": " + p.Reason
				if !strings.HasPrefix(s, c.want[i]) {
					t.Errorf("problem %d: %s, want %s…", i, s, c.want[i])
				}
			}
		})
	}
}

// FuzzCheck: whatever the owner typed, the check never panics, names a
// key, and its reasons are printable ASCII (an entry's invisible or
// look-alike characters are shown escaped, never passed to a terminal).
func FuzzCheck(f *testing.F) {
	f.Add("imessage", "allowlist", "+1222x", "iMessage;+;chat1", "imessage;+;CHAT1", "imessage:+1 555")
	f.Add("whatsapp", "open", "15550001111", "*", "\u202eg", "whatsapp:\u212a")
	f.Fuzz(func(t *testing.T, ch, policy, entry, g1, g2, owner string) {
		k := Keys{DMPolicy: policy, GroupPolicy: policy, AllowFrom: []string{entry}, GroupAllowFrom: []string{owner},
			Groups: map[string][]string{g1: {entry}, g2: nil}}
		for _, p := range k.Check(ch) {
			if len(p.Path) == 0 || p.Reason == "" {
				t.Fatalf("problem %+v", p)
			}
			if !printableASCII(p.Reason) {
				t.Fatalf("reason %q is not printable ASCII", p.Reason)
			}
		}
		if _, _, err := Owner(owner); err != nil && !printableASCII(err.Error()) {
			t.Fatalf("owner error %q is not printable ASCII", err)
		}
	})
}
