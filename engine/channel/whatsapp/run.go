package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"

	"github.com/openclaw-edge/edge/engine/channel"
)

// Watchdog thresholds (package variables so tests can shorten them).
var (
	// watchdogTick is how often the watchdog looks.
	watchdogTick = 15 * time.Second
	// transportDownMax: the websocket has been down (or its keepalives
	// failing) this long although whatsmeow keeps reconnecting. Run
	// returns an error: the supervisor restarts it with a fresh client and
	// its own exponential backoff, and tells the owner the link failed.
	// whatsmeow itself forces a reconnect after 3 minutes of failed
	// keepalives (KeepAliveMaxFailTime), so 5 minutes is past its own
	// recovery.
	transportDownMax = 5 * time.Minute
	// silenceMax: the transport says connected but no event at all
	// (message, receipt, presence, notification) arrived for this long.
	// That is the half-dead link WhatsApp Web clients are known for
	// (keepalives answered, messages no longer pushed), and OpenClaw's own
	// watchdog uses 30 minutes for it too. The watchdog reconnects in
	// place, which is cheap and silent: a quiet account is reconnected
	// every half hour, and the reconnect's own events prove the link.
	silenceMax = 30 * time.Minute
	// readReceiptTimeout bounds MarkRead after a delivery.
	readReceiptTimeout = 10 * time.Second
)

// session is one Run: the client and where its messages go.
type session struct {
	ctx context.Context
	in  channel.Inbox
	cli Client
	// wa is the real client (nil in tests and with Deps.Dial): Logout and
	// the presence sent on connect use it.
	wa *whatsmeow.Client
	// pnForLID resolves a sender's phone number from its LID (nil: no
	// resolution).
	pnForLID func(ctx context.Context, lid types.JID) (types.JID, error)
	fatal    chan error
}

// fail ends the Run with err; the first failure wins.
func (s *session) fail(err error) {
	select {
	case s.fatal <- err:
	default:
	}
}

// Run implements channel.Adapter.
//
// Reconnects: whatsmeow's auto-reconnect handles transient drops (it keeps
// the client, its retry caches and its keepalive loop, and reconnects
// within seconds), so Run does not return on a Disconnected event. The
// watchdog bounds it: down for transportDownMax → Run returns an error and
// the supervisor takes over with backoff. Permanent disconnects (logged
// out, stream replaced, banned, outdated) end Run at once.
func (a *Adapter) Run(ctx context.Context, in channel.Inbox) error {
	if !a.linkMu.TryLock() {
		return errors.New("whatsapp: the device store is in use (Run or Login is already running for this account)")
	}
	defer a.linkMu.Unlock()

	wlog := slogLogger{a.log.With("component", "whatsmeow")}
	container, err := openStore(ctx, a.storePath, wlog.Sub("Database"))
	if err != nil {
		a.setState(channel.StateError, "cannot open the device store")
		return fmt.Errorf("whatsapp: %w", err)
	}
	defer func() {
		if err := container.Close(); err != nil {
			a.log.Warn("closing the device store", "err", err)
		}
	}()
	dev, err := container.GetFirstDevice(ctx)
	if err != nil {
		a.setState(channel.StateError, "cannot read the device store")
		return fmt.Errorf("whatsapp: device store: %w", err)
	}
	if dev.ID == nil {
		a.setState(channel.StateNotLinked, notLinkedReason)
		return fmt.Errorf("whatsapp: %w: %s", channel.ErrLoggedOut, notLinkedReason)
	}
	a.setSelf(*dev.ID, dev.LID)
	a.setState(channel.StateConnecting, "")

	conn, wa, err := a.dialConn(ctx, dev, wlog)
	if err != nil {
		return err
	}
	s := &session{
		ctx:   ctx,
		in:    in,
		cli:   conn,
		wa:    wa,
		fatal: make(chan error, 1),
		pnForLID: func(ctx context.Context, lid types.JID) (types.JID, error) {
			return dev.LIDs.GetPNForLID(ctx, lid)
		},
	}
	handlerID := conn.AddEventHandlerWithSuccessStatus(func(evt any) bool { return a.handleEvent(s, evt) })
	a.attach(s)
	defer func() {
		a.detach(s)
		conn.Disconnect()
		conn.RemoveEventHandler(handlerID)
	}()

	if err := conn.ConnectContext(ctx); err != nil {
		if ctx.Err() != nil {
			a.setState(channel.StateStopped, "")
			return nil
		}
		a.setState(channel.StateError, "cannot connect to WhatsApp")
		return fmt.Errorf("whatsapp: connect: %w", err)
	}

	tick := time.NewTicker(watchdogTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			a.setState(channel.StateStopped, "")
			return nil
		case err := <-s.fatal:
			return err
		case <-tick.C:
			a.mu.Lock()
			act, why := a.live.check(a.now())
			if act == actReconnect {
				a.live.forced++
				a.live.markDown(a.now())
			}
			a.mu.Unlock()
			switch act {
			case actFail:
				a.setState(channel.StateError, why)
				return fmt.Errorf("whatsapp: watchdog: %s", why)
			case actReconnect:
				a.log.Warn("watchdog: reconnecting", "why", why)
				conn.Disconnect()
				if err := conn.ConnectContext(ctx); err != nil {
					// The transport timer now runs; if whatsmeow does not
					// get back in time the watchdog fails the Run.
					a.log.Warn("watchdog: reconnect failed", "err", err)
				}
			}
		}
	}
}

