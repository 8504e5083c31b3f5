package email

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
)

// cursorKey is the Store key of the IMAP cursor.
const cursorKey = "imap.cursor"

// cursor is the persisted position in the mailbox.
type cursor struct {
	Mailbox     string `json:"mailbox"`
	UIDValidity uint32 `json:"uidValidity"`
	LastUID     uint32 `json:"lastUid"` // the last UID processed (delivered or skipped)
}

// Timings; variables so that tests can shorten them.
var (
	// idleRestart re-issues IDLE before the 30 minutes after which servers
	// may drop an idle client (RFC 2177); go-imap's own restart is at 28.
	idleRestart = 25 * time.Minute
	// pollInterval is how often a server without IDLE is asked.
	pollInterval = 60 * time.Second
	// dialTimeout bounds the TCP connect and TLS handshake.
	dialTimeout = 30 * time.Second
	// loginTimeout bounds greeting, LOGIN and SELECT together.
	loginTimeout = 2 * time.Minute
)

// keepAlive makes the kernel probe a silent connection: an IDLE
// connection whose server vanished without a word (a NAT timeout, a dead
// link) is noticed within about two minutes instead of at the next IDLE
// restart.
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 60 * time.Second, Interval: 15 * time.Second, Count: 4}

type ackReq struct {
	uid  imap.UID
	done chan error // cap 1
}

// Run implements channel.Adapter: it connects, then delivers new mail until
// ctx is cancelled (nil) or the connection fails (the error).
func (a *Adapter) Run(ctx context.Context, in channel.Inbox) error {
	if !a.running.TryLock() {
		return errors.New("email: Run is already running")
	}
	defer a.running.Unlock()
	a.setState(channel.StateConnecting, "")
	err := a.run(ctx, in)
	if ctx.Err() != nil {
		a.setState(channel.StateStopped, "")
		return nil
	}
	if err == nil {
		err = errors.New("email: imap loop ended")
	}
	a.setState(channel.StateError, a.safeReason(err))
	return err
}

// safeReason is err's text for Status, with the passwords masked in case a
// server echoed one.
func (a *Adapter) safeReason(err error) string {
	s := err.Error()
	for _, srv := range []server{a.imap, a.smtp} {
		if pw, _ := srv.secret(); len(pw) >= 3 {
			s = strings.ReplaceAll(s, pw, "***")
		}
	}
	return s
}

