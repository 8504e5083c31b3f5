package config

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/channel"
)

// problems are the *Errors of a Parse failure as "LINE: PATH: REASON".
func problems(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var out []string
	for _, e := range errs {
		var ce *Error
		if !errors.As(e, &ce) {
			t.Fatalf("not a *config.Error: %v", e)
		}
		out = append(out, strconv.Itoa(ce.Line)+": "+ce.Path+": "+ce.Reason)
	}
	return out
}

// TestAccessKeys: `config validate` (and every Load) refuses exactly what
// the gateway's start refuses in the access keys (access.Policy.Validate,
// the same package identity), each problem at the key and line where it
// was written.
func TestAccessKeys(t *testing.T) {
	const notPhone = ` is not a phone number in international form`
	for _, c := range []struct {
		name string
		file string
		want []string // "LINE: PATH: REASON-PREFIX", in line order
	}{
		{"the issue's example", `{
  commands: { ownerAllowFrom: ["imessage:+1222x"] },
  channels: { imessage: {
    dmPolicy: "allowlist",
    allowFrom: [],
  } },
}`, []string{
			`2: commands.ownerAllowFrom[0]: "+1222x"` + notPhone,
			`5: channels.imessage.allowFrom: dmPolicy allowlist needs at least one sender`,
		}},
		{"owner entries of any channel", `{ commands: { ownerAllowFrom: [
  "imessage:kate@example.com",
  "whatsapp:+1 (555) 000-1111",
  "telegram:123456789",
  "whatsapp:+1555000111\uff11",
  "email:kate@example.com\u200b",
  "+15550001111",
  "imessage:*",
  "i\u00admessage:kate@example.com",
  "whatsapp:+15550001111;ext=2",
] } }`, []string{
			`5: commands.ownerAllowFrom[3]: "+1555000111\uff11"` + notPhone,
			`6: commands.ownerAllowFrom[4]: "kate@example.com\u200b" has the invisible character U+200B at byte 16`,
			`7: commands.ownerAllowFrom[5]: "+15550001111": want <channel>:<sender id>`,
			`8: commands.ownerAllowFrom[6]: "imessage:*": a wildcard never makes an owner`,
			`9: commands.ownerAllowFrom[7]: "i\u00admessage:kate@example.com": "i\u00admessage" is not a channel name`,
			`10: commands.ownerAllowFrom[8]: "+15550001111;ext=2"` + notPhone,
		}},
		{"policy values", `{ channels: {
  whatsapp: { dmPolicy: "pair", groupPolicy: "all" },
  email: { dmPolicy: "Open" },
} }`, []string{
			`2: channels.whatsapp.dmPolicy: "pair" is not one of pairing, allowlist, open, disabled`,
			`2: channels.whatsapp.groupPolicy: "all" is not one of allowlist, open, disabled`,
			`3: channels.email.dmPolicy: "Open" is not one of`,
		}},
		{"list entries", `{ channels: { whatsapp: {
  allowFrom: ["*", "whatsapp:+1 555 000 1111", "15550001111", "+1555-CALL-NOW"],
  groupAllowFrom: ["+15550001111", "\u202e1111000555+"],
  groups: {
    "120363000000000001@g.us": { allowFrom: ["+1"] },
    "*": { requireMention: false, allowFrom: ["+0015550001111"] },
  },
} } }`, []string{
			`2: channels.whatsapp.allowFrom[3]: "+1555-CALL-NOW"` + notPhone,
			`3: channels.whatsapp.groupAllowFrom[1]: "\u202e1111000555+" has the invisible character U+202E at byte 0`,
			`5: channels.whatsapp.groups["120363000000000001@g.us"].allowFrom[0]: "+1"` + notPhone,
			`6: channels.whatsapp.groups["*"].allowFrom[0]: "+0015550001111"` + notPhone,
		}},
		{"two groups keys, one group, in an account", `{ channels: { imessage: { accounts: {
  home: { groups: { "42": {} } },
  work: {
    groups: {
      "iMessage;+;chat1": {},
      "imessage;+;CHAT1": {},
      "chat\ufeff2": {},
    },
  },
} } } }`, []string{
			`4: channels.imessage.accounts.work.groups: "chat\ufeff2" has the invisible character U+FEFF at byte 4`,
			`4: channels.imessage.accounts.work.groups: iMessage;+;chat1 and imessage;+;CHAT1 name the same group`,
		}},
		{"inherited keys: named once, at the channel", `{ channels: { imessage: {
  dmPolicy: "allowlist",
  allowFrom: ["+1222x"],
  accounts: {
    home: {},
    work: { dmPolicy: "nope" },
    lab: { allowFrom: [] },
    off: { enabled: false, allowFrom: ["+1"] },
  },
} } }`, []string{
			`3: channels.imessage.allowFrom[0]: "+1222x"` + notPhone,
			`6: channels.imessage.accounts.work.dmPolicy: "nope" is not one of`,
			`7: channels.imessage.accounts.lab.allowFrom: dmPolicy allowlist needs at least one sender`,
		}},
		{"allowlist without allowFrom: next to its dmPolicy", `{ channels: { email: {
  accounts: {
    work: {
      dmPolicy: "allowlist",
    },
  },
} } }`, []string{
			`4: channels.email.accounts.work.allowFrom: dmPolicy allowlist needs at least one sender`,
		}},
		{"wrong types and shapes, as the gateway's start refuses them", `{ channels: {
  whatsapp: { allowFrom: "+15550001111", groups: { "*": { requireMention: "no", mentionOnly: true } } },
  imessage: { accounts: 5 },
  email: { enabled: "yes", dmPolicy: 1 },
} }`, []string{
			`2: channels.whatsapp.allowFrom: expected an array, got string`,
			`2: channels.whatsapp.groups["*"].mentionOnly: unknown key`,
			`2: channels.whatsapp.groups["*"].requireMention: expected a boolean`,
			`3: channels.imessage.accounts: want an object of accounts by id`,
			`4: channels.email.enabled: want true or false`,
			`4: channels.email.dmPolicy: expected a string, got number`,
		}},
		{"fine: every form the platforms send, a disabled channel, OpenClaw's other channels", `{
  commands: { ownerAllowFrom: ["imessage:+15550001111", "whatsapp:15550001111@s.whatsapp.net", "email:mailto:Kate@Example.com", "bluebubbles:kate@example.com"] },
  channels: {
    imessage: { dmPolicy: "allowlist", allowFrom: ["chat_guid:iMessage;-;+15550001111", "imessage:kate@example.com", "urn:biz:1234"],
      groups: { "42": {}, "chat_guid:iMessage;+;chat123": { allowFrom: ["*"] }, "*": {} } },
    whatsapp: { dmPolicy: "pairing", groupPolicy: "open", groupAllowFrom: ["123456789@lid", "+44 20 7946 0000"] },
    email: { enabled: false, dmPolicy: "bogus", allowFrom: ["+1"] },
    telegram: { allowFrom: ["123456789", "@kate_smith", "telegram:42"], groups: { "-1001234567890": { topics: { "7": { requireMention: false } } } } },
    discord: { dmPolicy: "allowlist", allowFrom: [], groups: { "+1x": {} } },
  },
}`, nil},
		{"telegram: numeric ids, @usernames in sender lists only, never an owner by username", `{
  commands: { ownerAllowFrom: ["telegram:@kate_smith"] },
  channels: {
    telegram: { allowFrom: ["kate", "@k"], groups: { "@somegroup": {}, "-100": { topics: { "general": {}, "09": { enabled: false }, "7": { allowFrom: ["bob"] } } } } },
  },
}`, []string{
			`2: commands.ownerAllowFrom[0]: "telegram:@kate_smith": a Telegram owner is listed by numeric user id`,
			`4: channels.telegram.allowFrom[0]: "kate" is not a Telegram id`,
			`4: channels.telegram.allowFrom[1]: "@k" is not a Telegram username`,
			`4: channels.telegram.groups.-100.topics: "09" is not a topic id`,
			`4: channels.telegram.groups.-100.topics.7.allowFrom[0]: "bob" is not a Telegram id`,
			`4: channels.telegram.groups.-100.topics: "general" is not a topic id`,
			`4: channels.telegram.groups: "@somegroup" is not a Telegram chat id`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.file), "t.json5")
			got := problems(t, err)
			if len(got) != len(c.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(c.want), strings.Join(got, "\n"))
			}
			for i, w := range c.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("problem %d:\n got %s\nwant %s…", i, got[i], w)
				}
			}
			if err != nil && !strings.HasPrefix(err.Error(), "t.json5:") {
				t.Errorf("no file in %v", err)
			}
		})
	}
}

