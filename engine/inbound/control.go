package inbound

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/access"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/delivery"
	"github.com/openclaw-edge/edge/engine/outbox"
)

// Start resumes the inbox and outbox of the last run and starts every
// channel adapter. Call it after the gateway's RecoverInterrupted.
func (c *Inbound) Start(ctx context.Context) error { return c.start(ctx) }

// Stop stops the adapters and the outbox; messages in flight stay in the
// inbox and outbox for the next start.
func (c *Inbound) Stop() { c.stop() }

// ChannelStatuses reports every configured channel account.
func (c *Inbound) ChannelStatuses() []api.ChannelStatus {
	pending, dead := map[string]int{}, map[string]int{}
	if c.db != nil {
		pending, dead = c.outbox.Counts()
	}
	out := []api.ChannelStatus{}
	for _, k := range c.order {
		ca := c.accounts[k]
		st := ca.sup.Status()
		dm, gp := ca.Policy.DMPolicy, ca.Policy.GroupPolicy
		if dm == "" {
			dm = access.DMPairing
		}
		if gp == "" {
			gp = access.GroupAllowlist
		}
		out = append(out, api.ChannelStatus{
			Channel: st.Channel, Account: st.Account, State: string(st.State), Reason: st.Reason, Since: st.Since,
			Self: st.Self, LastInbound: st.LastInbound, LastOutbound: st.LastOutbound, Restarts: st.Restarts, Detail: st.Detail,
			DMPolicy: dm, GroupPolicy: gp, OutboxPending: pending[k], OutboxDead: dead[k],
		})
		_, out[len(out)-1].Linkable = ca.Adapter.(channel.Linker)
	}
	return out
}

// account finds a configured channel account; account "" is the only or
// the "default" one.
func (c *Inbound) account(ch, account string) (*chanAccount, error) {
	if ca := c.accounts[accountKey(ch, account)]; ca != nil {
		return ca, nil
	}
	var found []*chanAccount
	var names []string
	for _, k := range c.order {
		if ca := c.accounts[k]; ca.Adapter.Channel() == ch {
			found = append(found, ca)
			names = append(names, ca.Adapter.Account())
		}
	}
	switch {
	case len(found) == 0:
		var chans []string
		for _, k := range c.order {
			chans = append(chans, c.accounts[k].Adapter.Channel())
		}
		have := "none is configured"
		if len(chans) > 0 {
			have = "configured: " + strings.Join(chans, ", ")
		}
		return nil, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("channel %q is not configured (%s); add channels.%s to the config", ch, have, ch)}
	case account == "" && len(found) == 1:
		return found[0], nil
	case account == "":
		if ca := c.accounts[accountKey(ch, "default")]; ca != nil {
			return ca, nil
		}
		return nil, badRequest(fmt.Sprintf("channel %s has several accounts (%s): name one with --account", ch, strings.Join(names, ", ")))
	}
	return nil, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("channel %s has no account %q (accounts: %s)", ch, account, strings.Join(names, ", "))}
}

// SendOutbound queues a message to a channel chat without a turn.
func (c *Inbound) SendOutbound(req api.OutboundRequest) (*api.OutboundResult, error) {
	if strings.TrimSpace(req.Message) == "" && len(req.Media) == 0 {
		return nil, badRequest("the message is empty")
	}
	if strings.TrimSpace(req.Target) == "" {
		return nil, badRequest("a target is required (--target: a phone number, chat id or address)")
	}
	if strings.ContainsAny(req.Target, "\r\n\x00") {
		return nil, badRequest("the target contains a line break or NUL")
	}
	if c.db == nil {
		return nil, badRequest("no channels are configured")
	}
	ca, err := c.account(req.Channel, req.Account)
	if err != nil {
		return nil, err
	}
	if tc, ok := ca.Adapter.(channel.TargetChecker); ok {
		if err := tc.CheckTarget(req.Target); err != nil {
			return nil, badRequest(err.Error())
		}
	}
	m := engine.Inbound{Channel: ca.Adapter.Channel(), Account: ca.Adapter.Account(), ChatType: engine.ChatDirect, ChatID: req.Target}
	if strings.HasSuffix(req.Target, "@g.us") {
		m.ChatType = engine.ChatGroup
	}
	recs, err := c.outbox.Records(ca.Adapter, ca.chunking(), m, delivery.Reply{Text: strings.TrimSpace(req.Message), Media: req.Media})
	if err != nil {
		return nil, c.g.Internal("queue the message", err)
	}
	if err := c.outbox.Put(recs); err != nil {
		return nil, c.g.Internal("queue the message", err)
	}
	c.outbox.Wake()
	res := &api.OutboundResult{OK: true, Queued: len(recs)}
	for _, r := range recs {
		var it outbox.Item
		if err := json.Unmarshal(r.Value, &it); err == nil {
			res.Keys = append(res.Keys, it.Out.IdempotencyKey)
		}
	}
	return res, nil
}

