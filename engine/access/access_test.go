package access

import (
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
)

func ptr[T any](v T) *T { return &v }

func TestDecide(t *testing.T) {
	mentions, err := CompileMentions([]string{`\bclaw\b`})
	if err != nil {
		t.Fatal(err)
	}
	owner := []string{"whatsapp:+1 (555) 123-4567", "email:Ann@Example.test"}
	dm := func(sender string) engine.Inbound {
		return engine.Inbound{Channel: "whatsapp", ChatType: engine.ChatDirect, SenderID: sender, ChatID: sender, Text: "hi"}
	}
	grp := func(chat, sender, text string, mentioned bool) engine.Inbound {
		return engine.Inbound{Channel: "whatsapp", ChatType: engine.ChatGroup, ChatID: chat, SenderID: sender, Text: text, Mentioned: mentioned}
	}
	cases := []struct {
		name     string
		common   channel.Common
		m        engine.Inbound
		approved bool
		want     Action
		owner    bool
	}{
		{"owner DM", channel.Common{}, dm("+15551234567"), false, Answer, true},
		{"owner DM even when disabled", channel.Common{DMPolicy: DMDisabled}, dm("+15551234567"), false, Answer, true},
		{"unknown DM pairs", channel.Common{}, dm("+15550000000"), false, Pair, false},
		{"approved DM", channel.Common{}, dm("+15550000000"), true, Answer, false},
		{"allowFrom DM", channel.Common{AllowFrom: []string{"+1 555 000 0000"}}, dm("+15550000000"), false, Answer, false},
		{"allowlist drops others", channel.Common{DMPolicy: DMAllowlist, AllowFrom: []string{"+19999999999"}}, dm("+15550000000"), true, Drop, false},
		{"open DM", channel.Common{DMPolicy: DMOpen}, dm("+15550000000"), false, Answer, false},
		{"disabled DM", channel.Common{DMPolicy: DMDisabled}, dm("+15550000000"), true, Drop, false},
		{"group not listed", channel.Common{}, grp("g1", "+15551234567", "claw hi", true), false, Drop, true},
		{"group listed, no mention: context", channel.Common{Groups: map[string]channel.Group{"g1": {}}}, grp("g1", "+1", "hello all", false), false, Context, false},
		{"group listed, platform mention", channel.Common{Groups: map[string]channel.Group{"g1": {}}}, grp("g1", "+1", "hello", true), false, Answer, false},
		{"group listed, pattern mention", channel.Common{Groups: map[string]channel.Group{"*": {}}}, grp("g2", "+1", "hey CLAW, what's up", false), false, Answer, false},
		{"pattern is a word", channel.Common{Groups: map[string]channel.Group{"*": {}}}, grp("g2", "+1", "clawback", false), false, Context, false},
		{"requireMention false", channel.Common{Groups: map[string]channel.Group{"g1": {RequireMention: ptr(false)}}}, grp("g1", "+1", "x", false), false, Answer, false},
		{"group disabled", channel.Common{Groups: map[string]channel.Group{"g1": {Enabled: ptr(false)}}}, grp("g1", "+1", "claw", true), false, Drop, false},
		{"groupPolicy disabled", channel.Common{GroupPolicy: GroupDisabled, Groups: map[string]channel.Group{"*": {}}}, grp("g1", "+15551234567", "claw", true), false, Drop, true},
		{"groupPolicy open", channel.Common{GroupPolicy: GroupOpen}, grp("g9", "+1", "claw", true), false, Answer, false},
		{"groupAllowFrom excludes", channel.Common{GroupPolicy: GroupOpen, GroupAllowFrom: []string{"+12225550100"}}, grp("g9", "+13335550100", "claw", true), false, Drop, false},
		{"groupAllowFrom includes", channel.Common{GroupPolicy: GroupOpen, GroupAllowFrom: []string{"+12225550100"}}, grp("g9", "+12225550100", "claw", true), false, Answer, false},
		{"owner passes groupAllowFrom", channel.Common{GroupPolicy: GroupOpen, GroupAllowFrom: []string{"+12225550100"}}, grp("g9", "+15551234567", "claw", true), false, Answer, true},
		{"owner /approve needs no mention", channel.Common{Groups: map[string]channel.Group{"g1": {}}}, grp("g1", "+15551234567", "/approve ab12cd", false), false, Answer, true},
		{"owner /DENY needs no mention", channel.Common{Groups: map[string]channel.Group{"g1": {}}}, grp("g1", "+15551234567", " /DENY ab12cd", false), false, Answer, true},
		{"stranger /approve without mention: context", channel.Common{Groups: map[string]channel.Group{"g1": {}}}, grp("g1", "+15550000000", "/approve ab12cd", false), false, Context, false},
		{"look-alike owner /approve without mention: context", channel.Common{Groups: map[string]channel.Group{"g1": {}}}, grp("g1", "+15551234567x", "/approve ab12cd", false), false, Context, false},
		// Pairing approvals authorize DMs only.
		{"pairing approval is not a group grant", channel.Common{GroupPolicy: GroupOpen, AllowFrom: []string{"+14445550100"}}, grp("g9", "+13335550100", "claw", true), true, Drop, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &Policy{Channel: "whatsapp", Common: c.common, Owners: owner, Mentions: mentions}
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			v := p.Decide(c.m, c.approved)
			if v.Action != c.want || v.Owner != c.owner {
				t.Fatalf("got %v owner=%v (%s), want %v owner=%v", v.Action, v.Owner, v.Reason, c.want, c.owner)
			}
		})
	}
}