// dialConn returns the connection of a Run: Deps.Dial's when set, else a
// whatsmeow client for dev announcing the current WhatsApp Web version
// (also returned as wa).
func (a *Adapter) dialConn(ctx context.Context, dev *store.Device, wlog slogLogger) (Conn, *whatsmeow.Client, error) {
	if a.dial != nil {
		conn, err := a.dial(ctx, dev)
		if err != nil {
			a.setState(channel.StateError, "cannot connect to WhatsApp")
			return nil, nil, fmt.Errorf("whatsapp: dial: %w", err)
		}
		return conn, nil, nil
	}
	cli := a.newClient(ctx, dev, wlog)
	// Acknowledge a message only after the handler returned: when Deliver
	// fails the handler reports failure, the message stays unacknowledged
	// and the server sends it again after the next connect; the decrypted
	// event buffer (in the device store) lets whatsmeow decrypt it again
	// although the Signal ratchet has moved on.
	cli.SynchronousAck = true
	cli.EnableDecryptedEventBuffer = true
	cli.EnableAutoReconnect = true
	return cli, cli, nil
}

func (a *Adapter) attach(s *session) {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sess = s
	a.live = liveness{started: now}
}

func (a *Adapter) detach(s *session) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sess == s {
		a.sess = nil
	}
}

// handleEvent is the whatsmeow event handler. It returns false only when
// a message could not be handed to the gateway (see SynchronousAck).
func (a *Adapter) handleEvent(s *session, evt any) bool {
	now := a.now()
	a.mu.Lock()
	a.live.lastEvent = now
	a.mu.Unlock()

	switch e := evt.(type) {
	case *events.Message:
		return a.handleMessage(s, e)
	case *events.Connected:
		a.onConnected(s)
	case *events.Disconnected:
		a.mu.Lock()
		a.live.markDown(now)
		a.mu.Unlock()
		a.setState(channel.StateConnecting, "disconnected; reconnecting")
	case *events.KeepAliveTimeout:
		a.mu.Lock()
		if a.live.kaFailSince.IsZero() {
			a.live.kaFailSince = e.LastSuccess
			if a.live.kaFailSince.IsZero() {
				a.live.kaFailSince = now
			}
		}
		a.mu.Unlock()
	case *events.KeepAliveRestored:
		a.mu.Lock()
		a.live.kaFailSince = time.Time{}
		a.mu.Unlock()
	case *events.LoggedOut:
		reason := "WhatsApp ended the link (" + e.PermanentDisconnectDescription() + "): run `openclaw channels login whatsapp`"
		a.setState(channel.StateLoggedOut, reason)
		s.fail(fmt.Errorf("whatsapp: %w: %s", channel.ErrLoggedOut, reason))
	case *events.StreamReplaced:
		reason := "another client connected with this account's keys (a second gateway on the same state directory?)"
		a.setState(channel.StateError, reason)
		s.fail(errors.New("whatsapp: stream replaced: " + reason))
	case *events.TemporaryBan:
		reason := "WhatsApp banned the account temporarily: " + e.String()
		a.setState(channel.StateError, reason)
		s.fail(errors.New("whatsapp: " + reason))
	case *events.ClientOutdated:
		a.mu.Lock()
		a.outdated = "WhatsApp rejected this client as outdated (announced " + a.version + "); update OpenClaw Edge"
		a.mu.Unlock()
		a.setState(channel.StateError, "WhatsApp says this client version is outdated")
		s.fail(errors.New("whatsapp: client outdated"))
	case *events.ConnectFailure:
		reason := "WhatsApp refused the connection: " + e.PermanentDisconnectDescription()
		a.setState(channel.StateError, reason)
		s.fail(errors.New("whatsapp: " + reason))
	case *events.CATRefreshError:
		a.setState(channel.StateError, "WhatsApp refused the connection (token refresh)")
		s.fail(fmt.Errorf("whatsapp: CAT refresh: %w", e.Error))
	case *events.StreamError:
		a.log.Warn("stream error", "code", e.Code)
	case *events.UndecryptableMessage:
		// whatsmeow asks the sender to retry; a decryptable copy arrives
		// as a normal message.
		a.log.Info("undecryptable message; the sender was asked to resend", "id", e.Info.ID, "chat", e.Info.Chat.String())
	}
	return true
}

