package routing

import (
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
)

func TestResolve(t *testing.T) {
	binds := []Binding{
		{AgentID: "work", Channel: "whatsapp", Account: "biz"},
		{AgentID: "vip", Channel: "whatsapp", PeerKind: "direct", PeerID: "+15550001111"},
		{AgentID: "fam", Channel: "whatsapp", PeerKind: "group", PeerID: "120363@g.us"},
		{AgentID: "mail", Channel: "email"},
	}
	dm := func(ch, acct, sender string) engine.Inbound {
		return engine.Inbound{Channel: ch, Account: acct, ChatType: engine.ChatDirect, SenderID: sender, ChatID: sender}
	}
	cases := []struct {
		name  string
		r     Router
		m     engine.Inbound
		owner bool
		want  string
		main  bool
	}{
		{"owner DM: main", Router{DefaultAgent: "main"}, dm("whatsapp", "", "+15551234567"), true, "agent:main:main", true},
		{"other DM: per-channel-peer", Router{DefaultAgent: "main"}, dm("whatsapp", "", "+15557654321"), false, "agent:main:whatsapp:direct:+15557654321", false},
		{"email DM lower-cased", Router{DefaultAgent: "main"}, dm("Email", "", "Ann@Example.TEST"), false, "agent:main:email:direct:ann@example.test", false},
		{"explicit main for all", Router{DefaultAgent: "main", DMScope: "main"}, dm("imessage", "", "+15557654321"), false, "agent:main:main", true},
		{"mainKey", Router{DefaultAgent: "main", DMScope: "main", MainKey: "home"}, dm("imessage", "", "x"), false, "agent:main:home", true},
		{"per-peer", Router{DefaultAgent: "main", DMScope: "per-peer"}, dm("imessage", "", "+1555"), true, "agent:main:direct:+1555", false},
		{"per-account-channel-peer", Router{DefaultAgent: "main", DMScope: "per-account-channel-peer"}, dm("whatsapp", "", "+1555"), false, "agent:main:whatsapp:default:direct:+1555", false},
		{"group", Router{DefaultAgent: "main"}, engine.Inbound{Channel: "whatsapp", ChatType: engine.ChatGroup, ChatID: "999@g.us", SenderID: "+1"}, true, "agent:main:whatsapp:group:999@g.us", false},
		{"room", Router{DefaultAgent: "main"}, engine.Inbound{Channel: "imessage", ChatType: engine.ChatRoom, ChatID: "Chat 42"}, false, "agent:main:imessage:room:chat_42", false},
		{"group no id", Router{DefaultAgent: "main"}, engine.Inbound{Channel: "imessage", ChatType: engine.ChatGroup}, false, "agent:main:imessage:group:unknown", false},
		{"account binding", Router{DefaultAgent: "main", Bindings: binds}, dm("whatsapp", "biz", "+1"), false, "agent:work:whatsapp:direct:+1", false},
		{"peer binding beats account", Router{DefaultAgent: "main", Bindings: binds}, dm("whatsapp", "biz", "+15550001111"), false, "agent:vip:whatsapp:direct:+15550001111", false},
		{"group peer binding", Router{DefaultAgent: "main", Bindings: binds}, engine.Inbound{Channel: "whatsapp", ChatType: engine.ChatGroup, ChatID: "120363@g.us"}, false, "agent:fam:whatsapp:group:120363@g.us", false},
		{"channel binding", Router{DefaultAgent: "main", Bindings: binds}, dm("email", "", "a@b.c"), true, "agent:mail:main", true},
		{"no binding", Router{DefaultAgent: "main", Bindings: binds}, dm("imessage", "", "a@b.c"), false, "agent:main:imessage:direct:a@b.c", false},
		{"long id hashed", Router{DefaultAgent: "main"}, dm("email", "", strings.Repeat("x", 900)+"@y.z"), false, "agent:main:email:direct:" + strings.Repeat("x", 64) + "~7d305aa91d287fb9", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.r.Resolve(c.m, c.owner)
			if string(got.Key) != c.want || got.Main != c.main {
				t.Fatalf("got %s main=%v, want %s main=%v", got.Key, got.Main, c.want, c.main)
			}
			if err := got.Key.Valid(); err != nil {
				t.Fatal(err)
			}
			if got.AgentID != got.Key.AgentID() {
				t.Fatalf("agent %s vs key %s", got.AgentID, got.Key)
			}
		})
	}
}
