// Package routing maps an inbound channel message to an agent and a session
// key (docs/design.md §3.3) with OpenClaw's bindings and session.dmScope, building
// the same keys OpenClaw builds for the same inputs:
//
//	agent:<agentId>:<mainKey>                                 direct, dmScope main
//	agent:<agentId>:direct:<peerId>                           per-peer
//	agent:<agentId>:<channel>:direct:<peerId>                 per-channel-peer
//	agent:<agentId>:<channel>:<accountId>:direct:<peerId>     per-account-channel-peer
//	agent:<agentId>:<channel>:group:<id>                      groups (…:channel:<id>, …:room:<id>)
//	agent:<agentId>:<channel>:group:<id>:topic:<topicId>      a forum topic of a group (engine.Inbound.Topic)
//
// Channel and account names are trimmed and lower-cased, as OpenClaw does.
// A peer id (the sender of a direct chat, else the chat id) is put in its
// canonical form (access.Canonical: the one identity rule; ASCII letters
// folded, so ASCII ids give OpenClaw's keys), then every byte outside
// printable ASCII, the space and "%" are percent-escaped: the key stays a
// valid session key, and two ids that access tells apart never share a
// session (a look-alike of an approved sender gets its own, and "a b" is
// not "a_b"). An empty peer id is "unknown"; one longer than 200 bytes is
// cut and a hash of the whole appended (ours: keys are bounded). A binding's
// peer is the same id written in config (access.ConfigID).
//
// The privacy default (dmScope ""), ours: an owner's DMs go to the agent's
// main session, where MEMORY.md is loaded; every other approved sender gets
// a per-channel-peer session, where it never is (Route.Main is false).
// An explicit dmScope applies to everyone, owners included.
//
// Bindings are matched most specific first, as OpenClaw's resolveAgentRoute:
// a binding naming the peer, then one naming the account, then one for the
// whole channel (accountId empty or "*"); none: the default agent.
package routing

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/access"
)

// maxPeerID bounds the peer id in a key; longer ids are cut and hashed.
const maxPeerID = 200

// Binding is one entry of bindings.
type Binding struct {
	AgentID  string
	Channel  string
	Account  string // "" or "*": every account
	PeerKind string // "" = any peer; else a chat type
	PeerID   string
}

// Router resolves routes.
type Router struct {
	Bindings     []Binding
	DefaultAgent string
	MainKey      string // default "main"
	DMScope      string // "" | main | per-peer | per-channel-peer | per-account-channel-peer
}

// Route is where a message goes.
type Route struct {
	AgentID string
	Key     engine.SessionKey
	// Main: the key is the agent's main session (MEMORY.md is loaded).
	Main bool
	// Binding says which binding matched ("" = the default agent).
	Binding string
}

// Resolve routes m; owner says whether its sender is an owner.
func (r *Router) Resolve(m engine.Inbound, owner bool) Route {
	ch := norm(m.Channel)
	account := norm(m.Account)
	if account == "" {
		account = "default"
	}
	kind := m.ChatType
	if kind == "" {
		kind = engine.ChatDirect
	}
	peer := m.ChatID
	if kind == engine.ChatDirect && m.SenderID != "" {
		peer = m.SenderID
	}
	agentID, how := r.agent(ch, account, kind, peer)
	route := Route{AgentID: agentID, Binding: how}
	mainKey := r.MainKey
	if mainKey == "" {
		mainKey = "main"
	}
	id := peerKey(m.Channel, peer)
	if len(id) > maxPeerID {
		// A session key is at most 512 bytes; an address may be longer.
		// "%h" never occurs in escapeKey's output (its escapes are "%"
		// and two hex digits), so no short id can spell a hashed one.
		sum := sha256.Sum256([]byte(id))
		id = id[:64] + "%h" + hex.EncodeToString(sum[:8])
	}
	if kind != engine.ChatDirect {
		route.Key = engine.AgentSessionKey(agentID, ch+":"+string(kind)+":"+id)
		if m.Topic != "" {
			// A forum topic keeps its own transcript (OpenClaw's
			// …:group:<chatId>:topic:<threadId>).
			route.Key += engine.SessionKey(":topic:" + escapeKey(m.Topic))
		}
		return route
	}
	scope := r.DMScope
	if scope == "" {
		scope = "per-channel-peer"
		if owner {
			scope = "main"
		}
	}
	switch scope {
	case "per-peer":
		route.Key = engine.AgentSessionKey(agentID, "direct:"+id)
	case "per-channel-peer":
		route.Key = engine.AgentSessionKey(agentID, ch+":direct:"+id)
	case "per-account-channel-peer":
		route.Key = engine.AgentSessionKey(agentID, ch+":"+account+":direct:"+id)
	default:
		route.Key = engine.AgentSessionKey(agentID, mainKey)
		route.Main = true
	}
	return route
}

func (r *Router) agent(ch, account string, kind engine.ChatType, peer string) (string, string) {
	var byAccount, byChannel *Binding
	for i := range r.Bindings {
		b := &r.Bindings[i]
		if norm(b.Channel) != ch {
			continue
		}
		ba := norm(b.Account)
		if ba != "" && ba != "*" && ba != account {
			continue
		}
		if b.PeerKind != "" || b.PeerID != "" {
			if (b.PeerKind == "" || b.PeerKind == string(kind)) && samePeer(ch, b.PeerID, peer) {
				return b.AgentID, "peer"
			}
			continue
		}
		switch {
		case ba == account && byAccount == nil:
			byAccount = b
		case (ba == "" || ba == "*") && byChannel == nil:
			byChannel = b
		}
	}
	switch {
	case byAccount != nil:
		return byAccount.AgentID, "account"
	case byChannel != nil:
		return byChannel.AgentID, "channel"
	}
	return r.DefaultAgent, ""
}

// norm trims and lower-cases a channel or account name (config names,
// ASCII), and replaces white space and control characters (never valid in
// a session key) with "_".
func norm(s string) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, strings.ToLower(strings.TrimSpace(s)))
}

// peerKey is the session-key form of a peer id of channel ch: its
// canonical key, escaped. An id access refuses (empty: "unknown"; invalid
// UTF-8 or overlong) is escaped as it is: no canonical key has its bytes.
func peerKey(ch, raw string) string {
	if raw == "" {
		return "unknown"
	}
	key := raw
	if id, err := access.Canonical(norm(ch), raw); err == nil {
		key = id.Key
	}
	return escapeKey(key)
}

// escapeKey percent-escapes every byte of s that is not printable ASCII,
// the space and "%" itself: injective, and valid in a session key.
func escapeKey(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '%' {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// samePeer reports whether a binding's peer (config) names peer (wire).
func samePeer(ch, binding, peer string) bool {
	b, err := access.ConfigID(ch, binding)
	if err != nil {
		return false
	}
	p, err := access.Canonical(ch, peer)
	return err == nil && b.Key == p.Key
}