func (a *Adapter) run(ctx context.Context, in channel.Inbox) error {
	newMail := make(chan struct{}, 1)
	notify := func() {
		select {
		case newMail <- struct{}{}:
		default:
		}
	}
	opts := &imapclient.Options{
		TLSConfig: a.tlsConfig(a.imap.host),
		UnilateralDataHandler: &imapclient.UnilateralDataHandler{
			Mailbox: func(d *imapclient.UnilateralDataMailbox) {
				if d.NumMessages != nil {
					notify()
				}
			},
		},
	}
	c, err := a.dialIMAP(ctx, opts)
	if err != nil {
		return fmt.Errorf("email: imap connect %s (%s): %w", a.imap.addr(), a.imap.security, err)
	}
	// Cancelling ctx closes the connection: every blocking call (IDLE
	// included) returns at once.
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	defer c.Close()
	// go-imap waits for a command's answer without a deadline; a server
	// that accepts the connection and then hangs must not stall Run
	// before it is linked.
	watchdog := time.AfterFunc(loginTimeout, func() { c.Close() })
	defer watchdog.Stop()

	if err := c.WaitGreeting(); err != nil {
		return fmt.Errorf("email: imap greeting from %s: %w", a.imap.addr(), err)
	}
	pw, err := a.imap.secret()
	if err != nil {
		return fmt.Errorf("email: imap: %w", err)
	}
	if err := c.Login(a.imap.username, pw).Wait(); err != nil {
		return fmt.Errorf("email: imap login as %s: %w", a.imap.username, err)
	}
	sel, err := c.Select(a.mailbox, nil).Wait()
	if err != nil {
		return fmt.Errorf("email: imap select %q: %w", a.mailbox, err)
	}
	uidNext := uint32(sel.UIDNext)
	if uidNext == 0 {
		st, err := c.Status(a.mailbox, &imap.StatusOptions{UIDNext: true}).Wait()
		if err != nil || st.UIDNext == 0 {
			return fmt.Errorf("email: imap: server gave no UIDNEXT for %q: %v", a.mailbox, err)
		}
		uidNext = uint32(st.UIDNext)
	}
	if !watchdog.Stop() {
		return fmt.Errorf("email: imap %s: no answer within %v", a.imap.addr(), loginTimeout)
	}
	cur, err := a.loadCursor(sel.UIDValidity, uidNext)
	if err != nil {
		return err
	}

	a.mu.Lock()
	a.client, a.validity = c, sel.UIDValidity
	a.mu.Unlock()
	defer a.disconnect()
	a.setState(channel.StateLinked, "")
	a.log.Info("email: connected", "server", a.imap.addr(), "mailbox", a.mailbox, "lastUid", cur.LastUID)

	idle := c.Caps().Has(imap.CapIdle)
	for {
		if err := a.fetchNew(ctx, c, in, &cur); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		if idle {
			err = a.waitIdle(ctx, c, newMail)
		} else {
			err = a.waitPoll(ctx, c)
		}
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// loadCursor reads the stored cursor, starting at uidNext on the first run,
// for another mailbox or after a UIDVALIDITY change (see the package doc).
func (a *Adapter) loadCursor(validity, uidNext uint32) (cursor, error) {
	var cur cursor
	ok, err := a.deps.Store.Get(cursorKey, &cur)
	if err != nil {
		return cursor{}, fmt.Errorf("email: read cursor: %w", err)
	}
	fresh := cursor{Mailbox: a.mailbox, UIDValidity: validity, LastUID: uidNext - 1}
	switch {
	case !ok:
		a.log.Info("email: first run: answering only mail from now on", "mailbox", a.mailbox, "uidNext", uidNext)
	case cur.Mailbox != a.mailbox:
		a.log.Info("email: mailbox changed: answering only mail from now on", "old", cur.Mailbox, "mailbox", a.mailbox)
	case cur.UIDValidity != validity:
		a.log.Warn("email: UIDVALIDITY changed: the server renumbered the mailbox; starting again at UIDNEXT, mail in between may be missed",
			"mailbox", a.mailbox, "old", cur.UIDValidity, "new", validity)
	default:
		return cur, nil
	}
	if err := a.deps.Store.Put(cursorKey, fresh); err != nil {
		return cursor{}, fmt.Errorf("email: write cursor: %w", err)
	}
	return fresh, nil
}

func (a *Adapter) tlsConfig(host string) *tls.Config {
	var cfg *tls.Config
	if a.deps.TLSConfig != nil {
		cfg = a.deps.TLSConfig.Clone()
	} else {
		cfg = &tls.Config{}
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	if cfg.MinVersion == 0 {
		cfg.MinVersion = tls.VersionTLS12
	}
	return cfg
}

func (a *Adapter) dialIMAP(ctx context.Context, opts *imapclient.Options) (*imapclient.Client, error) {
	d := net.Dialer{Timeout: dialTimeout, KeepAliveConfig: keepAlive}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", a.imap.addr())
	if err != nil {
		return nil, err
	}
	switch a.imap.security {
	case SecurityTLS:
		cfg := opts.TLSConfig.Clone()
		cfg.NextProtos = []string{"imap"}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(dctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("tls: %w", err)
		}
		return imapclient.New(tc, opts), nil
	case SecurityStartTLS:
		// NewStartTLS waits for the greeting and upgrades; bound it.
		conn.SetDeadline(time.Now().Add(dialTimeout))
		stop := context.AfterFunc(dctx, func() { conn.Close() })
		c, err := imapclient.NewStartTLS(conn, opts)
		stop()
		if err != nil {
			return nil, fmt.Errorf("starttls: %w", err)
		}
		conn.SetDeadline(time.Time{})
		return c, nil
	default:
		return imapclient.New(conn, opts), nil
	}
}

// disconnect unpublishes the client and fails the Acks waiting on it.
func (a *Adapter) disconnect() {
	a.mu.Lock()
	a.client = nil
	reqs := a.acks
	a.acks = nil
	a.mu.Unlock()
	for _, r := range reqs {
		r.done <- fmt.Errorf("email: ack: %w", channel.ErrNotConnected)
	}
}

// acquire takes the right to send IMAP commands on the connection (Ack
// takes it too, outside Deliver and IDLE).
func (a *Adapter) acquire(ctx context.Context) bool {
	select {
	case a.connSem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (a *Adapter) release() { <-a.connSem }

// fetchNew delivers every message with a UID above the cursor, in order.
func (a *Adapter) fetchNew(ctx context.Context, c *imapclient.Client, in channel.Inbox, cur *cursor) error {
	if !a.acquire(ctx) {
		return nil
	}
	var set imap.UIDSet
	set.AddRange(imap.UID(cur.LastUID+1), 0) // last+1:*
	msgs, err := c.Fetch(set, &imap.FetchOptions{UID: true}).Collect()
	a.release()
	if err != nil {
		return fmt.Errorf("email: imap list new mail: %w", err)
	}
	var uids []imap.UID
	for _, m := range msgs {
		// "n:*" includes the highest UID even when it is below n.
		if uint32(m.UID) > cur.LastUID {
			uids = append(uids, m.UID)
		}
	}
	slices.Sort(uids)
	for _, uid := range uids {
		if ctx.Err() != nil {
			return nil
		}
		if err := a.processOne(ctx, c, in, cur, uid); err != nil {
			return err
		}
	}
	return nil
}

var bodySection = &imap.FetchItemBodySection{Peek: true, Partial: &imap.SectionPartial{Offset: 0, Size: MaxMessageBytes + 1}}

func (a *Adapter) processOne(ctx context.Context, c *imapclient.Client, in channel.Inbox, cur *cursor, uid imap.UID) error {
	if !a.acquire(ctx) {
		return nil
	}
	msgs, err := c.Fetch(imap.UIDSetNum(uid), &imap.FetchOptions{
		UID:          true,
		InternalDate: true,
		BodySection:  []*imap.FetchItemBodySection{bodySection},
	}).Collect()
	a.release()
	if err != nil {
		return fmt.Errorf("email: imap fetch uid %d: %w", uid, err)
	}
	var raw []byte
	found := false
	for _, m := range msgs {
		if m.UID == uid {
			raw, found = m.FindBodySection(bodySection), true
		}
	}
	log := a.log.With("uid", uint32(uid))
	if !found {
		log.Info("email: message gone before it was read (expunged)")
		return a.advance(cur, uid)
	}
	m, skip := a.inbound(raw, cur.UIDValidity, uint32(uid))
	if skip != "" {
		log.Info("email: message skipped", "why", skip)
		return a.advance(cur, uid)
	}
	if err := in.Deliver(ctx, m); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("email: deliver uid %d: %w", uid, err)
	}
	a.mu.Lock()
	a.lastIn = a.deps.Now()
	a.mu.Unlock()
	return a.advance(cur, uid)
}

func (a *Adapter) advance(cur *cursor, uid imap.UID) error {
	next := *cur
	next.LastUID = uint32(uid)
	if err := a.deps.Store.Put(cursorKey, next); err != nil {
		return fmt.Errorf("email: write cursor: %w", err)
	}
	*cur = next
	return nil
}

// inbound turns a raw message into an engine.Inbound, or says why it is
// skipped.
func (a *Adapter) inbound(raw []byte, validity, uid uint32) (engine.Inbound, string) {
	p, err := ParseMessage(bytes.NewReader(raw), MaxMessageBytes)
	if err != nil {
		return engine.Inbound{}, "unparsable: " + err.Error()
	}
	switch {
	case p.From == "":
		return engine.Inbound{}, errNoFrom.Error()
	case p.From == a.address:
		return engine.Inbound{}, "from our own address"
	case p.Auto:
		return engine.Inbound{}, "automatic mail (auto-reply, bulk, report)"
	}
	if why := a.authenticate(p); why != "" {
		a.mu.Lock()
		a.unauth++
		a.unauthWhy = why
		a.mu.Unlock()
		return engine.Inbound{}, why
	}
	id := p.MessageID
	if id == "" {
		id = fmt.Sprintf("uid-%d-%d@%s", validity, uid, a.imap.host)
	}
	ts := p.Date
	if ts.IsZero() {
		ts = a.deps.Now()
	}
	text := p.Text
	if p.Command != "" {
		// The command alone, so that the gateway reads it as one (the rest
		// of the body, a greeting or "Thanks", would become its arguments);
		// the mail itself stays in the mailbox.
		text = p.Command
	} else if p.InReplyTo == "" && p.Subject != "" {
		if text == "" {
			text = "Subject: " + p.Subject
		} else {
			text = "Subject: " + p.Subject + "\n\n" + text
		}
	} else if text == "" {
		text = p.Subject
	}
	media, notes := a.saveAttachments(p, validity, uid)
	if p.Truncated {
		notes = append(notes, fmt.Sprintf("[the message was larger than %d MiB; only its beginning was read]", MaxMessageBytes>>20))
	}
	if len(notes) > 0 && p.Command == "" {
		text = strings.TrimSpace(text + "\n\n" + strings.Join(notes, "\n"))
	}
	subject := p.Subject
	return engine.Inbound{
		Channel:    ChannelName,
		Account:    a.deps.Account,
		ChatID:     p.FromAddr,
		ChatType:   engine.ChatDirect,
		SenderID:   p.FromAddr, // as written: access.Canonical compares ids
		SenderName: p.FromName,
		MessageID:  id,
		Text:       text,
		ReplyTo:    p.InReplyTo,
		Quoted:     p.Quoted,
		Thread: ThreadInfo{
			Subject:     subject,
			References:  trimRefs(p.References),
			Mailbox:     a.mailbox,
			UIDValidity: validity,
			UID:         uid,
		}.encode(),
		Media:     media,
		Timestamp: ts,
	}, ""
}

// waitIdle IDLEs until new mail, an Ack, the restart timer, ctx or the
// connection's end.
func (a *Adapter) waitIdle(ctx context.Context, c *imapclient.Client, newMail <-chan struct{}) error {
	if !a.acquire(ctx) {
		return nil
	}
	defer a.release()
	a.drainAcks()
	idle, err := c.Idle()
	if err != nil {
		return fmt.Errorf("email: imap idle: %w", err)
	}
	timer := time.NewTimer(idleRestart)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		idle.Close()
		return nil
	case <-c.Closed():
		idle.Close()
		return fmt.Errorf("email: imap connection to %s closed", a.imap.addr())
	case <-newMail:
	case <-a.wake:
	case <-timer.C:
	}
	if err := idle.Close(); err != nil {
		return fmt.Errorf("email: imap end idle: %w", err)
	}
	if err := idle.Wait(); err != nil {
		return fmt.Errorf("email: imap idle: %w", err)
	}
	a.drainAcks()
	return nil
}

// waitPoll waits pollInterval (or an Ack), then asks the server (NOOP) so
// that the connection's death is noticed.
func (a *Adapter) waitPoll(ctx context.Context, c *imapclient.Client) error {
	if !a.acquire(ctx) {
		return nil
	}
	a.drainAcks()
	a.release()
	timer := time.NewTimer(pollInterval)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return nil
	case <-c.Closed():
		return fmt.Errorf("email: imap connection to %s closed", a.imap.addr())
	case <-a.wake:
		return nil
	case <-timer.C:
	}
	if !a.acquire(ctx) {
		return nil
	}
	defer a.release()
	if err := c.Noop().Wait(); err != nil {
		return fmt.Errorf("email: imap noop: %w", err)
	}
	return nil
}

// Ack implements channel.Acker: it marks the message \Seen. It needs the
// IMAP connection of a running Run (ErrNotConnected otherwise). A message
// of another mailbox numbering (UIDVALIDITY changed since) is left alone.
func (a *Adapter) Ack(ctx context.Context, m engine.Inbound) error {
	t, err := threadOf(m)
	if err != nil {
		return channel.Permanent(err)
	}
	if t.UID == 0 {
		return nil // not from IMAP: nothing to mark
	}
	a.mu.Lock()
	if a.client == nil {
		a.mu.Unlock()
		return fmt.Errorf("email: ack uid %d: %w", t.UID, channel.ErrNotConnected)
	}
	if t.UIDValidity != a.validity || t.Mailbox != a.mailbox {
		a.mu.Unlock()
		a.log.Info("email: ack of a message of an older mailbox numbering ignored", "uid", t.UID)
		return nil
	}
	req := &ackReq{uid: imap.UID(t.UID), done: make(chan error, 1)}
	a.acks = append(a.acks, req)
	a.mu.Unlock()
	select { // interrupt IDLE
	case a.wake <- struct{}{}:
	default:
	}
	select {
	case err := <-req.done:
		return err
	case a.connSem <- struct{}{}:
		// The run loop is not using the connection (it may be in Deliver,
		// which may be what called us): send the STORE ourselves.
		a.drainAcks()
		a.release()
		return <-req.done
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drainAcks sends the queued Acks as one STORE; the caller holds connSem.
func (a *Adapter) drainAcks() {
	a.mu.Lock()
	reqs, c := a.acks, a.client
	a.acks = nil
	a.mu.Unlock()
	if len(reqs) == 0 {
		return
	}
	var err error
	if c == nil {
		err = fmt.Errorf("email: ack: %w", channel.ErrNotConnected)
	} else {
		var set imap.UIDSet
		for _, r := range reqs {
			set.AddNum(r.uid)
		}
		err = c.Store(set, &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagSeen}}, nil).Close()
		if err != nil {
			err = fmt.Errorf("email: mark \\Seen %v: %w", set, err)
		}
	}
	for _, r := range reqs {
		r.done <- err
	}
}
