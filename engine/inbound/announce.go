package inbound

import (
	"errors"
	"fmt"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/access"
	"github.com/openclaw-edge/edge/engine/access/identity"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/delivery"
	"github.com/openclaw-edge/edge/engine/session"
)

// What the scheduler (engine/schedule) asks of the channel side: where a
// job's or a heartbeat's reply goes. "last" is the owner's last direct
// contact on a channel, kept in the state database so a reminder set
// before a restart still finds them.

const (
	bucketOwnerLast = "owner-last"
	keyOwnerLast    = "last"
)

// lastContact is the owner's last direct message on a channel.
type lastContact struct {
	Channel string    `json:"channel"`
	Account string    `json:"account"`
	ChatID  string    `json:"chatId"`
	At      time.Time `json:"at"`
}

// noteOwner records m's chat as the owner's last contact when it changed
// (one small write per change of channel, not per message).
func (c *Inbound) noteOwner(m engine.Inbound) {
	if c.db == nil || m.ChatType != engine.ChatDirect {
		return
	}
	lc := lastContact{Channel: m.Channel, Account: m.Account, ChatID: m.ChatID, At: c.cfg.Now()}
	c.mu.Lock()
	same := c.lastOwner != nil && c.lastOwner.Channel == lc.Channel && c.lastOwner.Account == lc.Account && c.lastOwner.ChatID == lc.ChatID
	if !same {
		c.lastOwner = &lc
	}
	c.mu.Unlock()
	if same {
		return
	}
	if err := c.db.UpdateRecords(func(tx engine.RecordTx) error { return tx.Put(bucketOwnerLast, keyOwnerLast, lc) }); err != nil {
		c.log.Warn("could not record the owner's last contact", "err", err)
	}
}

// LastOwnerContact is the owner's last direct contact ("channel:id"); ""
// when there is none yet.
func (c *Inbound) LastOwnerContact() (lastContact, bool) {
	c.mu.Lock()
	if c.lastOwner != nil {
		lc := *c.lastOwner
		c.mu.Unlock()
		return lc, true
	}
	c.mu.Unlock()
	var lc lastContact
	found := false
	if c.db != nil {
		_ = c.db.ViewRecords(func(tx engine.RecordTx) error {
			var err error
			found, err = tx.Get(bucketOwnerLast, keyOwnerLast, &lc)
			return err
		})
	}
	return lc, found
}

var errNoChannels = errors.New("no channel is configured to send it to (docs/channels.md); keep the reply in the session with --no-deliver")

// target resolves a delivery to a configured account and chat.
func (c *Inbound) target(d api.CronDelivery) (*chanAccount, engine.Inbound, error) {
	if len(c.order) == 0 {
		if d.Channel != "" && d.Channel != api.DeliveryLast {
			return nil, engine.Inbound{}, fmt.Errorf("channel %q is not configured (no channel is: see docs/channels.md), or use --no-deliver", d.Channel)
		}
		return nil, engine.Inbound{}, errNoChannels
	}
	if d.Channel == "" || d.Channel == api.DeliveryLast {
		lc, ok := c.LastOwnerContact()
		if !ok {
			return nil, engine.Inbound{}, errors.New("the owner has not written to the assistant from a channel yet, so there is no last contact; give a channel (--channel) instead of last")
		}
		ca := c.accounts[accountKey(lc.Channel, lc.Account)]
		if ca == nil {
			return nil, engine.Inbound{}, fmt.Errorf("the owner's last contact was on %s account %q, which is no longer configured", lc.Channel, lc.Account)
		}
		return ca, engine.Inbound{Channel: lc.Channel, Account: lc.Account, ChatType: engine.ChatDirect, ChatID: lc.ChatID, SenderID: lc.ChatID}, nil
	}
	var ca *chanAccount
	for _, k := range c.order {
		a := c.accounts[k]
		if a.Adapter.Channel() == d.Channel && (d.Account == "" || a.Adapter.Account() == d.Account) {
			ca = a
			break
		}
	}
	if ca == nil {
		if d.Account != "" {
			return nil, engine.Inbound{}, fmt.Errorf("channel %s has no configured account %q", d.Channel, d.Account)
		}
		return nil, engine.Inbound{}, fmt.Errorf("channel %q is not configured", d.Channel)
	}
	to := d.To
	if to == "" {
		for _, o := range c.cfg.Owners {
			if ch, id, err := identity.Owner(o); err == nil && ch == d.Channel {
				to = id.Key
				break
			}
		}
		if to == "" {
			return nil, engine.Inbound{}, fmt.Errorf("no owner of channel %s in commands.ownerAllowFrom to send to; give the chat (--to)", d.Channel)
		}
	}
	if tc, ok := ca.Adapter.(channel.TargetChecker); ok {
		if err := tc.CheckTarget(to); err != nil {
			return nil, engine.Inbound{}, err
		}
	}
	return ca, engine.Inbound{Channel: d.Channel, Account: ca.Adapter.Account(), ChatType: engine.ChatDirect, ChatID: to, SenderID: to}, nil
}

// CheckDelivery says whether d can be resolved now (at `cron add`):
// the channel and account are configured. "last" is accepted even before
// the owner has written: it is resolved at run time.
func (c *Inbound) CheckDelivery(d api.CronDelivery) error {
	if d.Channel == "" || d.Channel == api.DeliveryLast {
		if d.To != "" {
			return errors.New("to needs a channel (--channel), not last")
		}
		if len(c.order) == 0 {
			return errNoChannels // a reminder nobody could get
		}
		return nil
	}
	_, _, err := c.target(d)
	return err
}

// Announce resolves d to a chat and returns a label and the function that
// queues a reply there (outbox records, committed with the end of the
// turn). A scheduled reply is text: attachments (MEDIA: lines) are left
// out, since nobody's message asked for them.
func (c *Inbound) Announce(d api.CronDelivery) (string, func(delivery.Reply) ([]session.Record, error), error) {
	ca, m, err := c.target(d)
	if err != nil {
		return "", nil, err
	}
	label := m.Channel + ":" + access.Display(m.ChatID)
	return label, func(r delivery.Reply) ([]session.Record, error) {
		if len(r.Media) > 0 {
			c.log.Warn("attachments of a scheduled reply left out", "to", label, "count", len(r.Media))
			r.Media = nil
		}
		return c.outbox.Records(ca.Adapter, ca.chunking(), m, r)
	}, nil
}

// Wake makes the outbox send what was just queued.
func (c *Inbound) Wake() { c.outbox.Wake() }

// ApprovalNotice tells the owner that a turn nobody is watching (a
// scheduled one) waits for an exec approval: the owner's chats are the
// only place an answer can come from.
func (c *Inbound) ApprovalNotice(a *api.Approval) {
	if a == nil || len(c.order) == 0 {
		return
	}
	c.approvalNotice(nil, engine.Inbound{}, false, a)
}
