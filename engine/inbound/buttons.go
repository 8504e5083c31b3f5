package inbound

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/routing"
)

// Inline buttons (channel.Outbound.Buttons): the owner's notices carry
// them, and a press comes back as a message with Button set whose text is
// the button's command. Only these commands are buttons; a press of
// anything else (a forged callback) does nothing.
//
//	/approve <id> [always]          an exec approval (gateway.Command)
//	/deny <id>
//	/pairing approve|deny <channel> <code>   a stranger's pairing request

// approvalButtons are an exec approval notice's buttons.
func approvalButtons(id string) []engine.Button {
	return []engine.Button{
		{Text: "Approve once", Command: "/approve " + id},
		{Text: "Always", Command: "/approve " + id + " always"},
		{Text: "Deny", Command: "/deny " + id},
	}
}

// pairingButtons are a pairing request notice's buttons.
func pairingButtons(ch, code string) []engine.Button {
	return []engine.Button{
		{Text: "Approve", Command: "/pairing approve " + ch + " " + code},
		{Text: "Deny", Command: "/pairing deny " + ch + " " + code},
	}
}

// button runs an owner's press; its answer (or why it did nothing: an
// answered or expired approval, a used code) is the reply.
func (c *Inbound) button(ca *chanAccount, m engine.Inbound, route routing.Route, log interface{ Warn(string, ...any) }) error {
	f := strings.Fields(m.Text)
	reply := func(text string) error { return c.send(ca, m, text, false) }
	switch {
	case len(f) == 4 && f[0] == "/pairing" && (f[1] == "approve" || f[1] == "deny"):
		r, err := c.PairingDecide(f[2], f[3], f[1] == "approve")
		var ae *api.Error
		if errors.As(err, &ae) {
			return reply("That button is stale: " + ae.Message)
		}
		if err != nil {
			return err
		}
		verb := "Approved"
		if f[1] == "deny" {
			verb = "Denied"
		}
		return reply(fmt.Sprintf("%s %s on %s.", verb, api.EscapeID(r.SenderID), r.Channel))
	case len(f) >= 2 && len(f) <= 3 && (f[0] == "/approve" || f[0] == "/deny"):
		ag := c.g.Agent(route.AgentID)
		if ag == nil {
			ag = c.g.Agent(c.g.DefaultAgent())
		}
		name, args, _ := gateway.ParseCommand(m.Text)
		res, err := c.g.Command(context.WithoutCancel(c.ctx), ag, route.Key, name, args, func(api.Event) {})
		var ae *api.Error
		if errors.As(err, &ae) {
			return reply("That button is stale: " + ae.Message)
		}
		if err != nil {
			return err
		}
		if res != nil && res.Reply != "" {
			return reply(res.Reply)
		}
		return nil
	}
	log.Warn("unknown button command ignored", "command", oneLine(m.Text, 40))
	return nil
}
