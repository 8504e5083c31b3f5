package identity

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// DM policies (channels.<name>.dmPolicy); "" is DMPairing.
const (
	DMPairing   = "pairing"
	DMAllowlist = "allowlist"
	DMOpen      = "open"
	DMDisabled  = "disabled"
)

// Group policies (channels.<name>.groupPolicy); "" is GroupAllowlist.
const (
	GroupAllowlist = "allowlist"
	GroupOpen      = "open"
	GroupDisabled  = "disabled"
)

// Owner reads a commands.ownerAllowFrom entry, "<channel>:<sender id>":
// its channel, ASCII lower-cased, and its id in canonical form (ConfigID),
// or why the entry can name no owner. ch is set whenever the entry has a
// channel name, also with an error, so that a caller checking one
// channel's entries can tell whose mistake it is.
func Owner(entry string) (ch string, id ID, err error) {
	c, raw, ok := strings.Cut(strings.TrimSpace(entry), ":")
	c, raw = strings.TrimSpace(c), strings.TrimSpace(raw)
	switch {
	case !ok || c == "" || raw == "":
		return "", ID{}, fmt.Errorf("%s: want <channel>:<sender id>, e.g. \"whatsapp:+15551234567\"", strconv.QuoteToASCII(entry))
	case !channelName(c):
		// Compared ASCII-only with the channel's name: anything else
		// would be an owner of no channel, silently.
		return "", ID{}, fmt.Errorf("%s: %s is not a channel name (ASCII letters, digits, - and _)", strconv.QuoteToASCII(entry), strconv.QuoteToASCII(c))
	}
	ch = FoldASCII(c)
	if strings.Contains(raw, "*") {
		return ch, ID{}, fmt.Errorf("%s: a wildcard never makes an owner; list each owner", strconv.QuoteToASCII(entry))
	}
	if ch == "telegram" && strings.HasPrefix(raw, "@") {
		return ch, ID{}, fmt.Errorf("%s: a Telegram owner is listed by numeric user id (usernames change hands); ask @userinfobot, or read it in `openclaw logs` after you write to the bot", strconv.QuoteToASCII(entry))
	}
	if id, err = ConfigID(ch, raw); err != nil {
		return ch, ID{}, err
	}
	return ch, id, nil
}

// channelName reports whether s can be a channel's name.
func channelName(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return s != ""
}

// ListEntry reads an entry of a sender list of channel ch (allowFrom,
// groupAllowFrom, groups.<id>.allowFrom): anyone is true for "*" (the
// decision to hear everyone); else the entry's id in canonical form
// (ConfigID), or why it names nobody. An entry may carry its channel's
// "<ch>:" prefix, as in ownerAllowFrom.
func ListEntry(ch, entry string) (anyone bool, id ID, err error) {
	e := strings.TrimSpace(entry)
	if c, rest, ok := strings.Cut(e, ":"); ok && strings.EqualFold(c, ch) {
		e = strings.TrimSpace(rest)
	}
	if e == "*" {
		return true, ID{}, nil
	}
	id, err = ConfigID(ch, e)
	return false, id, err
}

// Keys are one channel account's access keys as the owner wrote them:
// channel.Common's, which this package cannot import (it stays a leaf
// that package config and the CLI link).
type Keys struct {
	DMPolicy       string
	GroupPolicy    string
	AllowFrom      []string
	GroupAllowFrom []string
	// Groups maps each key of groups ("*" included) to its allowFrom.
	Groups map[string][]string
	// Topics maps a key of groups to its topics' allowFrom by topic id
	// (groups.<id>.topics.<threadId>.allowFrom, Telegram's forums).
	Topics map[string]map[string][]string
}

// AddTopic records topic t of group g and its allowFrom in k.Topics.
func (k *Keys) AddTopic(g, t string, allowFrom []string) {
	if k.Topics == nil {
		k.Topics = map[string]map[string][]string{}
	}
	if k.Topics[g] == nil {
		k.Topics[g] = map[string][]string{}
	}
	k.Topics[g][t] = allowFrom
}

// Problem is one refused access key or entry.
type Problem struct {
	// Path is the key below the account's object: ["dmPolicy"],
	// ["allowFrom"], ["groups"], ["groups", "<key>", "allowFrom"].
	Path []string
	// Index is the entry of a list at fault; -1 for the key itself.
	Index int
	// Reason says what is wrong, naming the value (escaped).
	Reason string
}

// Check returns every problem of k on channel ch, in this order: dmPolicy,
// groupPolicy, allowFrom (dmPolicy allowlist without an entry, then each
// entry), groupAllowFrom, then groups key by key (its allowFrom, then the
// key itself). Nil when k is fine.
func (k Keys) Check(ch string) []Problem {
	var out []Problem
	fail := func(index int, reason string, path ...string) {
		out = append(out, Problem{Path: path, Index: index, Reason: reason})
	}
	switch k.DMPolicy {
	case "", DMPairing, DMAllowlist, DMOpen, DMDisabled:
	default:
		fail(-1, fmt.Sprintf("%s is not one of pairing, allowlist, open, disabled", strconv.QuoteToASCII(k.DMPolicy)), "dmPolicy")
	}
	switch k.GroupPolicy {
	case "", GroupAllowlist, GroupOpen, GroupDisabled:
	default:
		fail(-1, fmt.Sprintf("%s is not one of allowlist, open, disabled", strconv.QuoteToASCII(k.GroupPolicy)), "groupPolicy")
	}
	if k.DMPolicy == DMAllowlist && len(k.AllowFrom) == 0 {
		fail(-1, "dmPolicy allowlist needs at least one sender", "allowFrom")
	}
	entries := func(list []string, path ...string) {
		for i, e := range list {
			if _, _, err := ListEntry(ch, e); err != nil {
				fail(i, err.Error(), path...)
			}
		}
	}
	entries(k.AllowFrom, "allowFrom")
	entries(k.GroupAllowFrom, "groupAllowFrom")
	seen := map[string]string{}
	for _, g := range slices.Sorted(maps.Keys(k.Groups)) {
		entries(k.Groups[g], "groups", g, "allowFrom")
		for _, t := range slices.Sorted(maps.Keys(k.Topics[g])) {
			// As Telegram writes it ("9", never "09" or "+9"): the key is
			// compared as text, and a key that never matches would leave
			// the topic under its group's looser rules.
			if n, err := strconv.ParseInt(t, 10, 64); err != nil || n <= 0 || strconv.FormatInt(n, 10) != t {
				fail(-1, fmt.Sprintf("%s is not a topic id (the forum topic's message_thread_id, a positive number)", strconv.QuoteToASCII(t)), "groups", g, "topics")
				continue
			}
			entries(k.Topics[g][t], "groups", g, "topics", t, "allowFrom")
		}
		if g == "*" {
			continue
		}
		id, err := ConfigID(ch, g)
		if err == nil && ch == "telegram" && strings.HasPrefix(strings.TrimSpace(g), "@") {
			err = fmt.Errorf("%s is not a Telegram chat id: groups are listed by their numeric id (-100…), which `openclaw logs` shows when the group writes", strconv.QuoteToASCII(g))
		}
		if err != nil {
			fail(-1, err.Error(), "groups")
			continue
		}
		if other, dup := seen[id.Key]; dup {
			// Which one applied would depend on map order.
			fail(-1, fmt.Sprintf("%s and %s name the same group", Display(other), Display(g)), "groups")
			continue
		}
		seen[id.Key] = g
	}
	return out
}
