// Package access decides who may talk to the assistant on a channel
// (docs/design.md §3.2, §10) with OpenClaw's keys and values, and keeps the
// pairing requests of unknown senders.
//
// A Policy is one channel account's channel.Common plus the owners
// (commands.ownerAllowFrom) and the mention patterns
// (messages.groupChat.mentionPatterns). Decide is a pure function of the
// policy, the message and whether the sender was approved by pairing.
//
// Rules, and the choices made where OpenClaw's docs are silent:
//   - Ids are compared in canonical form only (Identity, below).
//   - Owners are "<channel>:<senderId>" entries of commands.ownerAllowFrom.
//     An entry for one channel never makes the same id an owner on another
//     channel, "*" is never an owner, and neither the display name nor any
//     text of the message is looked at. Owners are always answered in DMs
//     and may always trigger in groups the group policy lets in.
//   - Direct chats: disabled drops; open answers anyone; allowlist answers
//     allowFrom ("*" = anyone); pairing (the default) answers allowFrom and
//     senders approved by `openclaw pairing approve`, and gives everyone
//     else a pairing code (Pair). A pending sender's messages are dropped:
//     nothing they wrote before approval reaches the model.
//   - Groups: groupPolicy disabled drops; allowlist (the default) lets in
//     only groups listed under groups (by chat id, or "*"); open lets in
//     every group. groups.<id>.enabled=false drops. Who may trigger: owners,
//     then groups.<id>.allowFrom, else groupAllowFrom, else allowFrom; when
//     all are empty, every member of a let-in group (listing a group is the
//     decision to let its members talk). Pairing approvals are for DMs only:
//     they never authorize a sender in a group. A sender who may not trigger
//     is dropped, not kept as context.
//   - requireMention (default true): a message that does not mention the
//     assistant (the platform's own mention or reply, or a mention pattern)
//     is kept as context for the next answered message (Context) — except
//     an owner's /approve or /deny, which answers a request the assistant
//     raised and needs no mention.
//   - From a channel, slash commands other than /new, /reset, /stop and
//     /help (/approve, /deny, /model, /config, /status …) run for owners
//     only.
//
// # Identity
//
// Ids are compared in canonical form only: package identity holds the
// rules (Canonical for ids from the wire, ConfigID for the entries the
// owner types, Display to show either) and the check of the access keys
// (identity.Owner, identity.Keys.Check) that Policy.Validate runs here and
// package config runs for `openclaw config validate` and at load. This
// package applies it to owners, allowFrom, groupAllowFrom,
// groups.<id>.allowFrom, the groups map, pairing requests and approvals;
// package routing to session keys and binding peers. Adapters hand the
// platform's id over untouched. Ids are shown to people through Display
// (api.EscapeID in packages that cannot import identity).
//
// Session keys (package routing) hold the canonical key, percent-escaped;
// for ASCII ids that is the key OpenClaw builds. Keys of ids that were
// folded differently before (non-ASCII ids, ids with spaces) change: such a
// sender starts a new session and the old one stays in the store.
//
// The id forms each platform sends, and that the owner's config entry must
// match (the forms the adapters report; docs/design.md §8):
//
//   - iMessage via imsg (docs/json.md): sender is Messages' raw handle —
//     E.164 "+15551234567" for phones, the address for e-mail handles
//     ("kate@example.com", case as Messages stored it), digits for SMS
//     short codes, letters for alphanumeric SMS senders, "urn:biz:…" for
//     Business Chat. The chat id is imsg's chat_id in decimal ("42"); a
//     row without one falls back to "chat_guid:<guid>" (guid "iMessage;-;
//     +1555…", "SMS;-;…", "any;-;…" on newer macOS, "…;+;chat123…" for
//     groups), then "chat_identifier:…", then the sender handle.
//   - iMessage via BlueBubbles: sender is handle.address (the same raw
//     handle); the chat id is the chat guid ("iMessage;-;+1555…",
//     "iMessage;+;chat123…").
//   - WhatsApp (whatsmeow): sender "+<digits>" for a phone-number JID
//     ("15551234567@s.whatsapp.net" or its SenderAlt), else the LID JID
//     "123456789@lid"; chat ids are JIDs ("…@s.whatsapp.net", groups
//     "120363…@g.us").
//   - Telegram: sender is the user's numeric id ("123456789"), the chat
//     id the chat's ("123456789" for a DM, "-100…" for a supergroup);
//     a forum topic is engine.Inbound.Topic, not part of the chat id.
//     allowFrom and groupAllowFrom may also list "@username", matched
//     against the sender's username at the time of the message
//     (identity.Handle); owners must be listed by id.
//   - E-mail: the From addr-spec as net/mail parses it (quotes removed),
//     chat id the same address.
package access

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/access/identity"
	"github.com/openclaw-edge/edge/engine/channel"
)

// DM policies (channels.<name>.dmPolicy).
const (
	DMPairing   = identity.DMPairing
	DMAllowlist = identity.DMAllowlist
	DMOpen      = identity.DMOpen
	DMDisabled  = identity.DMDisabled
)

