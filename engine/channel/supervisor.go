package channel

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Backoff bounds the supervisor's restart delays: Min doubling up to Max.
type Backoff struct {
	Min, Max time.Duration
}

// LinkUpTime is how long a run must have lasted for its failure to count
// as a link that died (reported through OnState) rather than one that
// never came up. A variable so tests can shorten it.
var LinkUpTime = time.Minute

// DefaultBackoff: 1 s doubling to 5 minutes, reset after a run that stayed
// up for Max.
var DefaultBackoff = Backoff{Min: time.Second, Max: 5 * time.Minute}

// Supervisor runs one Adapter: Start launches Run in a loop, restarting it
// after a failure with backoff; an ErrLoggedOut failure parks it (state
// logged-out) until Restart. It is safe for concurrent use.
type Supervisor struct {
	a       Adapter
	in      Inbox
	log     *slog.Logger
	backoff Backoff
	// OnState, if set, is called (from the supervisor's goroutine) on every
	// state change the supervisor sees: the gateway tells the owner when a
	// link dies.
	onState func(Status)

	mu       sync.Mutex
	cancel   context.CancelFunc
	done     chan struct{}
	restarts int
	lastErr  string
	parked   bool
}

// SupervisorConfig configures NewSupervisor.
type SupervisorConfig struct {
	Backoff Backoff // zero: DefaultBackoff
	Logger  *slog.Logger
	OnState func(Status)
}

// NewSupervisor returns a stopped supervisor of a delivering to in.
func NewSupervisor(a Adapter, in Inbox, cfg SupervisorConfig) *Supervisor {
	if cfg.Backoff.Min <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Supervisor{a: a, in: in, log: cfg.Logger.With("channel", a.Channel(), "account", a.Account()), backoff: cfg.Backoff, onState: cfg.OnState}
}

// Adapter returns the supervised adapter.
func (s *Supervisor) Adapter() Adapter { return s.a }

// Start launches the run loop; a second Start while running does nothing.
func (s *Supervisor) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	s.cancel, s.done, s.parked = cancel, make(chan struct{}), false
	go s.loop(ctx, s.done)
}

// Stop stops the run loop and waits for Run to return.
func (s *Supervisor) Stop() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.cancel, s.done = nil, nil
	s.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// Restart stops and starts the loop again (after a login).
func (s *Supervisor) Restart(ctx context.Context) {
	s.Stop()
	s.Start(ctx)
}

// Status is the adapter's status with the supervisor's restart count and
// last error added.
func (s *Supervisor) Status() Status {
	st := s.a.Status()
	s.mu.Lock()
	defer s.mu.Unlock()
	st.Channel, st.Account = s.a.Channel(), s.a.Account()
	st.Restarts = s.restarts
	if s.cancel == nil && !s.parked && st.State != StateNotLinked && st.State != StateLoggedOut {
		st.State = StateStopped
	}
	if st.Reason == "" && st.State != StateLinked {
		st.Reason = s.lastErr
	}
	return st
}

func (s *Supervisor) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	delay := s.backoff.Min
	for {
		started := time.Now()
		err := s.a.Run(ctx, s.in)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("the link closed")
		}
		s.mu.Lock()
		s.restarts++
		s.lastErr = err.Error()
		s.mu.Unlock()
		if errors.Is(err, ErrConfig) {
			// Restarting cannot help: a crash loop against the platform
			// (a refused token) only earns a ban. Said once, loudly.
			s.log.Error("channel cannot start: fix its config, then restart the gateway", "err", err)
			s.mu.Lock()
			s.parked = true
			s.mu.Unlock()
			s.notify()
			return
		}
		if errors.Is(err, ErrLoggedOut) {
			if s.a.Status().State == StateNotLinked {
				s.log.Info("channel not linked yet; run `openclaw channels login " + s.a.Channel() + "`")
			} else {
				s.log.Error("channel logged out; run `openclaw channels login "+s.a.Channel()+"` to link it again", "err", err)
			}
			s.mu.Lock()
			s.parked = true
			s.mu.Unlock()
			s.notify()
			return
		}
		up := time.Since(started)
		if up >= s.backoff.Max {
			delay = s.backoff.Min
		}
		s.log.Warn("channel link failed; restarting", "err", err, "in", delay)
		// Only a link that was up dies: a link failing from the start
		// (a wrong host, a missing binary) is in the log and in `channels
		// list`, not worth a message to the owner on every restart.
		if up >= LinkUpTime {
			s.notify()
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(delay*2, s.backoff.Max)
	}
}

func (s *Supervisor) notify() {
	if s.onState != nil {
		s.onState(s.Status())
	}
}