// PairingList lists the pending pairing requests.
func (c *Inbound) PairingList(ch string) ([]api.PairingRequest, error) {
	if c.pairing == nil {
		return []api.PairingRequest{}, nil
	}
	list, err := c.pairing.List(ch)
	if err != nil {
		return nil, c.g.Internal("list pairing requests", err)
	}
	out := make([]api.PairingRequest, 0, len(list))
	for _, r := range list {
		out = append(out, api.PairingRequest{Channel: r.Channel, Account: r.Account, Code: r.Code, SenderID: r.SenderID, SenderName: r.SenderName, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// PairingDecide approves or denies a pending code; an approved sender is
// told so.
func (c *Inbound) PairingDecide(ch, code string, approve bool) (*api.PairingRequest, error) {
	if c.pairing == nil {
		return nil, badRequest("no channels are configured")
	}
	if strings.TrimSpace(ch) == "" || strings.TrimSpace(code) == "" {
		return nil, badRequest("usage: openclaw pairing approve|deny CHANNEL CODE")
	}
	var (
		r   access.Request
		err error
	)
	if approve {
		r, err = c.pairing.Approve(ch, code)
	} else {
		r, err = c.pairing.Deny(ch, code)
	}
	if errors.Is(err, access.ErrUnknownCode) {
		return nil, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no pending pairing request on %s with code %q (see `openclaw pairing list %s`; codes expire after an hour)", ch, code, ch)}
	}
	if err != nil {
		return nil, c.g.Internal("record the pairing decision", err)
	}
	if approve {
		if ca := c.accounts[accountKey(r.Channel, r.Account)]; ca != nil {
			m := engine.Inbound{Channel: r.Channel, Account: r.Account, ChatType: engine.ChatDirect, ChatID: r.ChatID, SenderID: r.SenderID}
			if err := c.send(ca, m, "You're approved — you can talk to me now.", false); err != nil {
				c.log.Warn("could not tell an approved sender", "err", err)
			}
		}
	}
	c.log.Info("pairing decision", "channel", r.Channel, "account", r.Account, "sender", access.Display(r.SenderID), "approved", approve)
	return &api.PairingRequest{Channel: r.Channel, Account: r.Account, Code: r.Code, SenderID: r.SenderID, SenderName: r.SenderName, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}, nil
}

func (c *Inbound) linker(req api.LoginRequest) (*chanAccount, channel.Linker, error) {
	ca, err := c.account(req.Channel, req.Account)
	if err != nil {
		return nil, nil, err
	}
	l, ok := ca.Adapter.(channel.Linker)
	if !ok {
		return nil, nil, badRequest(fmt.Sprintf("channel %s is linked by its config (channels.%s), not by login", req.Channel, req.Channel))
	}
	return ca, l, nil
}

// Login links an account (WhatsApp's QR code or pairing code). begin is
// called once the account is found and can link: the control API starts
// its event stream there, and an error returned before it is the
// request's. A failed login after begin is sent as an "error" event.
func (c *Inbound) Login(ctx context.Context, req api.LoginRequest, begin func(), send func(api.LoginEvent)) error {
	ca, l, err := c.linker(req)
	if err != nil {
		return err
	}
	begin()
	// The adapter's link owns the session: stop it while logging in.
	ca.sup.Stop()
	err = l.Login(ctx, channel.LoginOptions{Phone: req.Phone}, func(ev channel.LoginEvent) {
		switch {
		case ev.Done:
			send(api.LoginEvent{Type: "done", Self: ev.Self, Message: ev.Message})
		case ev.QR != "":
			send(api.LoginEvent{Type: "qr", QR: ev.QR})
		case ev.PairingCode != "":
			send(api.LoginEvent{Type: "code", PairingCode: ev.PairingCode})
		default:
			send(api.LoginEvent{Type: "message", Message: ev.Message})
		}
	})
	c.mu.Lock()
	runCtx := c.ctx
	c.mu.Unlock()
	if runCtx != nil {
		ca.sup.Start(runCtx)
	}
	if err != nil {
		send(api.LoginEvent{Type: "error", Error: &api.Error{Code: api.CodeBadRequest, Message: "login failed: " + err.Error()}})
	}
	return nil
}

// Logout unlinks a channel account.
func (c *Inbound) Logout(ctx context.Context, req api.LoginRequest) (*api.ChannelStatus, error) {
	ca, l, err := c.linker(req)
	if err != nil {
		return nil, err
	}
	ca.sup.Stop()
	if err := l.Logout(ctx); err != nil {
		return nil, &api.Error{Code: api.CodeBadRequest, Message: "logout failed: " + err.Error()}
	}
	for _, st := range c.ChannelStatuses() {
		if st.Channel == ca.Adapter.Channel() && st.Account == ca.Adapter.Account() {
			return &st, nil
		}
	}
	return nil, c.g.Internal("report the channel", errors.New("account vanished"))
}

func badRequest(msg string) *api.Error { return &api.Error{Code: api.CodeBadRequest, Message: msg} }