// TestAccessKeysFollowChannelCommon: the access keys checked here are
// channel.Common's and channel.Group's, key for key, so config validate
// reads them as the gateway decodes them.
func TestAccessKeysFollowChannelCommon(t *testing.T) {
	keys := func(t reflect.Type, skip ...string) []string {
		var out []string
		for k := range fieldsOf(t) {
			if !slices.Contains(skip, k) {
				out = append(out, k)
			}
		}
		slices.Sort(out)
		return out
	}
	// Chunking is the channel's and the account's own (ChannelAccount).
	if got, want := keys(reflect.TypeFor[accessKeys]()), keys(reflect.TypeFor[channel.Common](), "textChunkLimit", "chunkMode"); !slices.Equal(got, want) {
		t.Errorf("accessKeys has %v, channel.Common %v", got, want)
	}
	if got, want := keys(reflect.TypeFor[accessGroup]()), keys(reflect.TypeFor[channel.Group]()); !slices.Equal(got, want) {
		t.Errorf("accessGroup has %v, channel.Group %v", got, want)
	}
	if f, _ := reflect.TypeFor[channel.Common]().FieldByName("Groups"); f.Type != reflect.TypeFor[map[string]channel.Group]() {
		t.Errorf("channel.Common.Groups is %v", f.Type)
	}
}
