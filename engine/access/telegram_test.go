package access

import (
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
)

// TestTelegram: numeric ids, "@username" entries matched against the
// sender's username (never its display name, never an owner), and forum
// topics' own keys over their group's.
func TestTelegram(t *testing.T) {
	owners := []string{"telegram:111"}
	dm := func(id, username, name string) engine.Inbound {
		return engine.Inbound{Channel: "telegram", ChatType: engine.ChatDirect, SenderID: id, ChatID: id, SenderUsername: username, SenderName: name, Text: "hi"}
	}
	topic := func(sender, topicID string, mentioned bool) engine.Inbound {
		return engine.Inbound{Channel: "telegram", ChatType: engine.ChatGroup, ChatID: "-1001", Topic: topicID, SenderID: sender, Text: "hi", Mentioned: mentioned}
	}
	allow := channel.Common{DMPolicy: DMAllowlist, AllowFrom: []string{"@Kate_Smith", "222"}}
	groups := channel.Common{GroupPolicy: GroupAllowlist, Groups: map[string]channel.Group{
		"-1001": {Topics: map[string]channel.Group{"7": {RequireMention: ptr(false)}, "9": {Enabled: ptr(false)}}},
	}}
	for _, c := range []struct {
		name   string
		common channel.Common
		m      engine.Inbound
		want   Action
		owner  bool
	}{
		{"owner by id", channel.Common{}, dm("111", "", ""), Answer, true},
		{"a username entry matches the username, case folded", allow, dm("333", "kate_SMITH", ""), Answer, false},
		{"an id entry", allow, dm("222", "", ""), Answer, false},
		{"the display name never matches", allow, dm("333", "", "@kate_smith"), Drop, false},
		{"a look-alike username is another user", allow, dm("333", "kate_smith\u200b", ""), Drop, false},
		{"an owner's username gives nothing: owners are ids", channel.Common{}, dm("444", "owner_name", ""), Pair, false},
		{"group topic without mention: context", groups, topic("555", "", false), Context, false},
		{"topic 7 needs no mention", groups, topic("555", "7", false), Answer, false},
		{"topic 9 is disabled", groups, topic("555", "9", true), Drop, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &Policy{Channel: "telegram", Common: c.common, Owners: owners}
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			v := p.Decide(c.m, false)
			if v.Action != c.want || v.Owner != c.owner {
				t.Errorf("got %s owner=%v (%s), want %s owner=%v", v.Action, v.Owner, v.Reason, c.want, c.owner)
			}
		})
	}
}
