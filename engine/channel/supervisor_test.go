package channel_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/channel"
	"github.com/openclaw-edge/edge/engine/channel/channeltest"
)

// scripted is an adapter whose runs return the scripted errors in turn,
// then block until stopped.
type scripted struct {
	mu    sync.Mutex
	runs  []error
	n     int
	hold  time.Duration
	state channel.State
}

func (s *scripted) Channel() string { return "test" }
func (s *scripted) Account() string { return "default" }
func (s *scripted) Run(ctx context.Context, in channel.Inbox) error {
	s.mu.Lock()
	i := s.n
	s.n++
	s.mu.Unlock()
	if i < len(s.runs) {
		select {
		case <-time.After(s.hold):
		case <-ctx.Done():
			return nil
		}
		return s.runs[i]
	}
	<-ctx.Done()
	return nil
}
func (s *scripted) Send(context.Context, channel.Outbound) (channel.Receipt, error) {
	return channel.Receipt{}, nil
}
func (s *scripted) Status() channel.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return channel.Status{State: s.state}
}
func (s *scripted) runsSoFar() int { s.mu.Lock(); defer s.mu.Unlock(); return s.n }

func TestSupervisorRestartsWithBackoff(t *testing.T) {
	a := &scripted{runs: []error{errors.New("boom"), errors.New("boom again")}, state: channel.StateError}
	var mu sync.Mutex
	var notes []channel.Status
	s := channel.NewSupervisor(a, channeltest.NewInbox(), channel.SupervisorConfig{
		Backoff: channel.Backoff{Min: time.Millisecond, Max: 10 * time.Millisecond},
		OnState: func(st channel.Status) { mu.Lock(); notes = append(notes, st); mu.Unlock() },
	})
	s.Start(context.Background())
	for deadline := time.Now().Add(5 * time.Second); a.runsSoFar() < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not restarted")
		}
	}
	st := s.Status()
	if st.Restarts != 2 || st.Reason != "boom again" || st.Channel != "test" {
		t.Fatalf("status %+v", st)
	}
	s.Stop()
	if got := s.Status().State; got != channel.StateStopped {
		t.Fatalf("after Stop: %s", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notes) != 0 {
		t.Fatalf("links that never came up reported as dead: %+v", notes)
	}
}

func TestSupervisorReportsADeadLink(t *testing.T) {
	old := channel.LinkUpTime
	channel.LinkUpTime = 10 * time.Millisecond
	t.Cleanup(func() { channel.LinkUpTime = old })
	a := &scripted{runs: []error{errors.New("link died")}, hold: 20 * time.Millisecond, state: channel.StateError}
	got := make(chan channel.Status, 4)
	s := channel.NewSupervisor(a, channeltest.NewInbox(), channel.SupervisorConfig{
		Backoff: channel.Backoff{Min: time.Millisecond, Max: 10 * time.Millisecond},
		OnState: func(st channel.Status) { got <- st },
	})
	s.Start(context.Background())
	defer s.Stop()
	select {
	case st := <-got:
		if st.Reason != "link died" {
			t.Fatalf("%+v", st)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a link that was up and died was not reported")
	}
}

func TestSupervisorParksOnLogout(t *testing.T) {
	a := &scripted{runs: []error{errors.Join(channel.ErrLoggedOut, errors.New("device removed"))}, state: channel.StateLoggedOut}
	got := make(chan channel.Status, 4)
	s := channel.NewSupervisor(a, channeltest.NewInbox(), channel.SupervisorConfig{
		Backoff: channel.Backoff{Min: time.Millisecond, Max: time.Millisecond},
		OnState: func(st channel.Status) { got <- st },
	})
	s.Start(context.Background())
	select {
	case st := <-got:
		if st.State != channel.StateLoggedOut {
			t.Fatalf("%+v", st)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no logout report")
	}
	time.Sleep(20 * time.Millisecond)
	if n := a.runsSoFar(); n != 1 {
		t.Fatalf("restarted after a logout: %d runs", n)
	}
	// A login restarts it.
	s.Restart(context.Background())
	for deadline := time.Now().Add(5 * time.Second); a.runsSoFar() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Restart did not run it")
		}
	}
	s.Stop()
}

func TestPermanent(t *testing.T) {
	base := errors.New("unknown recipient")
	err := channel.Permanent(base)
	if !errors.Is(err, channel.ErrPermanent) || !errors.Is(err, base) || err.Error() != "unknown recipient" {
		t.Fatalf("%v", err)
	}
	if channel.Permanent(nil) != nil {
		t.Fatal("Permanent(nil)")
	}
}
