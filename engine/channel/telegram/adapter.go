package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/PaulSonOfLars/gotgbot/v2"

	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/crashpoint"
)

// Long polling.
const (
	// pollTimeout is getUpdates' long-poll wait: Telegram holds the
	// request up to this long when nothing is pending.
	pollTimeout = 25 * time.Second
	// pollMargin is added to pollTimeout for the request's deadline: a
	// poll that outlives it is a dead link (the liveness check).
	pollMargin = 15 * time.Second
	// pollLimit is the most updates one getUpdates returns.
	pollLimit = 100
	// maxBackoff caps the wait after a network failure.
	maxBackoff = 30 * time.Second
	// keyOffset is the Store key of the next update id to ask for.
	keyOffset = "offset"
)

// allowedUpdates are the update kinds asked for (getUpdates'
// allowed_updates, a JSON list): messages, their edits (ignored, but
// confirmed) and button presses.
const allowedUpdates = `["message","edited_message","callback_query"]`

// Deps is what the wiring hands the adapter.
type Deps struct {
	Account  string
	Store    channel.Store
	Logger   *slog.Logger
	MediaDir string
	Now      func() time.Time
	// Getenv reads $TELEGRAM_BOT_TOKEN for the default account (nil: none).
	Getenv func(string) string
	// HTTP is the client for the Bot API (nil: a new one).
	HTTP *http.Client
}

// Adapter is one bot account. It is safe for concurrent use.
type Adapter struct {
	cfg      Config
	d        Deps
	log      *slog.Logger
	token    string
	tokenErr error
	cl       *client
	bot      *gotgbot.Bot

	mu     sync.Mutex
	st     channel.Status
	me     gotgbot.User
	typing map[int64]context.CancelFunc
}

var (
	_ channel.Adapter     = (*Adapter)(nil)
	_ channel.Typer       = (*Adapter)(nil)
	_ channel.Editor      = (*Adapter)(nil)
	_ channel.MediaSender = (*Adapter)(nil)
	_ channel.Streamer    = (*Adapter)(nil)
	_ channel.Unsender    = (*Adapter)(nil)
)

// New returns the adapter of one account. A config error is returned
// now (the gateway refuses to start, naming the key); a missing token is
// not: the account then reports it in `channels status` and its log,
// and the rest of the gateway runs.
func New(cfg Config, d Deps) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Account == "" {
		d.Account = "default"
	}
	hc := d.HTTP
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	timeout := 30 * time.Second
	if cfg.TimeoutSeconds > 0 {
		timeout = time.Duration(cfg.TimeoutSeconds) * time.Second
	}
	a := &Adapter{
		cfg: cfg, d: d, log: d.Logger,
		cl:     &client{http: hc, root: cfg.apiRoot(), timeout: timeout},
		typing: map[int64]context.CancelFunc{},
	}
	a.token, a.tokenErr = cfg.Token(d.Account, d.Getenv)
	if a.tokenErr == nil {
		a.bot = &gotgbot.Bot{Token: a.token, BotClient: a.cl}
	}
	a.st = channel.Status{Channel: "telegram", Account: d.Account, State: channel.StateStopped, Since: d.Now()}
	return a, nil
}

// Channel is "telegram".
func (a *Adapter) Channel() string { return "telegram" }

// Account is the account's name.
func (a *Adapter) Account() string { return a.d.Account }

// Status reports the link.
func (a *Adapter) Status() channel.Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.st
}

func (a *Adapter) setState(s channel.State, reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.st.State != s {
		a.st.Since = a.d.Now()
	}
	a.st.State, a.st.Reason = s, reason
}

// MaxMediaBytes is what a bot may upload: 50 MB (the Bot API's limit;
// photos are 10 MB, sent as documents when larger).
func (a *Adapter) MaxMediaBytes() int64 { return 50 << 20 }

