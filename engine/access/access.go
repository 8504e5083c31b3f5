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
//   - Owners are "<channel>:<senderId>" entries of commands.ownerAllowFrom,
//     compared exactly after normalization (phone numbers: "+" and digits;
//     email: lower-case). An entry for one channel never makes the same id
//     an owner on another channel, "*" is never an owner, and neither the
//     display name nor any text of the message is looked at. Owners are
//     always answered in DMs and may always trigger in groups the group
//     policy lets in.
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
//     is kept as context for the next answered message (Context).
//   - From a channel, slash commands other than /new, /reset, /stop and
//     /help (/approve, /deny, /model, /config, /status …) run for owners
//     only.
package access

import (
	"fmt"
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
	return nil
}

// Normalize puts a sender id of channel in the form owners and allowlists
// are compared in: phone numbers "+<digits>" (spaces, dashes, dots and
// parentheses dropped), anything with an "@" lower-cased, the rest trimmed.
func Normalize(ch, id string) string {
	id = strings.TrimSpace(id)
	if strings.Contains(id, "@") {
		return asciiLower(id)
	}
	if strings.HasPrefix(id, "+") || (ch == "whatsapp" && id != "" && strings.Trim(id, "0123456789 -.()") == "") {
		var b strings.Builder
		b.WriteByte('+')
		for _, r := range id {
			if r >= '0' && r <= '9' {
				b.WriteRune(r)
			}
		}
		if b.Len() > 1 {
			return b.String()
		}
	}
	return id
}

// asciiLower lower-cases ASCII letters only: strings.ToLower folds U+212A
// (Kelvin sign) to "k" and "İ" to "i", which would let a look-alike
// address compare equal to an owner's.
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

// IsOwner reports whether sender (an id on channel ch) is an owner.
func (p *Policy) IsOwner(sender string) bool { return IsOwner(p.Owners, p.Channel, sender) }

// IsOwner reports whether sender, an id on channel ch, is listed in owners
// ("<channel>:<id>" entries). "*" entries never match.
func IsOwner(owners []string, ch, sender string) bool {
	s := Normalize(ch, sender)
	if s == "" || s == "*" {
		return false
	}
	for _, o := range owners {
		c, id, ok := strings.Cut(strings.TrimSpace(o), ":")
		if !ok || !strings.EqualFold(c, ch) {
			continue
		}
		if n := Normalize(ch, id); n != "*" && n == s {
			return true
		}
	}
	return false
}

// listed reports whether sender is in list ("*" = anyone).
func listed(list []string, ch, sender string) bool {
	s := Normalize(ch, sender)
	for _, e := range list {
		e = strings.TrimSpace(e)
		// An entry may carry its channel prefix, as in ownerAllowFrom.
		if c, id, ok := strings.Cut(e, ":"); ok && strings.EqualFold(c, ch) {
			e = id
		}
		if e == "*" || (s != "" && Normalize(ch, e) == s) {
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
	case listed(p.AllowFrom, p.Channel, m.SenderID):
		v.Action, v.Reason = Answer, "allowFrom"
	case p.DMPolicy == DMAllowlist:
		v.Action, v.Reason = Drop, "not in allowFrom"
	case approved:
		v.Action, v.Reason = Answer, "approved by pairing"
	default:
		v.Action, v.Reason = Pair, "unknown sender"
	}
	return v
}

// Group returns the settings of group id: its own entry, else "*".
func (p *Policy) Group(id string) (channel.Group, bool) {
	if g, ok := p.Groups[id]; ok {
		return g, true
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
	if (g.RequireMention == nil || *g.RequireMention) && !v.Mentioned {
		v.Action, v.Reason = Context, "not mentioned"
		return v
	}
	v.Action, v.Reason = Answer, "group"
	return v
}

func (p *Policy) mentions(text string) bool {
	return slices.ContainsFunc(p.Mentions, func(re *regexp.Regexp) bool { return re.MatchString(text) })
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
