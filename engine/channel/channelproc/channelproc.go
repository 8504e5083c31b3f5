// Package channelproc runs a channel adapter in a child process of its own
// and gives the gateway a channel.Adapter that stands for it (issue 24).
//
// Why: a heavy channel costs every start and every idle hour of the process
// that links it. WhatsApp (go.mau.fi/whatsmeow, its protobuf packages and
// its SQLite store) added 6.6 MB of idle RSS and over 10 ms of package
// init to every gateway, configured or not (docs/benchmarks.md). Built as
// its own binary (openclaw-whatsapp, appliance/whatsapp), it costs nothing
// where it is not configured, and where it is, it runs beside the gateway
// like openclaw-runner: a crash or an out-of-memory kill takes down the
// channel only, and the gateway's supervisor starts it again.
//
// The Adapter here implements channel.Adapter, Linker, Typer, Reactor and
// MediaSender by calls over the child's stdin and stdout (JSON values in
// both directions, each call answered by one reply, any number in flight,
// a cancel for a call whose context ended). The child calls back for what
// the gateway owns: Deliver (the inbox), the adapter's Store (its cursor,
// in the gateway's database) and login events. Sentinel errors
// (ErrLoggedOut, ErrNotConnected, ErrPermanent) cross as codes, so the
// outbox and the supervisor treat them as they treat an in-process
// adapter's.
//
// The child runs while the adapter is Run or a Login or Logout is under
// way, and leaves when none is (its stdin closes). Send, Typing and React
// while it does not run fail with ErrNotConnected, as an in-process adapter
// does while disconnected: the outbox keeps the message for later.
package channelproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
)

// Config says which child to run for which account.
type Config struct {
	Channel string // "whatsapp"
	Account string
	// Command starts the child (its binary, no arguments needed).
	Command func() *exec.Cmd
	// Init is handed to the child's open function (Serve) first: the
	// adapter's config and paths, as the child reads them.
	Init any
	// Store is the adapter's own store (channel.Store), served to the
	// child.
	Store channel.Store
	// MaxMediaBytes is what MediaSender reports (0: no media).
	MaxMediaBytes int64
	Logger        *slog.Logger
}

// Adapter stands for the adapter running in the child.
type Adapter struct {
	cfg Config

	mu     sync.Mutex
	proc   *proc
	inbox  channel.Inbox
	emit   func(channel.LoginEvent)
	status channel.Status
}

type proc struct {
	refs   int // users (Run, Login, Logout); a.mu guards it
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	peer   *peer
	exited chan struct{}
}

// New returns an adapter whose child starts at Run, Login or Logout.
func New(cfg Config) *Adapter {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Adapter{cfg: cfg, status: channel.Status{Channel: cfg.Channel, Account: cfg.Account, State: channel.StateStopped, Since: time.Now()}}
}

var (
	_ channel.Adapter     = (*Adapter)(nil)
	_ channel.Linker      = (*Adapter)(nil)
	_ channel.Typer       = (*Adapter)(nil)
	_ channel.Reactor     = (*Adapter)(nil)
	_ channel.MediaSender = (*Adapter)(nil)
)

// Channel is the channel's name.
func (a *Adapter) Channel() string { return a.cfg.Channel }

// Account is the account's name.
func (a *Adapter) Account() string { return a.cfg.Account }

// MaxMediaBytes is the configured attachment limit.
func (a *Adapter) MaxMediaBytes() int64 { return a.cfg.MaxMediaBytes }

// acquire starts the child if it does not run and counts one more user.
func (a *Adapter) acquire(ctx context.Context) (*proc, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.proc != nil {
		select {
		case <-a.proc.exited:
			a.proc = nil // died between uses
		default:
		}
	}
	if a.proc == nil {
		p, err := a.start(ctx)
		if err != nil {
			return nil, err
		}
		a.proc = p
	}
	a.proc.refs++
	return a.proc, nil
}

// release counts one user less; the last one lets the child go, after
// keeping its last word on the link's state (an in-process adapter keeps
// saying "not linked" after Run returned).
func (a *Adapter) release(p *proc) {
	a.refreshStatus(p)
	a.mu.Lock()
	p.refs--
	last := p.refs == 0
	if last && a.proc == p {
		a.proc = nil
	}
	a.mu.Unlock()
	if last {
		stopProc(p)
	}
}

func (a *Adapter) start(ctx context.Context) (*proc, error) {
	cmd := a.cfg.Command()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr // the child logs as the gateway does (journald)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the %s process: %w", a.cfg.Channel, err)
	}
	p := &proc{cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	p.peer = newPeer(stdout, stdin, a.handle)
	// A child that stops reading would block every write (and so every
	// call) for good: one write that takes this long kills it.
	p.peer.stuck = func() {
		a.cfg.Logger.Error("the channel process does not read its input; killing it", "channel", a.cfg.Channel, "account", a.cfg.Account)
		_ = cmd.Process.Kill()
	}
	go func() {
		err := p.peer.serve()
		_ = cmd.Wait()
		if !errors.Is(err, io.EOF) {
			a.cfg.Logger.Warn("channel process pipe failed", "err", err)
		}
		close(p.exited)
	}()
	// A child that never answers init must not hold the adapter (and its
	// Status, Send) for good.
	ictx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	if err := p.peer.call(ictx, "init", a.cfg.Init, nil); err != nil {
		stopProc(p)
		return nil, fmt.Errorf("%s process: %w", a.cfg.Channel, err)
	}
	return p, nil
}