// Run checks the token (getMe), removes a webhook (a bot has either, and
// a home box has no public address for one), registers /new and /stop,
// then long-polls getUpdates until ctx ends. Each update is delivered
// with the next offset in one transaction (channel.CursorInbox); the
// offset sent to Telegram is the stored one, so an update is confirmed
// to Telegram only after it is recorded here.
func (a *Adapter) Run(ctx context.Context, in channel.Inbox) error {
	if a.tokenErr != nil {
		a.setState(channel.StateError, a.tokenErr.Error())
		return fmt.Errorf("%w: channels.telegram (account %s): %v", channel.ErrConfig, a.d.Account, a.tokenErr)
	}
	a.setState(channel.StateConnecting, "")
	me, err := a.bot.GetMeWithContext(ctx, nil)
	if err != nil {
		return a.startErr("check the bot token (getMe)", err)
	}
	a.mu.Lock()
	a.me = *me
	a.st.Self = "@" + me.Username
	a.st.Detail = strings.TrimSpace(me.FirstName + " " + me.LastName)
	a.mu.Unlock()
	if _, err := a.bot.DeleteWebhookWithContext(ctx, &gotgbot.DeleteWebhookOpts{}); err != nil {
		return a.startErr("remove the webhook (deleteWebhook)", err)
	}
	cmds := []gotgbot.BotCommand{
		{Command: "new", Description: "Start a new conversation"},
		{Command: "stop", Description: "Stop the reply being written"},
		{Command: "help", Description: "What I can do"},
	}
	if _, err := a.bot.SetMyCommandsWithContext(ctx, cmds, nil); err != nil && ctx.Err() == nil {
		a.log.Warn("could not register the bot's commands (setMyCommands); they still work when typed", "err", err)
	}
	var offset int64
	if _, err := a.d.Store.Get(keyOffset, &offset); err != nil {
		return fmt.Errorf("telegram: read the update offset: %w", err)
	}
	a.setState(channel.StateLinked, "")
	a.log.Info("telegram bot connected", "bot", "@"+me.Username)
	a.sweep()
	backoff := time.Second
	for {
		ups, err := a.poll(ctx, offset)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			wait, fatal := a.pollErr(err, backoff)
			if fatal != nil {
				return fatal
			}
			if wait == backoff {
				backoff = min(2*backoff, maxBackoff)
			}
			if !sleep(ctx, wait) {
				return nil
			}
			continue
		}
		backoff = time.Second
		if a.Status().State != channel.StateLinked {
			a.setState(channel.StateLinked, "")
		}
		for _, raw := range ups {
			var head struct {
				ID int64 `json:"update_id"`
			}
			if err := json.Unmarshal(raw, &head); err != nil || head.ID < offset || head.ID == math.MaxInt64 {
				continue // confirmed already (Telegram repeats nothing below the offset), or not an update
			}
			var u gotgbot.Update
			if err := json.Unmarshal(raw, &u); err != nil {
				// One update this library cannot read (a field kind newer
				// than it) must not stall every chat behind it: skipped,
				// said in the log, and confirmed.
				a.log.Warn("skipped a Telegram update this version cannot read", "update", head.ID, "err", err)
				if err := a.d.Store.Put(keyOffset, head.ID+1); err != nil {
					a.log.Warn("could not record the update offset", "err", err)
					break
				}
				offset = head.ID + 1
				continue
			}
			if err := a.handle(ctx, in, u); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				// Not recorded: the offset stays, and the next poll gets
				// this update (and those after it) again.
				a.log.Warn("could not record a Telegram update; it is fetched again", "update", u.UpdateId, "err", err)
				if !sleep(ctx, 2*time.Second) {
					return nil
				}
				break
			}
			offset = u.UpdateId + 1
		}
	}
}

// poll is one getUpdates, its updates undecoded: each is decoded on its
// own (Run), so one the library cannot read is skipped rather than
// failing the batch, forever, at the same offset.
func (a *Adapter) poll(ctx context.Context, offset int64) ([]json.RawMessage, error) {
	raw, err := a.bot.RequestWithContext(ctx, "getUpdates", map[string]string{
		"offset": strconv.FormatInt(offset, 10), "limit": strconv.Itoa(pollLimit),
		"timeout": strconv.Itoa(int(pollTimeout / time.Second)), "allowed_updates": allowedUpdates,
	}, nil, &gotgbot.RequestOpts{Timeout: pollTimeout + pollMargin})
	if err != nil {
		return nil, err
	}
	var ups []json.RawMessage
	if err := json.Unmarshal(raw, &ups); err != nil {
		return nil, fmt.Errorf("telegram getUpdates: not a list of updates: %w", err)
	}
	return ups, nil
}

