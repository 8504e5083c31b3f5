// Package access decides who may talk to the assistant on a channel
// (DESIGN.md §3.2, §10) with OpenClaw's keys and values, and keeps the
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
// Canonical is the one place sender and chat ids are made comparable.
// Adapters hand the platform's id over untouched; Canonical, applied by
// this package (owners, allowFrom, groupAllowFrom, groups.<id>.allowFrom,
// the groups map, pairing requests and approvals) and by package routing
// (session keys, binding peers), either yields an ID or refuses. The rules
// are deliberately few, so that an attacker who controls every byte of an
// id can only ever equal an owner by sending the owner's id:
//
//   - Refused: the empty id, invalid UTF-8, more than MaxIDBytes bytes.
//     A refused sender is nobody: never an owner, never listed, never
//     approved, never given a pairing code.
//   - Verbatim: an id with any byte outside printable ASCII (non-ASCII
//     letters, look-alikes such as U+212A KELVIN SIGN or Cyrillic "а",
//     full-width or Arabic-Indic digits, control characters, bidi and
//     zero-width format characters, U+00AD soft hyphen, non-ASCII spaces).
//     Its key is the id byte for byte: nothing is folded, normalized
//     (no NFC/NFKC) or stripped, so it can never equal an ASCII id.
//   - Phone: "+" and 7 to 15 ASCII digits, the first not "0" (E.164:
//     country codes never start with 0, at most 15 digits; 7 is the
//     shortest real number, e.g. Niue's). Key: the id itself. Anything
//     else that starts with "+" ("+15550001111x", "+1555…;ext=2",
//     "+1 555 000 1111", "+015550001111") is not a phone number and is
//     compared as an opaque id: never cleaned into one.
//   - Every other printable-ASCII id (addresses with "@", JIDs, chat ids,
//     chat GUIDs, short codes, the "00"-prefixed or national numbers
//     some SMS senders show) is compared with its ASCII letters folded to
//     lower case, and nothing else changed: e-mail addresses and
//     iMessage's e-mail handles are case-insensitive in practice, and
//     every other id form our platforms send is digits or case-insensitive
//     (Apple's chat GUIDs, WhatsApp JIDs). OpenClaw lower-cases the same
//     ids in session keys.
//   - On WhatsApp, a phone-number JID "<E.164 digits>@s.whatsapp.net" (or
//     the legacy "@c.us") is the phone number "+<digits>": the adapter
//     reports senders that way already, and an owner may list either form.
//     A JID with a device part, a LID ("…@lid") or a group ("…@g.us") is
//     an opaque id.
//
// Config entries (ownerAllowFrom, allowFrom, groupAllowFrom, the keys of
// groups) are typed by the owner and are tidied first (ConfigID): outer
// ASCII white space trimmed, a "mailto:"/"tel:" scheme dropped, and a
// phone number written "+1 (555) 000-1111" (ASCII spaces, dashes, dots
// and parentheses only) read as "+15550001111"; on WhatsApp digits without
// the "+" too. An entry that starts with "+" and is not a phone number
// after that, or that has control, format or non-ASCII white-space
// characters, is a config error (Policy.Validate), not an id that silently
// never matches. Ids from the wire are never tidied.
//
// Ids are shown to people (logs, pairing lists, the owner's pairing note)
// through Display (api.EscapeID in packages that cannot import this one):
// plain printable ASCII as it is, anything else Go-quoted with every
// non-ASCII character escaped ("\u212aate@example.com").
//
// Session keys (package routing) hold the canonical key, percent-escaped;
// for ASCII ids that is the key OpenClaw builds. Keys of ids that were
// folded differently before (non-ASCII ids, ids with spaces) change: such a
// sender starts a new session and the old one stays in the store.
//
// The id forms each platform sends, and that the owner's config entry must
// match (the forms the adapters report; DESIGN.md §8):
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
//   - E-mail: the From addr-spec as net/mail parses it (quotes removed),
//     chat id the same address.
package access

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
)

// DM policies (channels.<name>.dmPolicy).
const (
	DMPairing   = "pairing"
	DMAllowlist = "allowlist"
	DMOpen      = "open"
	DMDisabled  = "disabled"
)