func (a *Adapter) onConnected(s *session) {
	now := a.now()
	a.mu.Lock()
	a.live.connected = true
	a.live.upSince = now
	a.live.downSince = time.Time{}
	a.live.kaFailSince = time.Time{}
	a.outdated = ""
	a.mu.Unlock()
	if s.wa != nil {
		a.setSelf(s.wa.Store.GetJID(), s.wa.Store.GetLID())
		// Presence: "available" makes typing indicators and delivery
		// receipts show like a foreground client's, but while a linked
		// device is available the phone stops getting notifications.
		// In self-chat mode the phone is the owner's own, so we stay
		// "unavailable" (which still registers our push name).
		p := types.PresenceAvailable
		if a.cfg.SelfChatMode {
			p = types.PresenceUnavailable
		}
		if s.wa.Store.PushName != "" {
			if err := s.wa.SendPresence(s.ctx, p); err != nil {
				a.log.Warn("sending presence", "err", err)
			}
		}
	}
	a.setState(channel.StateLinked, "")
}

// handleMessage converts, downloads, delivers and marks read one message.
func (a *Adapter) handleMessage(s *session, evt *events.Message) bool {
	// Messages parsed from a history sync are old history, never new.
	if evt.SourceWebMsg != nil && evt.UnavailableRequestID == "" {
		return true
	}
	if evt.Info.IsFromMe {
		if r, ok := a.recent.get(evt.Info.ID); ok && r.fromMe {
			return true // our own send, echoed by another of our devices
		}
	}
	// A LID-addressed sender: look up the phone number so SenderID can be
	// "+<digits>" (allowFrom lists numbers).
	if s.pnForLID != nil && evt.Info.Sender.Server == types.HiddenUserServer && evt.Info.SenderAlt.IsEmpty() {
		if pn, err := s.pnForLID(s.ctx, evt.Info.Sender.ToNonAD()); err != nil {
			a.log.Debug("LID lookup", "lid", evt.Info.Sender.String(), "err", err)
		} else if !pn.IsEmpty() {
			evt.Info.SenderAlt = pn
		}
	}
	m, ok, err := convert(evt, a.selfJIDs(), a.cfg.SelfChatMode)
	if err != nil {
		a.log.Warn("malformed message dropped", "err", err)
		return true
	}
	if !ok {
		return true
	}
	m.Account = a.account
	if _, _, att := content(evt.Message); att != nil {
		md, note := a.fetchMedia(s.ctx, s.cli, evt.Info.ID, att)
		if md.Path != "" {
			m.Media = append(m.Media, md)
		}
		if note != "" {
			m.Text = strings.TrimSpace(m.Text + "\n" + note)
		}
	}
	a.recent.add(evt.Info.ID, recentMsg{
		chat:   evt.Info.Chat.ToNonAD(),
		sender: evt.Info.Sender.ToNonAD(),
		fromMe: evt.Info.IsFromMe,
		text:   m.Text,
	})
	if err := s.in.Deliver(s.ctx, m); err != nil {
		// Not acknowledged: the server resends it after a reconnect, which
		// ending the Run brings about (unless the gateway is stopping).
		a.log.Error("delivering a message failed; it will arrive again after a reconnect", "id", m.MessageID, "err", err)
		if s.ctx.Err() == nil {
			s.fail(fmt.Errorf("whatsapp: deliver %s: %w", m.MessageID, err))
		}
		return false
	}
	a.mu.Lock()
	a.lastInbound = a.now()
	a.mu.Unlock()
	if a.cfg.SendReadReceiptsOn() && !evt.Info.IsFromMe {
		ctx, cancel := context.WithTimeout(s.ctx, readReceiptTimeout)
		defer cancel()
		chat, sender := evt.Info.Chat, evt.Info.Sender
		if chat.Server == types.BroadcastServer {
			chat = sender // broadcast list receipts go to the direct chat
		}
		if err := s.cli.MarkRead(ctx, []types.MessageID{evt.Info.ID}, a.now(), chat, sender); err != nil {
			// The message is recorded; a missing blue tick is cosmetic.
			a.log.Warn("read receipt not sent", "id", evt.Info.ID, "err", err)
		}
	}
	return true
}