// sweep removes downloads a crash left half-written in the media dir.
func (a *Adapter) sweep() {
	if a.d.MediaDir == "" {
		return
	}
	left, _ := filepath.Glob(filepath.Join(a.d.MediaDir, ".dl-*"))
	for _, p := range left {
		if err := os.Remove(p); err != nil {
			a.log.Warn("could not remove a partial download", "err", err)
		}
	}
}

// startErr classifies a failure before polling: a refused token is a
// config error (no crash loop against Telegram); the rest is retried.
func (a *Adapter) startErr(what string, err error) error {
	if te, ok := apiError(err); ok && (te.Code == http.StatusUnauthorized || te.Code == http.StatusNotFound) {
		reason := fmt.Sprintf("Telegram refused the bot token (%d %s): check channels.telegram.botToken (or its tokenFile); @BotFather's /token shows it", te.Code, te.Description)
		a.setState(channel.StateError, reason)
		return fmt.Errorf("%w: %s", channel.ErrConfig, reason)
	}
	reason := fmt.Sprintf("could not %s: %v", what, err)
	state := channel.StateError
	var ne *netError
	if errors.As(err, &ne) {
		// Offline (the cable pulled, Telegram unreachable): the
		// supervisor retries with backoff; it is not an error of ours.
		state = channel.StateConnecting
	}
	a.setState(state, reason)
	return errors.New("telegram: " + reason)
}

// pollErr says how long to wait after a failed getUpdates, or that the
// run must end (a revoked token).
func (a *Adapter) pollErr(err error, backoff time.Duration) (time.Duration, error) {
	if d := retryAfter(err); d > 0 {
		a.log.Warn("Telegram asks to slow down", "retryAfter", d)
		return d, nil
	}
	if te, ok := apiError(err); ok {
		switch te.Code {
		case http.StatusUnauthorized, http.StatusNotFound:
			return 0, a.startErr("poll for updates", err)
		case http.StatusConflict:
			reason := "another program reads this bot's updates (a second gateway with the same token, or a webhook): " + te.Description
			a.setState(channel.StateError, reason)
			a.log.Error("telegram: "+reason, "retryIn", maxBackoff)
			return maxBackoff, nil
		}
		a.setState(channel.StateError, err.Error())
		a.log.Warn("telegram getUpdates failed", "err", err, "retryIn", backoff)
		return backoff, nil
	}
	a.setState(channel.StateConnecting, "network: "+err.Error())
	a.log.Warn("telegram unreachable; retrying", "err", err, "retryIn", backoff)
	return backoff, nil
}

// handle turns one update into an inbound message and records it with
// the offset after it; an update that is not one (an edit, a kind we do
// not use) only moves the offset.
func (a *Adapter) handle(ctx context.Context, in channel.Inbox, u gotgbot.Update) error {
	next := u.UpdateId + 1
	m, ok := a.convert(ctx, in, u)
	if !ok {
		return a.d.Store.Put(keyOffset, next)
	}
	crashpoint.At("telegram-received")
	if ci, ok := in.(channel.CursorInbox); ok {
		if err := ci.DeliverAt(ctx, m, keyOffset, next); err != nil {
			return err
		}
	} else {
		if err := in.Deliver(ctx, m); err != nil {
			return err
		}
		if err := a.d.Store.Put(keyOffset, next); err != nil {
			return err
		}
	}
	a.mu.Lock()
	a.st.LastInbound = a.d.Now()
	a.mu.Unlock()
	return nil
}

// sleep waits d or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// ids

// chatRef parses a chat id the gateway hands back (engine.Inbound.ChatID).
func chatRef(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, channel.Permanent(fmt.Errorf("telegram: %q is not a chat id", s))
	}
	return id, nil
}

// messageRef is the Telegram message id in one of our message ids: the
// inbound form "<bot>:<chat>:<message>", or a Receipt's "<message>".
func messageRef(s string) (int64, bool) {
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		s = s[i+1:]
	}
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil && id > 0
}
