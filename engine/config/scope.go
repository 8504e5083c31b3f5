package config

import (
	"fmt"
	"github.com/openclaw-edge/edge/engine/access/identity"
	"slices"
	"strconv"
	"strings"
)

// SharedMainWarnings are the warnings of a session.dmScope "main" that
// lets senders who are not owners in: every direct message then lands in
// the agent's main session, the owner's, so a stranger's words reach the
// owner's history and the owner's history reaches the stranger's turns.
// One warning per channel account whose dmPolicy admits non-owners:
// "open", "pairing" (approved senders; the default), or "allowlist" with
// an entry that is not one of commands.ownerAllowFrom ("*" included).
// "disabled" admits nobody. Entries are compared trimmed and ASCII
// case-insensitively: an id written differently from its owner entry
// warns, which errs on the side of telling.
func (c *Config) SharedMainWarnings() []*Error {
	if c.Session.DMScope != "main" {
		return nil
	}
	var out []*Error
	for _, name := range sortedMapKeys(c.Channels) {
		extra := c.Channels[name].Extra
		if name == "cli" || len(extra) == 0 {
			continue // the local socket (the owner only), or only chunking set: no account
		}
		for _, acc := range channelAccounts(extra) {
			who := c.nonOwners(name, acc.policy, acc.allowFrom)
			if who == "" {
				continue
			}
			at := keyPath("channels", name)
			if acc.id != "" {
				at = keyPath(keyPath(at, "accounts"), acc.id)
			}
			out = append(out, c.src.err("session.dmScope", fmt.Sprintf(
				`"main" puts every direct message in the agent's main session, the owner's, and %s (dmPolicy %q) lets in %s: their messages join the owner's conversation and see its history. Leave session.dmScope unset (owners in main, everyone else in a session of their own) or use "per-channel-peer"`,
				at, acc.policy, who)))
		}
	}
	return out
}

// nonOwners says who a DM policy lets in that is not an owner on channel
// ch, "" when nobody.
func (c *Config) nonOwners(ch, policy string, allowFrom []string) string {
	switch policy {
	case "disabled":
		return ""
	case "open":
		return "anyone"
	case "allowlist":
		for _, a := range allowFrom {
			// The access rule itself (identity): a look-alike entry is not
			// the owner, and "+1 555 …" or "imessage:+1…" is.
			anyone, id, err := identity.ListEntry(ch, a)
			if anyone {
				return `anyone ("*" in allowFrom)`
			}
			if err != nil || !slices.ContainsFunc(c.Commands.OwnerAllowFrom, func(o string) bool {
				oc, oid, err := identity.Owner(o)
				return err == nil && oc == identity.FoldASCII(ch) && oid.Key == id.Key
			}) {
				return fmt.Sprintf("%s, who is not in commands.ownerAllowFrom", strconv.QuoteToASCII(strings.TrimSpace(a)))
			}
		}
		return ""
	}
	return "every sender you approve with `openclaw pairing approve`"
}

// dmAccount is one account's DM policy as configured.
type dmAccount struct {
	id        string // "" for a channel without accounts
	policy    string
	allowFrom []string
}

// channelAccounts reads dmPolicy and allowFrom of a channel's raw keys,
// per account when it has "accounts" (account keys over the channel's),
// the default policy being "pairing". Wrong types are the channel
// package's to report; here they count as absent.
func channelAccounts(extra map[string]any) []dmAccount {
	if enabled, ok := extra["enabled"].(bool); ok && !enabled {
		return nil
	}
	base := dmAccount{policy: "pairing"}
	read := func(m map[string]any, a *dmAccount) {
		if p, ok := m["dmPolicy"].(string); ok && p != "" {
			a.policy = p
		}
		if l, ok := m["allowFrom"].([]any); ok {
			a.allowFrom = nil
			for _, x := range l {
				if s, ok := x.(string); ok {
					a.allowFrom = append(a.allowFrom, s)
				}
			}
		}
	}
	read(extra, &base)
	accs, ok := extra["accounts"].(map[string]any)
	if !ok || len(accs) == 0 {
		return []dmAccount{base}
	}
	var out []dmAccount
	for _, id := range sortedMapKeys(accs) {
		m, ok := accs[id].(map[string]any)
		if !ok {
			continue
		}
		if enabled, ok := m["enabled"].(bool); ok && !enabled {
			continue
		}
		a := base
		a.id = id
		read(m, &a)
		out = append(out, a)
	}
	return out
}