// initTimeout bounds the child's start and its init call.
const initTimeout = 30 * time.Second

// stopProc closes the child's stdin (it leaves) and kills it if it has not
// gone within 10 s.
func stopProc(p *proc) {
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// running returns the child if it runs, without starting one.
func (a *Adapter) running() *proc {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.proc == nil {
		return nil
	}
	select {
	case <-a.proc.exited:
		return nil
	default:
		return a.proc
	}
}

// handle answers the child's calls.
func (a *Adapter) handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case "deliver":
		var in engine.Inbound
		if err := json.Unmarshal(params, &in); err != nil {
			return nil, err
		}
		a.mu.Lock()
		inbox := a.inbox
		a.mu.Unlock()
		if inbox == nil {
			return nil, fmt.Errorf("%w: the gateway is not receiving", channel.ErrNotConnected)
		}
		return nil, inbox.Deliver(ctx, in)
	case "storeGet":
		var key string
		if err := json.Unmarshal(params, &key); err != nil {
			return nil, err
		}
		var v json.RawMessage
		ok, err := a.cfg.Store.Get(key, &v)
		if err != nil {
			return nil, err
		}
		return storeValue{Found: ok, Value: v}, nil
	case "storePut":
		var kv storePut
		if err := json.Unmarshal(params, &kv); err != nil {
			return nil, err
		}
		return nil, a.cfg.Store.Put(kv.Key, kv.Value)
	case "loginEvent":
		var ev channel.LoginEvent
		if err := json.Unmarshal(params, &ev); err != nil {
			return nil, err
		}
		a.mu.Lock()
		emit := a.emit
		a.mu.Unlock()
		if emit != nil {
			emit(ev)
		}
		return nil, nil
	}
	return nil, fmt.Errorf("unknown call %q", method)
}

type storeValue struct {
	Found bool            `json:"found"`
	Value json.RawMessage `json:"value,omitempty"`
}

type storePut struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// Run starts the child and runs the adapter there until ctx ends or the
// adapter stops; the child leaving is an error the supervisor retries.
func (a *Adapter) Run(ctx context.Context, in channel.Inbox) error {
	p, err := a.acquire(ctx)
	if err != nil {
		return err
	}
	defer a.release(p)
	a.mu.Lock()
	a.inbox = in
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.inbox = nil
		a.mu.Unlock()
	}()
	err = p.peer.call(ctx, "run", nil, nil)
	if ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled)) {
		return nil
	}
	return err
}

// Send sends through the child; ErrNotConnected when it does not run.
func (a *Adapter) Send(ctx context.Context, m channel.Outbound) (channel.Receipt, error) {
	var r channel.Receipt
	p := a.running()
	if p == nil {
		return r, fmt.Errorf("%w: %s is not running", channel.ErrNotConnected, a.cfg.Channel)
	}
	err := p.peer.call(ctx, "send", m, &r)
	return r, err
}

type typing struct {
	ChatID string `json:"chatId"`
	On     bool   `json:"on"`
}

type reaction struct {
	ChatID    string `json:"chatId"`
	MessageID string `json:"messageId"`
	Emoji     string `json:"emoji"`
}

// Typing shows or clears the typing indicator.
func (a *Adapter) Typing(ctx context.Context, chatID string, on bool) error {
	p := a.running()
	if p == nil {
		return fmt.Errorf("%w: %s is not running", channel.ErrNotConnected, a.cfg.Channel)
	}
	return p.peer.call(ctx, "typing", typing{chatID, on}, nil)
}

// React reacts to a message.
func (a *Adapter) React(ctx context.Context, chatID, messageID, emoji string) error {
	p := a.running()
	if p == nil {
		return fmt.Errorf("%w: %s is not running", channel.ErrNotConnected, a.cfg.Channel)
	}
	return p.peer.call(ctx, "react", reaction{chatID, messageID, emoji}, nil)
}

// Login links the account, with the child's events passed to emit.
func (a *Adapter) Login(ctx context.Context, opts channel.LoginOptions, emit func(channel.LoginEvent)) error {
	p, err := a.acquire(ctx)
	if err != nil {
		return err
	}
	defer a.release(p)
	a.mu.Lock()
	a.emit = emit
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.emit = nil
		a.mu.Unlock()
	}()
	return p.peer.call(ctx, "login", opts, nil)
}

// Logout unlinks the account.
func (a *Adapter) Logout(ctx context.Context) error {
	p, err := a.acquire(ctx)
	if err != nil {
		return err
	}
	defer a.release(p)
	return p.peer.call(ctx, "logout", nil, nil)
}

// refreshStatus asks the child for its status (within 2 s) and remembers
// it.
func (a *Adapter) refreshStatus(p *proc) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var st channel.Status
	if err := p.peer.call(ctx, "status", nil, &st); err != nil {
		return false
	}
	a.mu.Lock()
	a.status = st
	a.mu.Unlock()
	return true
}

// Status is the child's status; without a child, its last word (a link
// that was up is now stopped).
func (a *Adapter) Status() channel.Status {
	if p := a.running(); p != nil && a.refreshStatus(p) {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.status
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.status
	if a.proc == nil && st.State != channel.StateStopped && st.State != channel.StateLoggedOut && st.State != channel.StateNotLinked && st.State != channel.StateError {
		st.State, st.Reason = channel.StateStopped, ""
	}
	return st
}