// Group policies (channels.<name>.groupPolicy).
const (
	GroupAllowlist = identity.GroupAllowlist
	GroupOpen      = identity.GroupOpen
	GroupDisabled  = identity.GroupDisabled
)

// Action is what the gateway does with a message.
type Action int

// Actions.
const (
	Drop    Action = iota // nothing: not recorded, not answered
	Pair                  // an unknown sender: reply once with a pairing code
	Context               // kept as group context for the next answered message
	Answer                // run a turn
)

func (a Action) String() string {
	return [...]string{"drop", "pair", "context", "answer"}[a]
}

// Verdict is Decide's answer.
type Verdict struct {
	Action Action
	// Owner: the sender is an owner (commands.ownerAllowFrom).
	Owner bool
	// Mentioned: the message mentions the assistant.
	Mentioned bool
	// Reason says why, for the log.
	Reason string
}

// Policy is one channel account's access settings.
type Policy struct {
	Channel string
	channel.Common
	// Owners are commands.ownerAllowFrom entries ("whatsapp:+15551234567").
	Owners []string
	// Mentions are messages.groupChat.mentionPatterns, compiled.
	Mentions []*regexp.Regexp
}

// CompileMentions compiles mention patterns (Go RE2 syntax, matched
// case-insensitively), naming the bad one.
func CompileMentions(patterns []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for i, p := range patterns {
		re, err := regexp.Compile("(?i)" + p)
		if err != nil {
			return nil, fmt.Errorf("messages.groupChat.mentionPatterns[%d]: %v", i, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// Validate checks the policy values and this channel's owner entries
// with identity's rules, the ones package config applies to the whole
// file at load and in `openclaw config validate`: every problem, joined,
// each naming its key.
func (p *Policy) Validate() error {
	var errs []error
	for i, o := range p.Owners {
		// Another channel's entry is that channel's to report (config
		// reports every entry).
		if ch, _, err := identity.Owner(o); err != nil && ch == identity.FoldASCII(p.Channel) {
			errs = append(errs, fmt.Errorf("commands.ownerAllowFrom[%d]: %w", i, err))
		}
	}
	for _, pr := range p.keys().Check(p.Channel) {
		key := "channels." + p.Channel + "." + strings.Join(pr.Path, ".")
		if pr.Index >= 0 {
			key += "[" + strconv.Itoa(pr.Index) + "]"
		}
		errs = append(errs, fmt.Errorf("%s: %s", key, pr.Reason))
	}
	return errors.Join(errs...)
}

// keys are the policy's access keys as identity checks them.
func (p *Policy) keys() identity.Keys {
	k := identity.Keys{DMPolicy: p.DMPolicy, GroupPolicy: p.GroupPolicy, AllowFrom: p.AllowFrom, GroupAllowFrom: p.GroupAllowFrom}
	if p.Groups != nil {
		k.Groups = make(map[string][]string, len(p.Groups))
		for g, v := range p.Groups {
			k.Groups[g] = v.AllowFrom
			for t, tv := range v.Topics {
				k.AddTopic(g, t, tv.AllowFrom)
			}
		}
	}
	return k
}

// IsOwner reports whether sender (an id on channel ch) is an owner.
func (p *Policy) IsOwner(sender string) bool { return IsOwner(p.Owners, p.Channel, sender) }

// IsOwner reports whether sender, an id as channel ch's platform sent it,
// is listed in owners ("<channel>:<id>" entries), compared in canonical
// form (Canonical, ConfigID). "*" entries, entries of other channels and
// entries that are not valid ids never match; nor does a refused sender.
func IsOwner(owners []string, ch, sender string) bool {
	s, err := Canonical(ch, sender)
	if err != nil {
		return false
	}
	for _, o := range owners {
		if c, e, err := identity.Owner(o); err == nil && c == identity.FoldASCII(ch) && e.Key == s.Key {
			return true
		}
	}
	return false
}

// listed reports whether sender is in list ("*" = anyone, even a refused
// id: "*" is the decision to hear everyone).
func listed(list []string, ch, sender, username string) bool {
	s, serr := Canonical(ch, sender)
	// A "@name" entry (Telegram) matches the sender's current username,
	// never its id: identity.Handle.
	h, herr := identity.Handle(ch, username)
	for _, e := range list {
		anyone, id, err := identity.ListEntry(ch, e)
		if anyone {
			return true
		}
		if serr == nil && err == nil && id.Key == s.Key {
			return true
		}
		if herr == nil && err == nil && id.Key == h.Key {
			return true
		}
	}
	return false
}

// Decide says what to do with m. approved: the sender was approved by
// pairing on this channel account.
func (p *Policy) Decide(m engine.Inbound, approved bool) Verdict {
	owner := p.IsOwner(m.SenderID)
	if m.ChatType == engine.ChatDirect || m.ChatType == "" {
		return p.direct(m, owner, approved)
	}
	return p.group(m, owner)
}

func (p *Policy) direct(m engine.Inbound, owner, approved bool) Verdict {
	v := Verdict{Owner: owner, Mentioned: true}
	switch {
	case owner:
		v.Action, v.Reason = Answer, "owner"
	case p.DMPolicy == DMDisabled:
		v.Action, v.Reason = Drop, "dmPolicy disabled"
	case p.DMPolicy == DMOpen:
		v.Action, v.Reason = Answer, "dmPolicy open"
	case listed(p.AllowFrom, p.Channel, m.SenderID, m.SenderUsername):
		v.Action, v.Reason = Answer, "allowFrom"
	case p.DMPolicy == DMAllowlist:
		v.Action, v.Reason = Drop, "not in allowFrom"
	case approved:
		v.Action, v.Reason = Answer, "approved by pairing"
	case !usable(p.Channel, m.SenderID):
		// A pairing request needs an id the owner can approve.
		v.Action, v.Reason = Drop, "unusable sender id"
	default:
		v.Action, v.Reason = Pair, "unknown sender"
	}
	return v
}

// Group returns the settings of group id (a chat id as the platform sent
// it): the entry whose key is the same id in canonical form, else "*".
func (p *Policy) Group(id string) (channel.Group, bool) {
	if c, err := Canonical(p.Channel, id); err == nil {
		for k, g := range p.Groups {
			if k == "*" {
				continue
			}
			// Validate refuses two keys for one group, so at most one
			// matches.
			if e, err := ConfigID(p.Channel, k); err == nil && e.Key == c.Key {
				return g, true
			}
		}
	}
	g, ok := p.Groups["*"]
	return g, ok
}

func (p *Policy) group(m engine.Inbound, owner bool) Verdict {
	v := Verdict{Owner: owner}
	g, listedGroup := p.Group(m.ChatID)
	if t, ok := g.Topics[m.Topic]; ok && m.Topic != "" {
		// A topic's own keys win over its group's.
		if t.RequireMention != nil {
			g.RequireMention = t.RequireMention
		}
		if t.Enabled != nil {
			g.Enabled = t.Enabled
		}
		if len(t.AllowFrom) > 0 {
			g.AllowFrom = t.AllowFrom
		}
	}
	switch {
	case p.GroupPolicy == GroupDisabled:
		v.Reason = "groupPolicy disabled"
		return v
	case (p.GroupPolicy == "" || p.GroupPolicy == GroupAllowlist) && !listedGroup:
		v.Reason = "group not listed in groups"
		return v
	case g.Enabled != nil && !*g.Enabled:
		v.Reason = "group disabled"
		return v
	}
	if !owner {
		list := g.AllowFrom
		if len(list) == 0 {
			list = p.GroupAllowFrom
		}
		if len(list) == 0 {
			list = p.AllowFrom
		}
		if len(list) > 0 && !listed(list, p.Channel, m.SenderID, m.SenderUsername) {
			v.Reason = "sender not allowed in groups"
			return v
		}
	}
	v.Mentioned = m.Mentioned || p.mentions(m.Text)
	// An owner's /approve or /deny needs no mention: it answers a request
	// the assistant itself raised, and the turn that asked is waiting.
	if owner && isApproval(m.Text) {
		v.Action, v.Reason = Answer, "owner approval command"
		return v
	}
	if (g.RequireMention == nil || *g.RequireMention) && !v.Mentioned {
		v.Action, v.Reason = Context, "not mentioned"
		return v
	}
	v.Action, v.Reason = Answer, "group"
	return v
}

// usable reports whether Canonical accepts id.
func usable(ch, id string) bool {
	_, err := Canonical(ch, id)
	return err == nil
}

func (p *Policy) mentions(text string) bool {
	return slices.ContainsFunc(p.Mentions, func(re *regexp.Regexp) bool { return re.MatchString(text) })
}

// isApproval reports whether text is an /approve or /deny command, its
// word split off as the gateway's command parser does (at a space, a tab
// or a newline).
func isApproval(text string) bool {
	word := strings.TrimSpace(text)
	if i := strings.IndexAny(word, " \t\n"); i >= 0 {
		word = word[:i]
	}
	switch strings.ToLower(word) {
	case "/approve", "/deny":
		return true
	}
	return false
}

// Privileged reports whether a slash command is for owners only from a
// channel: every command but /new, /reset, /stop and /help (deny by
// default, so a command added later is owner-only until said otherwise).
func Privileged(cmd string) bool {
	switch strings.ToLower(cmd) {
	case "new", "reset", "stop", "help":
		return false
	}
	return true
}

// Reserved reports whether a slash word names one of OpenClaw's
// owner-only commands this gateway does not implement (/config, /debug,
// /elevated, /exec, /bash, /restart …): from a channel it is refused
// rather than passed to the model as text, so nobody learns to rely on it.
func Reserved(word string) bool {
	switch strings.ToLower(word) {
	case "config", "debug", "elevated", "exec", "bash", "restart", "allowlist", "models", "verbose", "reasoning", "send", "activation", "pair", "devices", "approvals":
		return true
	}
	return false
}
