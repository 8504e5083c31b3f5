package config

import (
	"reflect"
	"slices"

	"github.com/openclaw-edge/edge/engine/access/identity"
)

// accessChannels are the channels the gateway serves with an access policy
// (appliance/channel_*.go; BlueBubbles is an iMessage backend): their
// access keys are checked here. OpenClaw's other channels (discord,
// slack …) are ignored at start, so their keys are not judged here
// either: a migrated config still loads.
var accessChannels = []string{"email", "imessage", "telegram", "whatsapp"}

// accessKeys are the access keys every channel account shares
// (channel.Common's, which this package may not import; a test keeps the
// two in step), decoded strictly here so that a wrong type is reported
// with its line, as the gateway's start would refuse it.
type accessKeys struct {
	DMPolicy       string                 `json:"dmPolicy"`
	AllowFrom      []string               `json:"allowFrom"`
	GroupPolicy    string                 `json:"groupPolicy"`
	GroupAllowFrom []string               `json:"groupAllowFrom"`
	Groups         map[string]accessGroup `json:"groups"`
}

// accessGroup is channel.Group: channels.<name>.groups.<id|*>.
type accessGroup struct {
	RequireMention *bool                  `json:"requireMention"`
	AllowFrom      []string               `json:"allowFrom"`
	Enabled        *bool                  `json:"enabled"`
	Topics         map[string]accessGroup `json:"topics"`
}

// validateAccess checks commands.ownerAllowFrom and the access keys of
// every account of the access channels with package identity, the rules
// the gateway applies at start (access.Policy.Validate), each problem at
// the key where it was written: a key an account inherits from its channel
// is named, once, at the channel's.
func (c *Config) validateAccess(v *validation) {
	for i, o := range c.Commands.OwnerAllowFrom {
		if _, _, err := identity.Owner(o); err != nil {
			v.fail(indexPath("commands.ownerAllowFrom", i), "%v", err)
		}
	}
	fields := fieldsOf(reflect.TypeFor[accessKeys]())
	names := sortedMapKeys(fields)
	for _, name := range accessChannels {
		ch, ok := c.Channels[name]
		if !ok {
			continue
		}
		d := &decoder{src: c.src}
		for _, a := range splitAccounts(keyPath("channels", name), ch.Extra, d.fail) {
			var k accessKeys
			kv := reflect.ValueOf(&k).Elem()
			for _, key := range names {
				if raw := a.keys[key]; raw != nil {
					d.decode(keyPath(a.from[key], key), raw, kv.FieldByIndex(fields[key]))
				}
			}
			ik := identity.Keys{DMPolicy: k.DMPolicy, GroupPolicy: k.GroupPolicy, AllowFrom: k.AllowFrom, GroupAllowFrom: k.GroupAllowFrom}
			if k.Groups != nil {
				ik.Groups = make(map[string][]string, len(k.Groups))
				for g, gv := range k.Groups {
					ik.Groups[g] = gv.AllowFrom
					for t, tv := range gv.Topics {
						ik.AddTopic(g, t, tv.AllowFrom)
					}
				}
			}
			for _, pr := range ik.Check(name) {
				path, lineAt := problemPath(a, pr)
				e := c.src.err(lineAt, pr.Reason)
				e.Path = path
				d.errs = append(d.errs, e)
			}
		}
		// An inherited key's problem shows up once per account.
		for i, e := range d.errs {
			if !slices.ContainsFunc(d.errs[:i], func(f *Error) bool { return *f == *e }) {
				v.errs = append(v.errs, e)
			}
		}
	}
}

// problemPath is the config path of an access problem of account a, and
// the path whose line to name: the same, but for an allowFrom that is
// missing where dmPolicy "allowlist" needs it (the dmPolicy's line).
func problemPath(a channelAccount, pr identity.Problem) (path, lineAt string) {
	top := pr.Path[0]
	at, ok := a.from[top]
	switch {
	case ok:
	case top == "allowFrom" && a.from["dmPolicy"] != "":
		at = a.from["dmPolicy"]
		lineAt = keyPath(at, "dmPolicy")
	default:
		at = a.at
	}
	path = keyPath(at, top)
	for _, k := range pr.Path[1:] {
		path = keyPath(path, k)
	}
	if pr.Index >= 0 {
		path = indexPath(path, pr.Index)
	}
	if lineAt == "" {
		lineAt = path
	}
	return path, lineAt
}
