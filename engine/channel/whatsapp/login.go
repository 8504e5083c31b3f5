package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/types/events"

	"github.com/openclaw-edge/edge/engine/channel"
)

// loginSettle is how long Login waits after pairing for the first
// authenticated connection (whatsmeow reconnects after the pair success),
// so the new device has uploaded its prekeys before the CLI exits.
var loginSettle = 60 * time.Second

// logoutConnectTimeout bounds the connection a standalone Logout needs to
// tell WhatsApp the device is gone.
var logoutConnectTimeout = 30 * time.Second

// pairDisplayName is how a pairing-code link introduces itself; WhatsApp
// accepts only "Browser (OS)" names of common browsers.
const pairDisplayName = "Chrome (Linux)"

// Login implements channel.Linker: it links this box as a WhatsApp Web
// device. Without opts.Phone it emits QR codes (a new one every 20–60 s,
// about 160 s in all, WhatsApp's own timing); with opts.Phone it emits one
// pairing code to type on the phone (Linked devices → Link with phone
// number instead). The last event has Done and Self ("+<phone>").
// Login refuses when the account is already linked or while Run holds it.
func (a *Adapter) Login(ctx context.Context, opts channel.LoginOptions, emit func(channel.LoginEvent)) error {
	if !a.linkMu.TryLock() {
		return errors.New("whatsapp: the account is running in the gateway, so it is linked; log out first to link another phone")
	}
	defer a.linkMu.Unlock()
	if emit == nil {
		emit = func(channel.LoginEvent) {}
	}
	var phone string
	if opts.Phone != "" {
		d, err := phoneDigits(opts.Phone)
		if err != nil {
			return fmt.Errorf("whatsapp: login: %w", err)
		}
		phone = d
	}

	wlog := slogLogger{a.log.With("component", "whatsmeow")}
	container, err := openStore(ctx, a.storePath, wlog.Sub("Database"))
	if err != nil {
		return fmt.Errorf("whatsapp: %w", err)
	}
	defer func() {
		if err := container.Close(); err != nil {
			a.log.Warn("closing the device store", "err", err)
		}
	}()
	dev, err := container.GetFirstDevice(ctx)
	if err != nil {
		return fmt.Errorf("whatsapp: device store: %w", err)
	}
	if dev.ID != nil {
		return fmt.Errorf("whatsapp: already linked as %s; run `openclaw channels logout whatsapp` first", userID(*dev.ID))
	}

	cli := a.newClient(ctx, dev, wlog)
	connected := make(chan struct{}, 1)
	cli.AddEventHandler(func(evt any) {
		if _, ok := evt.(*events.Connected); ok {
			select {
			case connected <- struct{}{}:
			default:
			}
		}
	})
	qr, err := cli.GetQRChannel(ctx)
	if err != nil {
		return fmt.Errorf("whatsapp: login: %w", err)
	}
	if err := cli.ConnectContext(ctx); err != nil {
		return fmt.Errorf("whatsapp: login: connect: %w", err)
	}
	defer cli.Disconnect()

	codeSent := false
	for item := range qr {
		switch item.Event {
		case whatsmeow.QRChannelEventCode:
			if phone == "" {
				emit(channel.LoginEvent{QR: item.Code, Message: "Scan this code with WhatsApp: Settings → Linked devices → Link a device"})
				continue
			}
			if codeSent {
				continue
			}
			// The first QR event means the login socket is ready; the
			// pairing code is valid for the rest of its lifetime.
			code, err := cli.PairPhone(ctx, phone, true, whatsmeow.PairClientChrome, pairDisplayName)
			if err != nil {
				return fmt.Errorf("whatsapp: login: pairing code: %w", err)
			}
			codeSent = true
			emit(channel.LoginEvent{PairingCode: code, Message: "On the phone: WhatsApp → Settings → Linked devices → Link a device → Link with phone number instead, then enter this code"})
		case whatsmeow.QRChannelSuccess.Event:
			jid := cli.Store.GetJID()
			a.setSelf(jid, cli.Store.GetLID())
			select {
			case <-connected:
			case <-time.After(loginSettle):
				a.log.Warn("linked, but the first connection did not complete; the gateway will finish it")
			case <-ctx.Done():
			}
			a.setState(channel.StateStopped, "")
			self := userID(jid)
			emit(channel.LoginEvent{Done: true, Self: self, Message: "Linked as " + self})
			return nil
		case whatsmeow.QRChannelScannedWithoutMultidevice.Event:
			emit(channel.LoginEvent{Message: "The phone's WhatsApp does not support linked devices; update it and scan again"})
		case whatsmeow.QRChannelTimeout.Event:
			return errors.New("whatsapp: login timed out before a phone linked; run login again")
		case whatsmeow.QRChannelClientOutdated.Event:
			a.mu.Lock()
			a.outdated = "WhatsApp rejected this client as outdated (announced " + a.version + "); update OpenClaw Edge"
			a.mu.Unlock()
			return errors.New("whatsapp: login: WhatsApp says this client version is outdated; update OpenClaw Edge")
		case whatsmeow.QRChannelEventError:
			return fmt.Errorf("whatsapp: login: pairing failed: %w", item.Error)
		default:
			return fmt.Errorf("whatsapp: login: unexpected %s", item.Event)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("whatsapp: login: %w", err)
	}
	return errors.New("whatsapp: login ended before a phone linked")
}

// Logout implements channel.Linker: it tells WhatsApp to remove this
// device and deletes it from the device store. While Run is running its
// connection is used (and Run then ends with ErrLoggedOut); otherwise
// Logout connects briefly. If WhatsApp cannot be told, the device is
// still deleted here and the error says to remove it on the phone.
func (a *Adapter) Logout(ctx context.Context) error {
	a.mu.Lock()
	s := a.sess
	a.mu.Unlock()
	if s != nil && s.wa != nil {
		err := a.logout(ctx, s.wa)
		a.setState(channel.StateNotLinked, notLinkedReason)
		s.fail(fmt.Errorf("whatsapp: %w: logged out by the owner", channel.ErrLoggedOut))
		return err
	}
	if !a.linkMu.TryLock() {
		return errors.New("whatsapp: a login or connect is in progress; try again")
	}
	defer a.linkMu.Unlock()
	wlog := slogLogger{a.log.With("component", "whatsmeow")}
	container, err := openStore(ctx, a.storePath, wlog.Sub("Database"))
	if err != nil {
		return fmt.Errorf("whatsapp: %w", err)
	}
	defer func() {
		if err := container.Close(); err != nil {
			a.log.Warn("closing the device store", "err", err)
		}
	}()
	dev, err := container.GetFirstDevice(ctx)
	if err != nil {
		return fmt.Errorf("whatsapp: device store: %w", err)
	}
	if dev.ID == nil {
		a.setState(channel.StateNotLinked, notLinkedReason)
		return nil
	}
	cli := whatsmeow.NewClient(dev, wlog)
	cli.EnableAutoReconnect = false
	connected := make(chan struct{}, 1)
	cli.AddEventHandler(func(evt any) {
		if _, ok := evt.(*events.Connected); ok {
			select {
			case connected <- struct{}{}:
			default:
			}
		}
	})
	var connErr error
	if err := cli.ConnectContext(ctx); err != nil {
		connErr = fmt.Errorf("connect: %w", err)
	} else {
		select {
		case <-connected:
		case <-time.After(logoutConnectTimeout):
			connErr = errors.New("connect: timed out")
		case <-ctx.Done():
			connErr = ctx.Err()
		}
	}
	if connErr == nil {
		err = a.logout(ctx, cli)
	} else {
		err = forget(ctx, cli.Store, connErr)
	}
	cli.Disconnect()
	a.setState(channel.StateNotLinked, notLinkedReason)
	return err
}

// logout unlinks through a connected client, falling back to forgetting
// the device locally.
func (a *Adapter) logout(ctx context.Context, cli *whatsmeow.Client) error {
	if err := cli.Logout(ctx); err != nil {
		cli.Disconnect()
		return forget(ctx, cli.Store, err)
	}
	return nil
}

// forget deletes the device from the store after WhatsApp could not be
// told; the phone still lists it until the owner removes it there.
func forget(ctx context.Context, dev *store.Device, cause error) error {
	if err := dev.Delete(ctx); err != nil {
		return fmt.Errorf("whatsapp: logout: %w; deleting the device locally also failed: %w", cause, err)
	}
	return fmt.Errorf("whatsapp: logout: WhatsApp could not be told (%w); the device was deleted here, remove it on the phone under Linked devices", cause)
}