// Group policies (channels.<name>.groupPolicy).
const (
	GroupAllowlist = "allowlist"
	GroupOpen      = "open"
	GroupDisabled  = "disabled"
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

// Validate checks the policy values, naming the key.
func (p *Policy) Validate() error {
	key := "channels." + p.Channel
	switch p.DMPolicy {
	case "", DMPairing, DMAllowlist, DMOpen, DMDisabled:
	default:
		return fmt.Errorf("%s.dmPolicy: %q is not one of pairing, allowlist, open, disabled", key, p.DMPolicy)
	}
	switch p.GroupPolicy {
	case "", GroupAllowlist, GroupOpen, GroupDisabled:
	default:
		return fmt.Errorf("%s.groupPolicy: %q is not one of allowlist, open, disabled", key, p.GroupPolicy)
	}
	if p.DMPolicy == DMAllowlist && len(p.AllowFrom) == 0 {
		return fmt.Errorf("%s.allowFrom: dmPolicy allowlist needs at least one sender", key)
	}
	for i, o := range p.Owners {
		c, id, ok := strings.Cut(strings.TrimSpace(o), ":")
		if !ok || !strings.EqualFold(c, p.Channel) || strings.TrimSpace(id) == "*" {
			continue // another channel's, or refused by config validation
		}
		if _, err := ConfigID(p.Channel, id); err != nil {
			return fmt.Errorf("commands.ownerAllowFrom[%d]: %w", i, err)
		}
	}
	if err := validateEntries(p.Channel, key+".allowFrom", p.AllowFrom); err != nil {
		return err
	}
	if err := validateEntries(p.Channel, key+".groupAllowFrom", p.GroupAllowFrom); err != nil {
		return err
	}
	seen := map[string]string{}
	for _, g := range slices.Sorted(maps.Keys(p.Groups)) {
		if err := validateEntries(p.Channel, key+".groups."+g+".allowFrom", p.Groups[g].AllowFrom); err != nil {
			return err
		}
		if g == "*" {
			continue
		}
		id, err := ConfigID(p.Channel, g)
		if err != nil {
			return fmt.Errorf("%s.groups: %w", key, err)
		}
		if other, dup := seen[id.Key]; dup {
			return fmt.Errorf("%s.groups: %s and %s name the same group", key, Display(other), Display(g))
		}
		seen[id.Key] = g
	}
	return nil
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
		c, id, ok := strings.Cut(strings.TrimSpace(o), ":")
		if !ok || !strings.EqualFold(c, ch) || strings.TrimSpace(id) == "*" {
			continue
		}
		if e, err := ConfigID(ch, id); err == nil && e.Key == s.Key {
			return true
		}
	}
	return false
}

// listed reports whether sender is in list ("*" = anyone, even a refused
// id: "*" is the decision to hear everyone).
func listed(list []string, ch, sender string) bool {
	s, serr := Canonical(ch, sender)
	for _, e := range list {
		// An entry may carry its channel prefix, as in ownerAllowFrom.
		if e = stripChannel(ch, e); e == "*" {
			return true
		}
		if serr != nil {
			continue
		}
		if id, err := ConfigID(ch, e); err == nil && id.Key == s.Key {
			return true
		}
	}
	return false
}

// stripChannel drops a "<ch>:" prefix from an allowFrom entry.
func stripChannel(ch, e string) string {
	if c, id, ok := strings.Cut(strings.TrimSpace(e), ":"); ok && strings.EqualFold(c, ch) {
		return strings.TrimSpace(id)
	}
	return strings.TrimSpace(e)
}

// validateEntries checks the sender entries of a list, naming the key.
func validateEntries(ch, key string, list []string) error {
	for i, e := range list {
		if e = stripChannel(ch, e); e == "*" {
			continue
		}
		if _, err := ConfigID(ch, e); err != nil {
			return fmt.Errorf("%s[%d]: %w", key, i, err)
		}
	}
	return nil
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
	case listed(p.AllowFrom, p.Channel, m.SenderID):
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
		if len(list) > 0 && !listed(list, p.Channel, m.SenderID) {
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

// isApproval reports whether text is an /approve or /deny command.
func isApproval(text string) bool {
	word, _, _ := strings.Cut(strings.TrimSpace(text), " ")
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