// TestOwnerBypasses writes the shapes of OpenClaw's 2026 owner-bypass
// advisories as cases: each must not make the sender an owner.
func TestOwnerBypasses(t *testing.T) {
	cases := []struct {
		name   string
		owners []string
		common channel.Common
		ch     string
		m      engine.Inbound
	}{
		// GHSA-c28g-vh7m-fm7v: a wildcard inbound allowFrom was taken as the
		// owner list when ownerAllowFrom was empty.
		{"GHSA-c28g wildcard allowFrom, no owners", nil, channel.Common{DMPolicy: DMOpen, AllowFrom: []string{"*"}}, "whatsapp",
			engine.Inbound{Channel: "whatsapp", SenderID: "+15550000000"}},
		{"GHSA-c28g wildcard owner entry", []string{"whatsapp:*"}, channel.Common{}, "whatsapp",
			engine.Inbound{Channel: "whatsapp", SenderID: "+15550000000"}},
		// GHSA-r7vr-gr74-94p8: a sender allowed to talk (allowFrom) reached
		// owner-only commands.
		{"GHSA-r7vr allowlisted non-owner", []string{"whatsapp:+15551234567"}, channel.Common{DMPolicy: DMAllowlist, AllowFrom: []string{"+15550000000"}}, "whatsapp",
			engine.Inbound{Channel: "whatsapp", SenderID: "+15550000000"}},
		// GHSA-p73f-w79w-jqr5: another path to a command skipped the owner
		// check — here, owner identity must come from SenderID alone, the
		// same on every path (the gateway's command gate is tested in
		// engine/gateway).
		{"GHSA-p73f empty sender", []string{"whatsapp:+15551234567"}, channel.Common{DMPolicy: DMOpen}, "whatsapp",
			engine.Inbound{Channel: "whatsapp", SenderID: ""}},
		// CVE-2026-100585 (identity spoofing shapes): a display name, the
		// same id on another channel, a look-alike id.
		{"display name equals owner", []string{"whatsapp:+15551234567"}, channel.Common{DMPolicy: DMOpen}, "whatsapp",
			engine.Inbound{Channel: "whatsapp", SenderID: "+15550000000", SenderName: "+15551234567"}},
		{"owner id on another channel", []string{"whatsapp:+15551234567"}, channel.Common{DMPolicy: DMOpen}, "imessage",
			engine.Inbound{Channel: "imessage", SenderID: "+15551234567"}},
		{"email owner as whatsapp", []string{"email:ann@example.test"}, channel.Common{DMPolicy: DMOpen}, "whatsapp",
			engine.Inbound{Channel: "whatsapp", SenderID: "ann@example.test"}},
		{"suffix look-alike", []string{"email:ann@example.test"}, channel.Common{DMPolicy: DMOpen}, "email",
			engine.Inbound{Channel: "email", SenderID: "ann@example.test.evil.example"}},
		{"prefix look-alike", []string{"whatsapp:+1555123456"}, channel.Common{DMPolicy: DMOpen}, "whatsapp",
			engine.Inbound{Channel: "whatsapp", SenderID: "+15551234567"}},
		{"Kelvin sign folds to k", []string{"email:kim@example.test"}, channel.Common{DMPolicy: DMOpen}, "email",
			engine.Inbound{Channel: "email", SenderID: "\u212aim@example.test"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.m.ChatType = engine.ChatDirect
			p := &Policy{Channel: c.ch, Common: c.common, Owners: c.owners}
			if v := p.Decide(c.m, true); v.Owner {
				t.Fatalf("%+v made an owner (%s)", c.m, v.Reason)
			}
			if p.IsOwner(c.m.SenderID) {
				t.Fatal("IsOwner")
			}
		})
	}
	// And the real owner still is one, in the forms WhatsApp sends; a
	// number with formatting comes from no platform and is nobody.
	p := &Policy{Channel: "whatsapp", Owners: []string{"whatsapp:+1 (555) 123-4567"}}
	for _, id := range []string{"+15551234567", "15551234567@s.whatsapp.net", "15551234567@c.us"} {
		if !p.IsOwner(id) {
			t.Errorf("%q is the owner", id)
		}
	}
	for _, id := range []string{"+1 555 123 4567", "+1-555-123-4567", "15551234567@s.whatsapp.net.evil", "15551234567:3@s.whatsapp.net", "15551234567@lid"} {
		if p.IsOwner(id) {
			t.Errorf("%q is not the owner", id)
		}
	}
}

func TestPrivileged(t *testing.T) {
	for _, c := range []string{"approve", "Deny", "config", "debug", "model", "elevated", "think", "status", "compact", "some-future-command"} {
		if !Privileged(c) {
			t.Errorf("/%s must be owner-only", c)
		}
	}
	for _, c := range []string{"new", "reset", "help", "stop"} {
		if Privileged(c) {
			t.Errorf("/%s is for everyone", c)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		p    Policy
		want string
	}{
		{Policy{Channel: "whatsapp", Common: channel.Common{DMPolicy: "pair"}}, `channels.whatsapp.dmPolicy: "pair" is not one of pairing, allowlist, open, disabled`},
		{Policy{Channel: "email", Common: channel.Common{GroupPolicy: "all"}}, `channels.email.groupPolicy: "all" is not one of allowlist, open, disabled`},
		{Policy{Channel: "email", Common: channel.Common{DMPolicy: "allowlist"}}, `channels.email.allowFrom: dmPolicy allowlist needs at least one sender`},
	} {
		if err := c.p.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("got %v, want %s", err, c.want)
		}
	}
	if _, err := CompileMentions([]string{"ok", "(bad"}); err == nil || err.Error()[:40] != "messages.groupChat.mentionPatterns[1]: e" {
		t.Errorf("got %v", err)
	}
}
