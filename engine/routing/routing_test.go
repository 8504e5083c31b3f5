package routing

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/access"
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
		{"room", Router{DefaultAgent: "main"}, engine.Inbound{Channel: "imessage", ChatType: engine.ChatRoom, ChatID: "Chat 42"}, false, "agent:main:imessage:room:chat%2042", false},
		{"group no id", Router{DefaultAgent: "main"}, engine.Inbound{Channel: "imessage", ChatType: engine.ChatGroup}, false, "agent:main:imessage:group:unknown", false},
		{"account binding", Router{DefaultAgent: "main", Bindings: binds}, dm("whatsapp", "biz", "+1"), false, "agent:work:whatsapp:direct:+1", false},
		{"peer binding beats account", Router{DefaultAgent: "main", Bindings: binds}, dm("whatsapp", "biz", "+15550001111"), false, "agent:vip:whatsapp:direct:+15550001111", false},
		{"group peer binding", Router{DefaultAgent: "main", Bindings: binds}, engine.Inbound{Channel: "whatsapp", ChatType: engine.ChatGroup, ChatID: "120363@g.us"}, false, "agent:fam:whatsapp:group:120363@g.us", false},
		{"channel binding", Router{DefaultAgent: "main", Bindings: binds}, dm("email", "", "a@b.c"), true, "agent:mail:main", true},
		{"no binding", Router{DefaultAgent: "main", Bindings: binds}, dm("imessage", "", "a@b.c"), false, "agent:main:imessage:direct:a@b.c", false},
		{"long id hashed", Router{DefaultAgent: "main"}, dm("email", "", strings.Repeat("x", 900)+"@y.z"), false, "agent:main:email:direct:" + strings.Repeat("x", 64) + "%h7d305aa91d287fb9", false},
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

// TestPeerIdentity: session keys are built from access's canonical ids:
// the forms a platform sends for one person share a session, look-alikes
// and near-misses never do, and every key is a valid session key.
func TestPeerIdentity(t *testing.T) {
	r := Router{DefaultAgent: "main", Bindings: []Binding{{AgentID: "vip", Channel: "whatsapp", PeerKind: "direct", PeerID: "+1 (555) 000-1111"}}}
	key := func(ch, sender string) string {
		got := r.Resolve(engine.Inbound{Channel: ch, ChatType: engine.ChatDirect, SenderID: sender, ChatID: sender}, false)
		if err := got.Key.Valid(); err != nil {
			t.Fatalf("%q: %v", sender, err)
		}
		return string(got.Key)
	}
	same := [][2]string{
		{"+15550001111", "15550001111@s.whatsapp.net"},
		{"Kate@Example.com", "kate@example.com"},
	}
	for _, s := range same {
		ch := "whatsapp"
		if strings.Contains(s[0], "@E") {
			ch = "imessage"
		}
		if a, b := key(ch, s[0]), key(ch, s[1]); a != b {
			t.Errorf("%q and %q: %s vs %s", s[0], s[1], a, b)
		}
	}
	if got := key("whatsapp", "15550001111@s.whatsapp.net"); got != "agent:vip:whatsapp:direct:+15550001111" {
		t.Errorf("binding by JID: %s", got)
	}
	if got := key("imessage", "\u212aate@example.com"); got != "agent:main:imessage:direct:%E2%84%AAate@example.com" {
		t.Errorf("look-alike key %s", got)
	}
	base := key("imessage", "kate@example.com")
	phone := key("imessage", "+15550001111")
	for _, id := range []string{"\u212aate@example.com", "k\u0430te@example.com", "kate@example.com\u200b", "kate@example.com ", "kate@example.com_", "kate%40example.com"} {
		if k := key("imessage", id); k == base {
			t.Errorf("%q shares the session %s", id, k)
		}
	}
	for _, id := range []string{"+15550001111x", "+15550001111;x", "+1555000111\uff11", "+1 555 000 1111", "+1%20555%20000%201111", "+1555\u200b0001111"} {
		if k := key("imessage", id); k == phone {
			t.Errorf("%q shares the session %s", id, k)
		}
	}
	// The old "_" for white space joined "a b" and "a_b".
	if key("imessage", "a b") == key("imessage", "a_b") {
		t.Error(`"a b" and "a_b" share a session`)
	}
}

// FuzzPeerKey: two peers get one session key only when access says they
// are one id (or the key is a hashed long one), and every key is valid.
func FuzzPeerKey(f *testing.F) {
	f.Add("imessage", "kate@example.com", "\u212aate@example.com")
	f.Add("whatsapp", "+15550001111", "15550001111@s.whatsapp.net")
	f.Add("imessage", "a b", "a%20b")
	f.Add("email", "", "unknown")
	// A short id spelling the hashed key of a long one.
	long := strings.Repeat("a", 300) + "@example.com"
	sum := sha256.Sum256([]byte(long))
	f.Add("email", long, long[:64]+"%h"+hex.EncodeToString(sum[:8]))
	f.Add("email", long, long[:64]+"~"+hex.EncodeToString(sum[:8]))
	f.Fuzz(func(t *testing.T, ch, a, b string) {
		r := Router{DefaultAgent: "main", DMScope: "per-peer"}
		ka := r.Resolve(engine.Inbound{Channel: ch, ChatType: engine.ChatDirect, SenderID: a}, false).Key
		kb := r.Resolve(engine.Inbound{Channel: ch, ChatType: engine.ChatDirect, SenderID: b}, false).Key
		if err := ka.Valid(); err != nil {
			t.Fatalf("%q: %v", a, err)
		}
		if ka != kb || a == b || a == "" || b == "" || (strings.Contains(string(ka), "%h") && len(a) > maxPeerID && len(b) > maxPeerID) {
			return
		}
		if !access.Same(norm(ch), a, b) {
			t.Fatalf("%q and %q share %s", a, b, ka)
		}
	})
}
