package inbound

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/openclaw-edge/edge/engine/access"
	"github.com/openclaw-edge/edge/engine/access/identity"
	"github.com/openclaw-edge/edge/engine/api"
)

// What the agent's message tool (engine/tool/message) asks of the channel
// side: a message of the agent's own to one chat. The recipient is
// checked here, against the account's access policy, because a model can
// be talked into any address: only someone the assistant would answer by
// name may be written to first.

// Send queues text to one chat for the message tool and returns a label
// for it. ch "" or "last" is the owner's last direct contact (to must be
// empty); to "" on a channel is the owner's id there. The recipient must
// be an owner (commands.ownerAllowFrom), a sender approved by pairing on
// that account, or one listed by id in its allowFrom ("*" names nobody:
// it lets anyone talk, not be written to); anyone else is refused.
func (c *Inbound) Send(_ context.Context, ch, account, to, text string) (string, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return "", errors.New("the message is empty")
	}
	if strings.ContainsAny(to, "\r\n\x00") {
		return "", errors.New("the recipient contains a line break or NUL")
	}
	if c.db == nil || len(c.order) == 0 {
		return "", errNoChannels
	}
	last := ch == "" || ch == api.DeliveryLast
	if last && to != "" {
		return "", errors.New("to needs a channel: name the channel (whatsapp, imessage, email…) along with the recipient")
	}
	if last && account != "" {
		return "", errors.New("account needs a channel")
	}
	if _, ok := c.LastOwnerContact(); last && !ok {
		return "", errors.New("the owner has not written to the assistant from a channel yet, so there is no last chat; name a channel")
	}
	ca, m, err := c.target(api.CronDelivery{Channel: ch, Account: account, To: to})
	if err != nil {
		return "", err
	}
	label := m.Channel + ":" + access.Display(m.ChatID)
	// The owner's last contact is the chat an owner last wrote from
	// (noteOwner): theirs by construction, though its chat id need not be
	// an id the owner check knows (an iMessage chat_id).
	if !last {
		ok, err := c.mayWrite(ca, m.ChatID)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("%s is not someone this assistant may write to: only owners (commands.ownerAllowFrom), senders approved by pairing and those listed in channels.%s.allowFrom", label, m.Channel)
		}
	}
	if err := c.send(ca, m, text, false); err != nil {
		return "", fmt.Errorf("queue the message to %s: %w", label, err)
	}
	c.log.Info("message tool: queued", "to", label, "chars", len([]rune(text)))
	return label, nil
}

// mayWrite reports whether the assistant may write to id on ca first: an
// owner, a sender approved by pairing, or one allowFrom names by id.
func (c *Inbound) mayWrite(ca *chanAccount, id string) (bool, error) {
	ch, account := ca.Adapter.Channel(), ca.Adapter.Account()
	if ca.Policy.IsOwner(id) {
		return true, nil
	}
	if c.pairing != nil {
		ok, err := c.pairing.Approved(ch, account, id)
		if err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	want, err := access.Canonical(ch, id)
	if err != nil {
		return false, nil
	}
	for _, e := range ca.Policy.AllowFrom {
		if anyone, eid, err := identity.ListEntry(ch, e); !anyone && err == nil && eid.Key == want.Key {
			return true, nil
		}
	}
	return false, nil
}