// Watchdog actions.
const (
	actNone = iota
	actReconnect
	actFail
)

// liveness tracks the transport (websocket up/down, keepalives) and the
// message flow (the last event of any kind) separately: a websocket can be
// up with nothing flowing through it.
type liveness struct {
	started     time.Time
	connected   bool
	upSince     time.Time
	downSince   time.Time
	kaFailSince time.Time // keepalives failing since; zero when fine
	lastEvent   time.Time
	forced      int // watchdog reconnects
}

func (l *liveness) markDown(now time.Time) {
	if l.connected || l.downSince.IsZero() {
		l.downSince = now
	}
	l.connected = false
}

// check decides what the watchdog does now.
func (l *liveness) check(now time.Time) (int, string) {
	if !l.connected {
		since := l.downSince
		if since.IsZero() {
			since = l.started
		}
		if d := now.Sub(since); d >= transportDownMax {
			return actFail, fmt.Sprintf("no connection to WhatsApp for %s", d.Round(time.Second))
		}
		return actNone, ""
	}
	if !l.kaFailSince.IsZero() {
		if d := now.Sub(l.kaFailSince); d >= transportDownMax {
			return actFail, fmt.Sprintf("WhatsApp has not answered keepalives for %s", d.Round(time.Second))
		}
	}
	last := l.lastEvent
	if l.upSince.After(last) {
		last = l.upSince
	}
	if d := now.Sub(last); d >= silenceMax {
		return actReconnect, fmt.Sprintf("connected but nothing received for %s", d.Round(time.Second))
	}
	return actNone, ""
}

// describe is the watchdog part of Status.Detail.
func (l *liveness) describe(now time.Time) string {
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	var b strings.Builder
	switch {
	case l.connected:
		b.WriteString("transport up since " + ts(l.upSince))
	case !l.downSince.IsZero():
		b.WriteString("transport down since " + ts(l.downSince))
	default:
		b.WriteString("transport connecting since " + ts(l.started))
	}
	if !l.kaFailSince.IsZero() {
		b.WriteString(", keepalives failing since " + ts(l.kaFailSince))
	}
	if !l.lastEvent.IsZero() {
		b.WriteString("; last event " + ts(l.lastEvent))
	} else {
		b.WriteString("; no event yet")
	}
	if l.forced > 0 {
		fmt.Fprintf(&b, "; watchdog reconnects %d", l.forced)
	}
	return b.String()
}

// newClient announces the current WhatsApp Web version (fetched, else the
// pinned one) and returns a whatsmeow client of dev: login and connect
// start the same way.
func (a *Adapter) newClient(ctx context.Context, dev *store.Device, wlog slogLogger) *whatsmeow.Client {
	setupDeviceProps()
	v, src, verr := updateVersion(ctx, a.hc)
	if verr != nil {
		a.log.Warn("using the pinned WhatsApp Web version", "version", v.String(), "err", verr)
	}
	a.mu.Lock()
	a.version = versionString(v, src)
	a.mu.Unlock()
	return whatsmeow.NewClient(dev, wlog)
}
